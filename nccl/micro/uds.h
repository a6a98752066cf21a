// Unix domain sockets in the abstract namespace (nothing on disk to clean up) and file descriptors passed over them
// with SCM_RIGHTS: what the rank programs in nccl/ use to talk to each other and to their launcher.
#pragma once
#include <cstddef>
#include <string>

namespace coldstart::micro {

// A name unique to this launcher process and tag: "coldstart-micro-<pid>-<tag>".
std::string abstract_name(int launcher_pid, const std::string& tag);

// A listening socket bound to the abstract name, or -1 with *error set.
int uds_listen(const std::string& name, std::string* error);
// Connects to the abstract name, retrying for up to timeout_ms while nobody listens yet; -1 with *error set.
int uds_connect(const std::string& name, int timeout_ms, std::string* error);

bool send_all(int sock, const void* data, size_t size);
bool recv_all(int sock, void* data, size_t size);  // false on EOF or error
// Sends size bytes and, when fd >= 0, the descriptor with them.
bool send_with_fd(int sock, const void* data, size_t size, int fd);
// Receives exactly size bytes; *fd is the descriptor that came with them, or -1.
bool recv_with_fd(int sock, void* data, size_t size, int* fd);

// Framed messages: one type byte, a 32-bit length, the payload.
bool send_message(int sock, char type, const std::string& payload);
bool recv_message(int sock, char* type, std::string* payload);

}  // namespace coldstart::micro
