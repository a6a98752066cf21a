// doctor net --peers: every rank of a job started by a launcher (torchrun, Ray, Slurm, MPI: the same rank discovery
// as `coldstart worker`) listens on the interface NCCL would use and connects to every other rank; rank 0
// gathers the N×N matrix (ok / errno / time), the interface each side chose (NCCL's, and Gloo's beside it), and for
// each failing pair the first broken layer. A node that would route peers through a loopback address is caught before
// the job hangs in its first barrier; a proxy in the way of MASTER_ADDR, by the environment's targets, which
// `doctor net --peers` checks on every rank beside the matrix (diagnose).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "net/layers.h"
#include "net/probe.h"
#include "net/target.h"

namespace coldstart::net {

struct PeerOptions {
  double timeout_s = 2;  // per connect
  double wait_s = 60;    // for every rank to join
  GetEnv env;            // the launcher's variables (the process's environment when empty)
  // Listen and connect from this numeric address instead of NCCL's choice (--peers-address; the tests' loopback).
  std::string address;
  // The coordinator's HOST:PORT instead of the launcher's rank-0 host and the derived port (--coord).
  std::string coord;
  // Tests only: advertise this port instead of the one listened on (a closed port: the peers' connects are refused).
  int advertise_port = 0;
};

// Runs this rank's part; rank 0 returns the whole matrix, other ranks return their own row only. Throws InputError
// when no launcher's variables are present (naming the ones looked for), RuntimeError when the ranks cannot meet.
PeerMatrix run_peers(const PeerOptions& opts);

// A pair that is not probed, as its failing cell: a side without an address or a listening port, or a loopback
// address between different hosts (a connect there would reach the wrong host's loopback). nullopt: probe it.
std::optional<PeerCell> pair_precheck(const PeerEndpoint& from, const PeerEndpoint& to);
// When the ranks span hosts, endpoints that work on one host only get a `problem`: their caveat, or listening on a
// loopback address (NCCL there would hand its peers 127.0.0.1). On one host they stay as they are.
void note_cross_host_problems(std::vector<PeerEndpoint>& endpoints);
// A probe's outcome as a cell: the layer from its errno (layer_of_connect_error) and one line of why; an ICMP reject
// (administratively prohibited, port unreachable) is the sender's firewall: the peer's own (transport) when it came
// from `peer_address`, one on the way (forward) when not; SYN retransmissions that never left this host are its own
// rules.
PeerCell peer_cell(const Connect& c, const std::string& peer_address = "");
// A failure the errno puts at the first hop or beyond it, held against the route: toward an on-link peer there is no
// hop beyond, so it is the peer's ARP (next_hop) or a drop at the peer (transport).
void refine_on_link(PeerCell& cell, const std::string& peer_address);

}  // namespace coldstart::net
