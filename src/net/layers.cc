#include "net/layers.h"

#include <cerrno>

namespace coldstart::net {

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
