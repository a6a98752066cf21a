#include "micro/uds.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

namespace coldstart::micro {
namespace {

socklen_t make_address(const std::string& name, sockaddr_un* address) {
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  size_t n = std::min(name.size(), sizeof address->sun_path - 2);
  std::memcpy(address->sun_path + 1, name.data(), n);  // sun_path[0] = 0: the abstract namespace
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

std::string abstract_name(int launcher_pid, const std::string& tag) {
  return "coldstart-micro-" + std::to_string(launcher_pid) + "-" + tag;
}

int uds_listen(const std::string& name, std::string* error) {
  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_un address;
  socklen_t length = make_address(name, &address);
  if (bind(sock, reinterpret_cast<sockaddr*>(&address), length) != 0 || listen(sock, 64) != 0) {
    *error = "listening on @" + name + ": " + std::strerror(errno);
    close(sock);
    return -1;
  }
  return sock;
}

int uds_connect(const std::string& name, int timeout_ms, std::string* error) {
  sockaddr_un address;
  socklen_t length = make_address(name, &address);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
      *error = std::string("socket: ") + std::strerror(errno);
      return -1;
    }
    if (connect(sock, reinterpret_cast<sockaddr*>(&address), length) == 0) return sock;
    int saved = errno;
    close(sock);
    if ((saved != ECONNREFUSED && saved != ENOENT && saved != EAGAIN) || std::chrono::steady_clock::now() >= deadline) {
      *error = "connecting to @" + name + ": " + std::strerror(saved);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool send_all(int sock, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = send(sock, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool recv_all(int sock, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = recv(sock, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

namespace {
// One message of `size` bytes at `data` with room for one file descriptor beside it (SCM_RIGHTS).
struct FdMessage {
  FdMessage(void* data, size_t size) : io{data, size} {
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
  iovec io;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
};
}  // namespace

bool send_with_fd(int sock, const void* data, size_t size, int fd) {
  if (fd < 0) return send_all(sock, data, size);
  FdMessage m(const_cast<void*>(data), size);
  msghdr& message = m.message;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  ssize_t n;
  do n = sendmsg(sock, &message, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  return send_all(sock, static_cast<const char*>(data) + n, size - static_cast<size_t>(n));
}

bool recv_with_fd(int sock, void* data, size_t size, int* fd) {
  *fd = -1;
  FdMessage m(data, size);
  msghdr& message = m.message;
  ssize_t n;
  do n = recvmsg(sock, &message, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header))
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS)
      std::memcpy(fd, CMSG_DATA(header), sizeof(int));
  return recv_all(sock, static_cast<char*>(data) + n, size - static_cast<size_t>(n));
}

bool send_message(int sock, char type, const std::string& payload) {
  std::string frame(5 + payload.size(), '\0');
  frame[0] = type;
  uint32_t length = static_cast<uint32_t>(payload.size());
  std::memcpy(&frame[1], &length, 4);
  std::memcpy(frame.data() + 5, payload.data(), payload.size());
  return send_all(sock, frame.data(), frame.size());
}

bool recv_message(int sock, char* type, std::string* payload) {
  char header[5];
  if (!recv_all(sock, header, 5)) return false;
  *type = header[0];
  uint32_t length;
  std::memcpy(&length, header + 1, 4);
  if (length > (64u << 20)) return false;
  payload->assign(length, '\0');
  return length == 0 || recv_all(sock, payload->data(), length);
}

}  // namespace coldstart::micro
