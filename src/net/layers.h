// doctor net's vocabulary: the layers between a process and what it must reach, checked inside out, and what each
// check found (Layer, Status and Check are the report's data: model/net.h), and the layer a failed connect points at.
#pragma once
#include "model/net.h"

namespace coldstart::net {

// The layer a failed connect() points at, from its errno alone (the caller refines it with what else it knows):
// ENETUNREACH -> route, EHOSTUNREACH -> next_hop (no ARP answer; or a reject from beyond), ETIMEDOUT -> forward
// (dropped beyond the first hop), ECONNREFUSED -> transport (nothing listening), EPERM/EACCES -> context.
Layer layer_of_connect_error(int err);

}  // namespace coldstart::net
