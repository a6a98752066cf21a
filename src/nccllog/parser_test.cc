#include "nccllog/parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "nccllog/render.h"
#include "util/error.h"
#include "util/json.h"

namespace coldstart::nccllog {
namespace {
const std::string kFixtures = std::string(COLDSTART_SOURCE_DIR) + "/tests/data/nccl-2.28.9-h200x2/";

LogSummary parse(std::string_view text) {
  Parser p("test.log");
  p.feed(text);
  return p.take();
}
}  // namespace

TEST(NcclLogFixtures, IsolatedRanksAreMaskedAndConnectLazilyOverCumem) {
  LogSummary s =
      parse_files({kFixtures + "isolated-cumem-default.pid708.log", kFixtures + "isolated-cumem-default.pid709.log"});
  ASSERT_EQ(s.processes.size(), 2u);
  EXPECT_EQ(s.problem_count, 0u);
  const Process& p0 = s.processes[0];
  const Process& p1 = s.processes[1];
  EXPECT_EQ(p0.pid, 708);
  EXPECT_EQ(p0.host, "vm");
  EXPECT_EQ(p0.nccl_version, "2.28.9+cuda13.0");
  EXPECT_EQ(p0.cuda_driver, 13000);
  ASSERT_EQ(p1.comms.size(), 1u);
  const Comm& c = p1.comms[0];
  EXPECT_EQ(c.id, "0x5646b6b33420");
  EXPECT_EQ(c.init_fn, "ncclCommInitRank");
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.nranks, 2);
  EXPECT_EQ(c.cuda_dev, 0);
  EXPECT_EQ(c.nvml_dev, 1);
  EXPECT_TRUE(c.renumbered());
  EXPECT_FALSE(p0.comms[0].renumbered());
  EXPECT_EQ(c.bus_id, "70");
  EXPECT_EQ(c.comm_id, "0xba2b8575b8bb8c78");
  EXPECT_TRUE(c.init_complete);
  EXPECT_TRUE(c.destroyed);
  EXPECT_DOUBLE_EQ(c.init_timings.parts.at("total"), 0.29);
  EXPECT_DOUBLE_EQ(c.init_timings.parts.at("kernels"), 0.23);
  EXPECT_DOUBLE_EQ(c.init_timings.parts.at("alloc"), 0.03);
  EXPECT_EQ(c.init_timings.fn, "ncclCommInitRank");
  EXPECT_DOUBLE_EQ(c.bootstrap_timings.at("total"), 0.005923);
  EXPECT_DOUBLE_EQ(c.bootstrap_timings.at("recv"), 0.005476);
  EXPECT_EQ(c.coll_channels, 24);
  EXPECT_EQ(c.p2p_channels_per_peer, 32);
  EXPECT_EQ(c.init_count(), 0);
  EXPECT_EQ(c.lazy_connection_count(), 24);
  EXPECT_EQ(c.lazy_connections.at("P2P/CUMEM"), 24);
  EXPECT_TRUE(c.rings_connected);
}

TEST(NcclLogFixtures, SharedRanksAreNotMasked) {
  LogSummary s =
      parse_files({kFixtures + "shared-cumem-default.pid647.log", kFixtures + "shared-cumem-default.pid649.log"});
  ASSERT_EQ(s.processes.size(), 2u);
  for (const auto& p : s.processes) {
    ASSERT_EQ(p.comms.size(), 1u);
    EXPECT_FALSE(p.comms[0].renumbered());
    EXPECT_EQ(p.comms[0].lazy_connection_count(), 24);
  }
  EXPECT_EQ(s.processes[1].comms[0].cuda_dev, 1);
}

