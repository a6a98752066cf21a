#include "micro/cumem_rank.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "micro/cu_driver.h"
#include "micro/launch.h"
#include "micro/uds.h"

namespace coldstart::micro {

std::vector<int> ring_sources(int rank, int world, bool both) {
  std::vector<int> sources{(rank + 1) % world};
  if (both) sources.push_back((rank + world - 1) % world);
  return sources;
}

uint8_t verify_byte(int importer, int index) { return static_cast<uint8_t>(1 + (importer * 31 + index) % 255); }

namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct CallStat {
  int count = 0;
  double total_ms = 0, max_ms = 0;
  void add(double ms) {
    ++count;
    total_ms += ms;
    max_ms = std::max(max_ms, ms);
  }
};
using CallStats = std::map<std::string, CallStat>;  // keyed by driver call (or "request": one fd round trip)

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Block {  // one allocation, as its owner or an importer maps it
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr ptr = 0;
  size_t size = 0;
  int fd = -1;  // export-at-alloc: the cached export
};

struct Request {
  uint32_t set, index;
};
struct Reply {
  int32_t status;  // a CUresult
  uint32_t pad;
  uint64_t size;
};

class Rank {
 public:
  explicit Rank(const CumemRankConfig& config) : c_(config), link_(config.rank) {}
  int run();

 private:
  void check(CUresult result, const char* call) {
    if (result != CUDA_SUCCESS) throw CudaError(cu_error(cu_, result, call));
  }
  template <class F>
  CUresult timed(CallStats& stats, const char* name, F f) {
    auto t0 = Clock::now();
    CUresult r = f();
    stats[name].add(ms_since(t0));
    return r;
  }
#define COLDSTART_CU_TIMED(stats, fn, ...) check(timed(stats, #fn, [&] { return cu_.fn(__VA_ARGS__); }), #fn)
  void open_device();
  void allocate();
  void map_block(Block& block, CallStats& stats, const char* prefix);
  void serve();
  void connect_sources();
  void write_and_check();
  void cleanup();
  size_t blocks_per_set() const { return c_.mode == "merged" ? 1 : static_cast<size_t>(c_.buffers); }
  size_t block_size() const { return c_.mode == "merged" ? c_.size * c_.buffers : c_.size; }
  int sets() const { return c_.both ? 2 : 1; }
  std::string socket_name(int rank) const { return c_.tag + "-rank" + std::to_string(rank); }

