// What doctor net checks a path to: a URL (https://, wss://, http://, ws://, grpc://), a HOST:PORT, or, when none is
// given, what the environment names: MASTER_ADDR:MASTER_PORT (torchrun's TCPStore), RAY_ADDRESS (Ray's GCS) and
// each proxy variable's endpoint.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/net.h"

namespace coldstart::net {

using GetEnv = std::function<const char*(const char*)>;

// Throws InputError naming `text` (as util/strings.h's shown() writes it, a URL's password hidden) and the forms
// accepted: an unknown scheme, a missing or bad port (digits only, 1 to 65535), an empty or malformed host (a name of
// letters, digits, '.', '-', '_' of at most 253 bytes; in brackets an IPv6 address inet_pton takes, without a zone
// id), unbalanced brackets, spaces or control characters, a target over 4096 bytes. Every check is a loop over the
// text: no regex, no recursion, whatever its length.
Target parse_target(std::string_view text, std::string origin = "argument");

// The targets the environment names, in this order: MASTER_ADDR:MASTER_PORT (MASTER_PORT 29500 when unset),
// RAY_ADDRESS (ray://HOST:PORT, HOST:PORT, or HOST with the GCS port 6379; "auto" and "local" name none), each proxy
// variable's endpoint (once per endpoint). A malformed value throws InputError naming the variable.
// MASTER_ADDR and MASTER_PORT are checked apart (a port in MASTER_ADDR, a MASTER_PORT that is no port), each named.
std::vector<Target> env_targets(const GetEnv& env);

// The environment variables doctor net reads: the targets' (MASTER_ADDR, MASTER_PORT, RAY_ADDRESS), the proxy
// variables, NCCL's and Gloo's interface settings; with `peers`, also the launchers' (RANK, SLURM_PROCID, ...) and
// COLDSTART_COORD_PORT / COLDSTART_TOKEN.
std::vector<std::string_view> env_variables_read(bool peers);
// Throws InputError for the first of those variables whose value holds a control character (a newline, ESC, DEL, a
// C1 control): one line naming the variable, its value as shown() writes it (a URL's password hidden, a token not
// shown at all) and what to set it to. A value that would break a message or a report into lines is bad input.
void check_environment(const GetEnv& env, bool peers = false);

}  // namespace coldstart::net
