// What doctor net checks a path to: a URL (https://, wss://, http://, ws://, grpc://), a HOST:PORT, or, when none is
// given, what the environment names: MASTER_ADDR:MASTER_PORT (torchrun's TCPStore), RAY_ADDRESS (Ray's GCS) and
// each proxy variable's endpoint.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace coldstart::net {

using GetEnv = std::function<const char*(const char*)>;

struct Target {
  std::string text;    // as given, or as derived from the environment ("10.0.0.1:29500")
  std::string origin;  // "argument", or the variable it came from: "MASTER_ADDR", "RAY_ADDRESS", "https_proxy", ...
  std::string scheme;  // "https", "wss", "http", "ws", "grpc"; "" for a plain HOST:PORT (raw TCP)
  std::string host;    // a name or a numeric address, IPv6 without brackets
  uint16_t port = 0;   // given, or the scheme's default (443, 80, 443 for wss, ...)
  std::string path;    // a URL's path and query ("/" when none); "" for HOST:PORT
  bool tls() const { return scheme == "https" || scheme == "wss"; }
  bool url() const { return !scheme.empty(); }
  // Rendezvous targets (MASTER_ADDR, RAY_ADDRESS): every rank must reach them, so a loopback answer is a fault.
  bool rendezvous() const { return origin == "MASTER_ADDR" || origin == "RAY_ADDRESS"; }
  std::string url_text() const;  // the target as a URL a client would be given ("http://host:port/" for HOST:PORT)
};

// Throws InputError naming `text` and the forms accepted: an unknown scheme, a missing or bad port, an empty host.
Target parse_target(std::string_view text, std::string origin = "argument");

// The targets the environment names, in this order: MASTER_ADDR:MASTER_PORT (MASTER_PORT 29500 when unset),
// RAY_ADDRESS (ray://HOST:PORT, HOST:PORT, or HOST with the GCS port 6379; "auto" and "local" name none), each proxy
// variable's endpoint (once per endpoint). A malformed value throws InputError naming the variable.
std::vector<Target> env_targets(const GetEnv& env);

}  // namespace coldstart::net