TEST(NcclLogFixtures, ChunkBoundariesDoNotChangeTheResult) {
  std::string text;
  {
    LogSummary whole = parse_files({kFixtures + "isolated-cumem-default.pid709.log"});
    FILE* f = std::fopen((kFixtures + "isolated-cumem-default.pid709.log").c_str(), "rb");
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
    for (size_t chunk : {1u, 7u, 100u, 65536u}) {
      Parser p;
      for (size_t i = 0; i < text.size(); i += chunk) p.feed(std::string_view(text).substr(i, chunk));
      LogSummary s = p.take();
      EXPECT_EQ(to_json(s)["processes"], to_json(whole)["processes"]) << "chunk " << chunk;
    }
  }
}

TEST(NcclLog, TheOlderInitTimingsFormAndSplitInit) {
  LogSummary s = parse(
      "h:1:1 [0] NCCL INFO NCCL version 2.22.3+cuda12.6\n"
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 4 cudaDev 0 nvmlDev 2 busId 1b000 commId 0x77 - "
      "Init START\n"
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 4 cudaDev 0 nvmlDev 2 busId 1b000 commId 0x77 - "
      "Init COMPLETE\n"
      "h:1:1 [0] NCCL INFO Init timings: rank 0 nranks 4 total 1.50 (kernels 0.90, bootstrap 0.20, allgathers 0.01, "
      "topo 0.10, graphs 0.01, connections 0.25, rest 0.03)\n"
      "h:1:1 [0] NCCL INFO ncclCommSplit comm 0xb rank 0 nranks 2 cudaDev 0 nvmlDev 2 busId 1b000 parent 0xa "
      "splitCount 1 color 0 key 0 - Init START\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[2] -> 1[3] via P2P/IPC/read\n"
      "h:1:1 [0] NCCL INFO ncclCommSplit comm 0xb rank 0 nranks 2 cudaDev 0 nvmlDev 2 busId 1b000 parent 0xa "
      "splitCount 1 color 0 key 0 - Init COMPLETE\n"
      "h:1:1 [0] NCCL INFO Init timings - ncclCommSplit: rank 0 nranks 2 total 0.40 (kernels 0.00, alloc 0.01, "
      "bootstrap 0.02, allgathers 0.00, topo 0.10, graphs 0.01, connections 0.25, rest 0.01)\n");
  ASSERT_EQ(s.processes.size(), 1u);
  const Process& p = s.processes[0];
  ASSERT_EQ(p.comms.size(), 2u);
  EXPECT_EQ(p.comms[0].init_timings.fn, "");
  EXPECT_DOUBLE_EQ(p.comms[0].init_timings.parts.at("total"), 1.5);
  EXPECT_EQ(p.comms[0].init_timings.parts.count("alloc"), 0u);
  EXPECT_EQ(p.comms[1].init_fn, "ncclCommSplit");
  EXPECT_EQ(p.comms[1].init_timings.fn, "ncclCommSplit");
  EXPECT_DOUBLE_EQ(p.comms[1].init_timings.parts.at("connections"), 0.25);
  EXPECT_EQ(p.comms[1].init_connections.at("P2P/IPC/read"), 1);
  EXPECT_TRUE(p.comms[1].renumbered());
  EXPECT_EQ(s.problem_count, 0u);
}

