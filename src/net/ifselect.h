// The interface NCCL's and Gloo's socket transports would pick in this process, by their own rules, from the
// interfaces present and NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME: syntax checked (Gloo takes no '^'), a name that
// matches no interface named (NCCL fails silently there), and the choice held against the route to MASTER_ADDR.
#pragma once
#include <string>
#include <vector>

#include "net/host.h"
#include "net/target.h"

namespace coldstart::net {

// NCCL: `interfaces` is its socket transport's list (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY, NCCL_COMM_ID; at most
// 16), whose first its bootstrap listens on; with NCCL_COMM_ID set the bootstrap takes the interface in that address's
// subnet instead (named in `rule`, `problem` when there is none). A numeric MASTER_ADDR whose route leaves by another
// interface is noted in `rule` (route_to, live).
IfChoice nccl_choice(const std::vector<Interface>& ifs, const GetEnv& env);
// Gloo as PyTorch creates its devices: GLOO_SOCKET_IFNAME's exact names (one device each), else the address the
// hostname resolves to, from host.hosts_file (a hostname not there is left to DNS at run time: no interface named).
IfChoice gloo_choice(const std::vector<Interface>& ifs, const GetEnv& env, const HostFacts& host);

}  // namespace coldstart::net
