// A rank's side of the coordinator: blocking calls with timeouts. Every failure throws RuntimeError with what the
// coordinator said, or what broke.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "coord/wire.h"

namespace coldstart::coord {

struct Hello {
  std::string token;
  int64_t trial = 0;
  int rank = 0;
  int nranks = 0;
};

class Client {
 public:
  Client() = default;
  ~Client();
  Client(Client&& o) noexcept;
  Client& operator=(Client&& o) noexcept;

  // Connects to host:port and says hello; waits for the welcome.
  void connect(const std::string& host, uint16_t port, const Hello& hello, int timeout_ms);
  bool connected() const { return fd_ >= 0; }

  void send(const nlohmann::json& msg);
  void send_text(std::string_view json_text);  // an object already written as JSON text
  nlohmann::json recv(int timeout_ms);         // next message; throws on timeout, EOF or an error message

  void put(const std::string& key, const std::string& value);
  std::string get(const std::string& key, int timeout_ms);
  void barrier(const std::string& name, int timeout_ms);

 private:
  int fd_ = -1;
  FrameReader reader_;
};

}  // namespace coldstart::coord