TEST(NcclLog, TimestampsRankPrefixAndCrlf) {
  LogSummary s = parse(
      "[2026-11-29 17:45:40.100000] h:7:7 [0] NCCL INFO ncclCommInitRank comm 0xc rank 1 nranks 2 cudaDev 0 nvmlDev 1 "
      "busId 70 commId 0x1 - Init START\r\n"
      "[2026-11-29 17:45:40.500000] h:7:7 [0] [Rank 1] NCCL INFO ncclCommInitRank comm 0xc rank 1 nranks 2 cudaDev 0 "
      "nvmlDev 1 busId 70 commId 0x1 - Init COMPLETE\r\n"
      "[2026-11-29 17:45:41.000000] h:7:7 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/CE\r\n"
      "[2026-11-29 17:45:41.150000] h:7:7 [0] NCCL INFO [Rank 1] Channel 01/0 : 1[1] -> 0[0] via P2P/CUMEM/CE\r\n");
  ASSERT_EQ(s.processes.size(), 1u);
  const Comm& c = s.processes[0].comms.at(0);
  EXPECT_TRUE(s.processes[0].timestamps);
  ASSERT_TRUE(c.t_init_start && c.t_init_complete && c.t_first_lazy && c.t_last_lazy);
  EXPECT_NEAR(*c.t_init_complete - *c.t_init_start, 0.4, 1e-6);
  EXPECT_NEAR(*c.t_last_lazy - *c.t_first_lazy, 0.15, 1e-6);
  EXPECT_EQ(c.lazy_connections.at("P2P/CUMEM/CE"), 2);
  size_t used = 0;
  EXPECT_FALSE(parse_timestamp("[0] NCCL INFO", &used));
  EXPECT_NEAR(*parse_timestamp("[1970-01-02 00:00:01] x", &used), 86401, 1e-9);
  EXPECT_EQ(used, 22u);
}

TEST(NcclLog, WarningsKeepWhereAndLine) {
  LogSummary s = parse(
      "h:9:9 [0] NCCL INFO cudaDriverVersion 12080\n"
      "\n"
      "h:9:10 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'invalid argument'\n");
  ASSERT_EQ(s.processes.size(), 1u);
  ASSERT_EQ(s.processes[0].warnings.size(), 1u);
  EXPECT_EQ(s.processes[0].warnings[0].line, 3u);
  EXPECT_EQ(s.processes[0].warnings[0].where, "transport/p2p.cc:275");
  EXPECT_EQ(s.processes[0].warnings[0].message, "Cuda failure 'invalid argument'");
}

TEST(NcclLog, LazyConnectionsFollowTheCommunicatorTheThreadLastNamed) {
  LogSummary s = parse(
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0x1 - Init "
      "COMPLETE\n"
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xb rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0x2 - Init "
      "COMPLETE\n"
      "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0xa "
      "[nranks=2] stream 0x0\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
      "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0xb "
      "[nranks=2] stream 0x0\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
      "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM\n");
  const Process& p = s.processes.at(0);
  EXPECT_EQ(p.comms.at(0).lazy_connection_count(), 1);
  EXPECT_EQ(p.comms.at(1).lazy_connection_count(), 2);
}

TEST(NcclLog, MalformedKnownLinesAreProblemsWithLineNumbersAndUnknownLinesAreSkipped) {
  LogSummary s = parse(
      "random text\n"
      "h:1:1 [0] NCCL INFO something NCCL says that we do not know\n"
      "h:1:1 [0] NCCL INFO Init timings - ncclCommInitRank: rank x nranks 2 total 0.29 (kernels 0.23)\n"
      "h:1:1 [0] NCCL INFO Bootstrap timings total zero (create 1)\n"
      "h:1:1 [0] NCCL INFO 24 coll channels, x collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per "
      "peer\n"
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa nranks 2 - Init START\n"
      "h:1:1 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 2 total 0.29 (kernels 0.23, alloc");
  ASSERT_EQ(s.problem_count, 5u);
  EXPECT_EQ(s.problems[0].line, 3u);
  EXPECT_EQ(s.problems[0].file, "test.log");
  EXPECT_EQ(s.problems[3].line, 6u);
  EXPECT_EQ(s.problems[4].line, 7u);  // the truncated last line
  EXPECT_EQ(s.lines, 7u);
}

TEST(NcclLog, BoundedMemoryForWarningsAndProblems) {
  std::string text;
  for (int i = 0; i < 1000; ++i)
    text += "h:1:1 [0] x.cc:1 NCCL WARN boom\nh:1:1 [0] NCCL INFO Bootstrap timings total x\n";
  LogSummary s = parse(text);
  EXPECT_EQ(s.processes[0].warning_count, 1000u);
  EXPECT_EQ(s.processes[0].warnings.size(), kMaxWarnings);
  EXPECT_EQ(s.problem_count, 1000u);
  EXPECT_EQ(s.problems.size(), kMaxProblems);
}

