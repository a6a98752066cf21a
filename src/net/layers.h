// doctor net's vocabulary: the layers between a process and what it must reach, checked inside out, and what each
// check found. One name per layer, the same in code, in JSON (schema coldstart.net/1), in the text report and in
// docs/doctor-net.md.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coldstart::net {

// Inside out: what the process may do, what it runs on, the name, the route, the first hop, what lies beyond it,
// the proxy a client would use, the connection, and the service answering on it.
enum class Layer { context, platform, resolve, route, next_hop, forward, proxy, transport, service };
inline constexpr Layer kLayers[] = {Layer::context, Layer::platform, Layer::resolve,   Layer::route,  Layer::next_hop,
                                    Layer::forward, Layer::proxy,    Layer::transport, Layer::service};

// ok: checked and fine; warn: works here but is a known trap; broken: this layer stops the connection;
// not_checked: could not be checked (needs root, a tool missing, an earlier layer broken), with why; skipped: does
// not apply to this target (no proxy in its way, no TLS).
enum class Status { ok, warn, broken, not_checked, skipped };

std::string_view name(Layer l);   // "context", "platform", "resolve", "route", "next_hop", "forward", "proxy", ...
std::string_view name(Status s);  // "ok", "warn", "broken", "not_checked", "skipped"
std::optional<Layer> parse_layer(std::string_view s);
std::optional<Status> parse_status(std::string_view s);

// What one layer's check found, for one target (or for the process, for context and platform).
struct Check {
  Layer layer = Layer::context;
  Status status = Status::not_checked;
  std::string summary;                // one line: what was found
  std::vector<std::string> evidence;  // what shows it: addresses, errno, a neighbour entry, a variable
  std::string fix;                    // for warn and broken: what to do, with its cost where it has one
};

// The layer a failed connect() points at, from its errno alone (the caller refines it with what else it knows):
// ENETUNREACH -> route, EHOSTUNREACH -> next_hop (no ARP answer; or a reject from beyond), ETIMEDOUT -> forward
// (dropped beyond the first hop), ECONNREFUSED -> transport (nothing listening), EPERM/EACCES -> context.
Layer layer_of_connect_error(int err);

}  // namespace coldstart::net
