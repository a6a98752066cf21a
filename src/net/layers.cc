#include "net/layers.h"

#include <cerrno>

namespace coldstart::net {

std::string_view name(Layer l) {
  switch (l) {
    case Layer::context: return "context";
    case Layer::platform: return "platform";
    case Layer::resolve: return "resolve";
    case Layer::route: return "route";
    case Layer::next_hop: return "next_hop";
    case Layer::forward: return "forward";
    case Layer::proxy: return "proxy";
    case Layer::transport: return "transport";
    case Layer::service: return "service";
  }
  return "?";
}

std::string_view name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::warn: return "warn";
    case Status::broken: return "broken";
    case Status::not_checked: return "not_checked";
    case Status::skipped: return "skipped";
  }
  return "?";
}

std::optional<Layer> parse_layer(std::string_view s) {
  for (Layer l : kLayers)
    if (name(l) == s) return l;
  return std::nullopt;
}

std::optional<Status> parse_status(std::string_view s) {
  for (Status st : {Status::ok, Status::warn, Status::broken, Status::not_checked, Status::skipped})
    if (name(st) == s) return st;
  return std::nullopt;
}

Layer layer_of_connect_error(int err) {
  switch (err) {
    case ENETUNREACH: return Layer::route;
    case EHOSTUNREACH: return Layer::next_hop;
    case ETIMEDOUT: return Layer::forward;
    case EPERM:
    case EACCES: return Layer::context;
    default: return Layer::transport;
  }
}

}  // namespace coldstart::net