TEST(NcclLog, UnreadableFileIsAnInputErrorNamingIt) {
  try {
    parse_files({"/nonexistent/nccl.log"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/nccl.log: cannot read", 0), 0u);
  }
}

TEST(NcclLogRender, TableNamesMaskedRanksAndLazyConnections) {
  LogSummary s = parse_files({kFixtures + "isolated-cumem-default.pid709.log"});
  std::string t = render_table(s);
  EXPECT_NE(t.find("cudaDev != nvmlDev"), std::string::npos);
  EXPECT_NE(t.find("P2P/CUMEM 24"), std::string::npos);
  EXPECT_NE(t.find("init.kernels 230"), std::string::npos) << t;
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["schema"], "coldstart.nccllog/2");
  EXPECT_EQ(j["processes"][0]["comms"][0]["renumbered"], true);
  EXPECT_EQ(j["processes"][0]["comms"][0]["transports"]["lazy"]["P2P/CUMEM"], 24);
  EXPECT_NE(render_table(parse("nothing\n")).find("no NCCL log lines"), std::string::npos);
}

}  // namespace coldstart::nccllog

namespace coldstart::nccllog {

// Found by the fuzzer: a log line with bytes that are not UTF-8 made saving the JSON throw.
TEST(NcclLog, BytesThatAreNotUtf8AreKeptAndReplacedInJson) {
  LogSummary s = parse("h\xff:1:1 [0] x.cc:1 NCCL WARN bad \xfe\xff bytes\n");
  ASSERT_EQ(s.processes.size(), 1u);
  std::string text = dump_json(to_json(s));
  EXPECT_NE(text.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

}  // namespace coldstart::nccllog

namespace coldstart::nccllog {

TEST(NcclLogFixtures, TimestampedLogsOfNccl2283) {
  const std::string dir = std::string(COLDSTART_SOURCE_DIR) + "/tests/data/nccl-2.28.3-h200x2-timestamps/";
  LogSummary s = parse_files({dir + "isolated-cumem-light.rank0.log", dir + "isolated-cumem-light.rank1.log"});
  ASSERT_EQ(s.processes.size(), 2u);
  EXPECT_EQ(s.problem_count, 0u);
  const Process& p1 = s.processes[1];
  EXPECT_TRUE(p1.timestamps);
  EXPECT_EQ(p1.nccl_version, "2.28.3+cuda13.0");
  const Comm& c = p1.comms.at(0);
  EXPECT_EQ(c.init_fn, "ncclCommInitRankConfig");
  EXPECT_TRUE(c.renumbered());
  ASSERT_TRUE(c.t_init_start && c.t_init_complete && c.t_first_lazy);
  EXPECT_NEAR(*c.t_init_complete - *c.t_init_start, 0.114689, 1e-6);  // 17.497300 -> 17.611989
  EXPECT_GT(*c.t_first_lazy, *c.t_init_complete);
  EXPECT_EQ(c.lazy_connection_count(), 24);
}

TEST(Parser, AnEndlessLineIsCutAndReadOnInBoundedMemory) {
  Parser p("huge.log");
  std::string zeros(1 << 20, '\0');
  for (int i = 0; i < 8; ++i) p.feed(zeros);  // 8 MiB, no newline
  p.feed("\n[2026-11-29 17:45:40.123456] vm:708:708 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n");
  p.finish();
  LogSummary s = p.take();
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_EQ(s.problems[0].line, 1u);
  EXPECT_NE(s.problems[0].what.find("longer than 65536 bytes"), std::string::npos);
  EXPECT_EQ(s.lines, 2u);  // the line after it is read as usual
}

}  // namespace coldstart::nccllog