  CumemRankConfig c_;
  RankLink link_;
  CuDriver cu_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  size_t granularity_ = 0;
  std::vector<Block> own_;                    // set-major: set * blocks_per_set() + index
  std::vector<std::vector<Block>> imported_;  // per source, in ring_sources order
  std::vector<int> peer_socks_;
  int listener_ = -1, wake_[2] = {-1, -1};
  std::thread service_;
  CallStats stats_, service_stats_;
  nlohmann::json result_;
};

void Rank::open_device() {
  std::string error;
  if (!load_cu_driver(&cu_, &error)) throw CudaError(error);
  CUresult init = cu_.cuInit(0);
  int count = 0;
  if (init == CUDA_ERROR_NO_DEVICE || (init == CUDA_SUCCESS && cu_.cuDeviceGetCount(&count) == CUDA_SUCCESS && !count))
    throw CudaError("no CUDA device");
  check(init, "cuInit");
  check(cu_.cuDeviceGet(&device_, 0), "cuDeviceGet");
  int vmm = 0, posix_fd = 0, driver = 0;
  check(cu_.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device_),
        "cuDeviceGetAttribute");
  check(cu_.cuDeviceGetAttribute(&posix_fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device_),
        "cuDeviceGetAttribute");
  if (!vmm || !posix_fd) throw CudaError("this GPU does not support cuMem with POSIX file descriptor handles");
  check(cu_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  check(cu_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  char name[256] = {}, bus[64] = {};
  check(cu_.cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
  check(cu_.cuDeviceGetPCIBusId(bus, sizeof bus, device_), "cuDeviceGetPCIBusId");
  check(cu_.cuDriverGetVersion(&driver), "cuDriverGetVersion");
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  result_["device"] = {{"name", name}, {"pci_bus_id", bus}, {"visible", visible ? visible : ""}};
  result_["driver_version"] = driver;
}

void Rank::map_block(Block& block, CallStats& stats, const char* prefix) {
  std::string reserve = std::string(prefix) + "cuMemAddressReserve", map = std::string(prefix) + "cuMemMap",
              access = std::string(prefix) + "cuMemSetAccess";
  check(timed(stats, reserve.c_str(),
              [&] { return cu_.cuMemAddressReserve(&block.ptr, block.size, granularity_, 0, 0); }),
        "cuMemAddressReserve");
  check(timed(stats, map.c_str(), [&] { return cu_.cuMemMap(block.ptr, block.size, 0, block.handle, 0); }), "cuMemMap");
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = device_;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(timed(stats, access.c_str(), [&] { return cu_.cuMemSetAccess(block.ptr, block.size, &desc, 1); }),
        "cuMemSetAccess");
}

void Rank::allocate() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  int gdr = 0;  // NCCL asks for GPUDirect RDMA capable memory where the device allows it: so does this
  check(cu_.cuDeviceGetAttribute(&gdr, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, device_),
        "cuDeviceGetAttribute");
  prop.allocFlags.gpuDirectRDMACapable = gdr ? 1 : 0;
  result_["gpu_direct_rdma_capable"] = gdr != 0;
  check(cu_.cuMemGetAllocationGranularity(&granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  if (c_.size % granularity_)
    throw CudaError("--size " + std::to_string(c_.size) + " is not a multiple of the allocation granularity " +
                    std::to_string(granularity_) + ": choose a multiple");
  auto t0 = Clock::now();
  own_.resize(sets() * blocks_per_set());
  for (auto& block : own_) {
    block.size = block_size();
    COLDSTART_CU_TIMED(stats_, cuMemCreate, &block.handle, block.size, &prop, 0);
    if (c_.mode == "export-at-alloc")
      check(timed(stats_, "export-at-alloc cuMemExportToShareableHandle",
                  [&] {
                    return cu_.cuMemExportToShareableHandle(&block.fd, block.handle,
                                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
                  }),
            "cuMemExportToShareableHandle");
    map_block(block, stats_, "local ");
    check(cu_.cuMemsetD8(block.ptr, 0, block.size), "cuMemsetD8");
  }
  check(cu_.cuCtxSynchronize(), "cuCtxSynchronize");
  result_["alloc_ms"] = ms_since(t0);
  result_["granularity"] = granularity_;
}

void Rank::serve() {
  if (cu_.cuCtxSetCurrent(context_) != CUDA_SUCCESS) return;
  std::vector<int> clients;
  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (int s : clients) fds.push_back({s, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) {
      int s = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (s >= 0) clients.push_back(s);
    }
    for (size_t k = 2; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Request request;
      if (!recv_all(fds[k].fd, &request, sizeof request)) {
        close(fds[k].fd);
        std::erase(clients, fds[k].fd);
        continue;
      }
      Reply reply{CUDA_ERROR_INVALID_VALUE, 0, 0};
      int fd = -1;
      size_t index = request.set * blocks_per_set() + request.index;
      if (request.set < static_cast<uint32_t>(sets()) && request.index < blocks_per_set()) {
        Block& block = own_[index];
        reply.size = block.size;
        if (c_.mode == "export-at-alloc") {
          fd = block.fd;
          reply.status = CUDA_SUCCESS;
        } else {
          reply.status = timed(service_stats_, "cuMemExportToShareableHandle", [&] {
            return cu_.cuMemExportToShareableHandle(&fd, block.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
          });
        }
      }
      send_with_fd(fds[k].fd, &reply, sizeof reply, reply.status == CUDA_SUCCESS ? fd : -1);
      if (c_.mode != "export-at-alloc" && fd >= 0) close(fd);
    }
  }
  for (int s : clients) close(s);
}

void Rank::connect_sources() {
  auto sources = ring_sources(c_.rank, c_.world, c_.both);
  auto t_socket = Clock::now();
  std::string error;
  for (int source : sources) {
    int s = uds_connect(abstract_name(0, socket_name(source)), 10000, &error);
    if (s < 0) throw CudaError("rank " + std::to_string(source) + "'s socket: " + error);
    peer_socks_.push_back(s);
  }
  result_["socket_connect_ms"] = ms_since(t_socket);
  link_.barrier();  // every rank starts its connect at once, as NCCL's ranks do in the first collective

  auto t0 = Clock::now();
  imported_.resize(sources.size());
  for (size_t p = 0; p < sources.size(); ++p) {
    // The source serves set 0 to the rank before it (whose next it is) and set 1 to the rank after it.
    uint32_t set = p == 0 ? 0 : 1;
    for (size_t index = 0; index < blocks_per_set(); ++index) {
      Request request{set, static_cast<uint32_t>(index)};
      Reply reply{};
      int fd = -1;
      auto t_request = Clock::now();
      if (!send_all(peer_socks_[p], &request, sizeof request) ||
          !recv_with_fd(peer_socks_[p], &reply, sizeof reply, &fd))
        throw CudaError("rank " + std::to_string(sources[p]) + " closed its socket");
      stats_["request"].add(ms_since(t_request));
      if (reply.status != CUDA_SUCCESS || fd < 0)
        throw CudaError("rank " + std::to_string(sources[p]) + " could not export buffer " + std::to_string(index) +
                        ": " + cu_error(cu_, static_cast<CUresult>(reply.status), "cuMemExportToShareableHandle"));
      Block block;
      block.size = reply.size;
      CUresult imported = timed(stats_, "cuMemImportFromShareableHandle", [&] {
        return cu_.cuMemImportFromShareableHandle(&block.handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      });
      close(fd);
      check(imported, "cuMemImportFromShareableHandle");
      map_block(block, stats_, "");
      imported_[p].push_back(block);
    }
  }
  result_["connect_ms"] = ms_since(t0);
  result_["sources"] = sources;
}

void Rank::write_and_check() {
  // Each importer writes its own bytes into every buffer it mapped; each owner reads its buffers back.
  uint64_t buffer = c_.size;
  for (auto& blocks : imported_)
    for (size_t k = 0; k < blocks.size(); ++k)
      for (uint64_t offset = 0; offset < blocks[k].size; offset += buffer) {
        int index = static_cast<int>(k + offset / buffer);
        check(cu_.cuMemsetD8(blocks[k].ptr + offset + c_.rank * kSlotBytes, verify_byte(c_.rank, index), kSlotBytes),
              "cuMemsetD8 (into a neighbour's buffer)");
      }
  check(cu_.cuCtxSynchronize(), "cuCtxSynchronize");
  link_.barrier();
  std::vector<uint8_t> host(c_.world * kSlotBytes);
  int checked = 0;
  for (int set = 0; set < sets(); ++set) {
    int importer = set == 0 ? (c_.rank + c_.world - 1) % c_.world : (c_.rank + 1) % c_.world;
    for (size_t k = 0; k < blocks_per_set(); ++k) {
      const Block& block = own_[set * blocks_per_set() + k];
      for (uint64_t offset = 0; offset < block.size; offset += buffer) {
        int index = static_cast<int>(k + offset / buffer);
        check(cu_.cuMemcpyDtoH(host.data(), block.ptr + offset, host.size()), "cuMemcpyDtoH");
        for (size_t i = 0; i < host.size(); ++i) {
          int slot = static_cast<int>(i / kSlotBytes);
          uint8_t want = slot == importer ? verify_byte(importer, index) : 0;
          if (host[i] != want)
            throw CudaError("verification failed: buffer " + std::to_string(index) + " of set " + std::to_string(set) +
                            ", byte " + std::to_string(i) + ": got " + std::to_string(host[i]) + ", expected " +
                            std::to_string(want) +
                            (slot == importer
                                 ? " (rank " + std::to_string(importer) + "'s write through its mapping did not arrive)"
                                 : " (a byte no rank should write)"));
        }
        ++checked;
      }
    }
  }
  result_["verified_buffers"] = checked;
}

void Rank::cleanup() {
  auto t0 = Clock::now();
  for (auto& blocks : imported_)
    for (auto& block : blocks) {
      COLDSTART_CU_TIMED(stats_, cuMemUnmap, block.ptr, block.size);
      COLDSTART_CU_TIMED(stats_, cuMemAddressFree, block.ptr, block.size);
      COLDSTART_CU_TIMED(stats_, cuMemRelease, block.handle);
    }
  for (auto& block : own_) {
    check(cu_.cuMemUnmap(block.ptr, block.size), "cuMemUnmap");
    check(cu_.cuMemAddressFree(block.ptr, block.size), "cuMemAddressFree");
    check(cu_.cuMemRelease(block.handle), "cuMemRelease");
    if (block.fd >= 0) close(block.fd);
  }
  for (int s : peer_socks_) close(s);
  result_["cleanup_ms"] = ms_since(t0);
}

int Rank::run() {
  std::string error;
  try {
    open_device();
    allocate();
    listener_ = uds_listen(abstract_name(0, socket_name(c_.rank)), &error);
    if (listener_ < 0 || pipe2(wake_, O_CLOEXEC) != 0) throw CudaError("service socket: " + error);
    service_ = std::thread([this] { serve(); });
    link_.barrier();  // every rank's buffers exist and its service thread listens
    connect_sources();
    check(cu_.cuCtxSynchronize(), "cuCtxSynchronize");
    link_.barrier();
    write_and_check();
    link_.barrier();  // no rank uses another's buffers any more
    (void)!write(wake_[1], "x", 1);
    service_.join();
    cleanup();
    cu_.cuDevicePrimaryCtxRelease(device_);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    std::fprintf(stderr, "cumem_share_bench rank %d/%d (%s, CUDA_VISIBLE_DEVICES=%s): %s\n", c_.rank, c_.world,
                 c_.mode.c_str(), std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "",
                 error.c_str());
    link_.fail(error);
    std::fflush(nullptr);
    _exit(error == "no CUDA device" ? 2 : 1);  // the service thread may still run: do not unwind it
  }
  for (const auto& [name, stat] : service_stats_) stats_[name] = stat;
  nlohmann::json calls = nlohmann::json::object();
  for (const auto& [name, stat] : stats_)
    calls[name] = {{"count", stat.count}, {"total_ms", stat.total_ms}, {"max_ms", stat.max_ms}};
  result_["rank"] = c_.rank;
  result_["calls"] = calls;
  link_.report(result_.dump());
  return 0;
}

}  // namespace

int run_cumem_rank(const CumemRankConfig& config) { return Rank(config).run(); }

}  // namespace coldstart::micro
