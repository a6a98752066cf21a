// doctor net's report as data (schema coldstart.net/1): the layers and what each check found, the facts about this
// process and its host, the proxy variables, the interfaces NCCL and Gloo would pick, the targets, the peer matrix,
// the verdict. Nothing here probes: src/net/ fills these, src/report/ renders them, and model/net_json.cc reads and
// writes them by the same field lists as the rest of the model. One name per layer and status, the same in code, in
// JSON, in the text report and in docs/doctor-net.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/vocab.h"

namespace coldstart::net {

inline constexpr const char* kNetSchema = "coldstart.net/1";
inline constexpr const char* kCompareSchema = "coldstart.net.compare/1";
// The most of a doctor net report read from one file (net/report.h's load_net_report): results.json's bound
// (kMaxResultsBytes), which report, reading either, held them both to; a peer matrix grows with the square of the
// ranks.
inline constexpr size_t kMaxNetReportBytes = size_t{512} << 20;

// Inside out: what the process may do, what it runs on, the name, the route, the first hop, what lies beyond it,
// the proxy a client would use, the connection, and the service answering on it.
enum class Layer { context, platform, resolve, route, next_hop, forward, proxy, transport, service };
inline constexpr Layer kLayers[] = {Layer::context, Layer::platform, Layer::resolve,   Layer::route,  Layer::next_hop,
                                    Layer::forward, Layer::proxy,    Layer::transport, Layer::service};

// ok: checked and fine; warn: works here but is a known trap; broken: this layer stops the connection;
// not_checked: could not be checked (needs root, a tool missing, an earlier layer broken), with why; skipped: does
// not apply to this target (no proxy in its way, no TLS).
enum class Status { ok, warn, broken, not_checked, skipped };

}  // namespace coldstart::net

namespace coldstart {
template <>
struct EnumNames<net::Layer> {
  static constexpr std::pair<net::Layer, std::string_view> names[] = {
      {net::Layer::context, "context"}, {net::Layer::platform, "platform"},   {net::Layer::resolve, "resolve"},
      {net::Layer::route, "route"},     {net::Layer::next_hop, "next_hop"},   {net::Layer::forward, "forward"},
      {net::Layer::proxy, "proxy"},     {net::Layer::transport, "transport"}, {net::Layer::service, "service"}};
};
template <>
struct EnumNames<net::Status> {
  static constexpr std::pair<net::Status, std::string_view> names[] = {{net::Status::ok, "ok"},
                                                                       {net::Status::warn, "warn"},
                                                                       {net::Status::broken, "broken"},
                                                                       {net::Status::not_checked, "not_checked"},
                                                                       {net::Status::skipped, "skipped"}};
};
}  // namespace coldstart

namespace coldstart::net {

inline std::string_view name(Layer l) { return name_of(l); }   // "context", "platform", "resolve", "route", ...
inline std::string_view name(Status s) { return name_of(s); }  // "ok", "warn", "broken", "not_checked", "skipped"
inline std::optional<Layer> parse_layer(std::string_view s) { return enum_from<Layer>(s); }
inline std::optional<Status> parse_status(std::string_view s) { return enum_from<Status>(s); }

// What one layer's check found, for one target (or for the process, for context and platform).
struct Check {
  Layer layer = Layer::context;
  Status status = Status::not_checked;
  std::string summary;                // one line: what was found
  std::vector<std::string> evidence;  // what shows it: addresses, errno, a neighbour entry, a variable
  std::string fix;                    // for warn and broken: what to do, with its cost where it has one
};

// An errno as doctor net and the lab name it: "EHOSTUNREACH", "ECONNREFUSED", "EEXIST", ...; "errno N" for the rest.
std::string errno_name(int err);
// strerror's text and the name: "Operation not permitted (EPERM)", "Unknown error 4000 (errno 4000)" (the lab's
// rtnetlink errors, RtnlError, say it so).
std::string errno_text(int err);

// ---- The host's facts (net/host.h collects them) ----------------------------------------------------------------

// One interface as getifaddrs() lists it, in its order (by index). IPv6 link-local addresses are kept, without their
// "%scope": NCCL and Gloo can pick one (an interface with no other address), and that is worth seeing.
struct Interface {
  std::string name;
  int index = 0;
  bool up = false, loopback = false;
  std::vector<std::string> ipv4, ipv6;        // addresses, without prefix length
  std::vector<int> ipv4_prefix, ipv6_prefix;  // each address's prefix length, by position (NCCL_COMM_ID's subnet)
  bool no_carrier = false;                    // IFF_UP without IFF_RUNNING (`ip link`'s NO-CARRIER): NCCL skips it
  bool running() const { return up && !no_carrier; }
};

struct ProcessContext {
  std::string netns;         // "net:[4026531840]"
  std::string parent_netns;  // the parent process's, or "" with parent_error
  std::string parent_error;  // "EACCES (not root)", ...
  std::string init_netns;    // PID 1's, or "" with init_error (EACCES for non-root: the parent then decides)
  std::string init_error;
  std::vector<Interface> interfaces;
  int socket_errno = 0;        // socket(AF_INET, SOCK_STREAM) refused with this (EPERM: a seccomp sandbox); 0 = allowed
  bool only_loopback() const;  // no interface but lo is up: an isolated namespace
};

struct Platform {
  bool wsl = false;
  std::string osrelease;    // /proc/sys/kernel/osrelease
  std::string wsl_version;  // "2" ("microsoft-standard-WSL2"), "1" ("Microsoft"), "" when not WSL
  // `wslinfo --networking-mode` as it prints it: nat, mirrored, bridged, virtioproxy (consomme in newer WSL), none, or
  // wsl1; "" unknown (no wslinfo: WSL before 2.0; .wslconfig, where the mode is set, lives on the Windows side and
  // /etc/wsl.conf has no such key).
  std::string wsl_mode;
  std::string wsl_mode_source;  // "wslinfo"; "interface loopback0" (mirrored mode's own device); "" when unknown
  std::string windows_host;     // in NAT mode or WSL 2's unknown mode, the default gateway (how WSL reaches Windows)
  // "docker", "podman", "kubernetes", "lxc" (or /run/systemd/container's word), "" when none is seen
  std::string container;
  std::string container_evidence;  // the file that said so: "/.dockerenv", "/proc/1/cgroup", ...
};

struct ResolverConf {
  std::vector<std::string> nameservers;
  std::vector<std::string> search;
  bool wsl_generated = false;  // "generated by WSL" in the file's header
};

struct DefaultRoute {   // from /proc/net/route (lowest metric), else /proc/net/ipv6_route
  std::string gateway;  // "" when there is none (or the default route is on-link: dev is then set)
  std::string dev;
};

struct HostFacts {
  std::string hostname;
  ProcessContext context;
  Platform platform;
  ResolverConf resolver;
  DefaultRoute default_route;
  std::vector<std::pair<std::string, std::string>> hosts_file;  // /etc/hosts: address, name (each name its own row)
};

// ---- The environment's proxies, the interfaces chosen, the targets ----------------------------------------------

// One proxy variable as the process has it (net/proxy.h reads them and decides by them). Written to JSON and shown
// anywhere with a URL's password hidden (without_password).
struct ProxyVar {
  std::string name, value;
};
using ProxyEnv = std::vector<ProxyVar>;
const std::string* find_var(const ProxyEnv& env, std::string_view name);  // its value; nullptr when unset

// A variable's value as doctor net shows it anywhere (text, JSON, --compare): a URL's password replaced by ***
// ("http://user:***@host:3128"), the rest as written.
std::string without_password(std::string_view value);

// The interface NCCL's or Gloo's socket transport would pick (net/ifselect.h).
struct IfChoice {
  std::string tool;                     // "NCCL", "Gloo"
  std::string variable;                 // "NCCL_SOCKET_IFNAME=^docker,lo" as set, or "" when unset
  std::vector<std::string> interfaces;  // what it would pick, in its order; empty: it finds none
  std::string address;                  // the first picked interface's address ("" when none)
  std::string rule;                     // one line: how it chose ("prefix match 'eth'", "default: not lo, not docker")
  std::string problem;                  // "" or one line: a syntax it rejects, a name matching nothing, loopback only
};

// What doctor net checks a path to (net/target.h parses it).
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

// ---- The peer matrix (doctor net --peers; net/peers.h runs it) ---------------------------------------------------

struct PeerEndpoint {
  int rank = 0;
  std::string host;       // hostname
  std::string interface;  // what NCCL would pick ("" when none)
  std::string address;    // its address, where this rank listens
  int port = 0;           // 0: it could not listen (`problem` says why)
  std::string problem;    // "" or why this rank has no usable interface (loopback only, a name matching nothing)
  std::string caveat;     // NCCL's own warning about a choice that works on one host only (loopback, a bridge): it
                          // becomes the problem once the ranks span hosts
  // What Gloo would pick on this rank (GLOO_SOCKET_IFNAME, else the hostname's address): the matrix probes the address
  // above only, so Gloo elsewhere is a path it did not check. All "" when not known (the hostname left to DNS).
  std::string gloo_interface, gloo_address;
  std::string gloo_problem;   // "" or Gloo's own problem with its choice (a name matching nothing, loopback)
  bool gloo_differs() const;  // Gloo would listen on another interface or address than the one probed
};

struct PeerCell {
  bool ok = false;
  int err = 0;  // errno of the connect (ETIMEDOUT for our timeout); 0 for a pair not probed (see why)
  double ms = 0;
  Layer layer = Layer::transport;  // for a failure: the first broken layer on the way
  std::string why;                 // for a failure: one line
};

struct PeerMatrix {
  int world = 0;
  int rank = 0;                              // the rank that returned it
  std::vector<PeerEndpoint> endpoints;       // by rank
  std::vector<std::vector<PeerCell>> cells;  // cells[from][to]; the diagonal is not probed. `world` rows; on a
                                             // rank other than 0 only its own row is filled, the others are empty
  int failing_pairs() const;                 // over the rows present
};

// ---- The report ----------------------------------------------------------------------------------------------------

struct TargetReport {
  Target target;
  std::string path;           // "direct", or "proxy http://HOST:PORT (https_proxy, curl's rules)"
  std::vector<Check> layers;  // resolve .. service, in kLayers order
  const Check* first(Status s) const;
};

struct Verdict {
  Status status = Status::ok;  // ok, warn or broken
  std::string target;          // the target's text ("" for this process)
  Check check;                 // the layer named, with its evidence and fix (for ok: a summary only)
};

struct NetReport {
  std::string host;
  HostFacts facts;
  ProxyEnv proxy_env;
  IfChoice nccl, gloo;
  std::vector<Check> process;  // context, platform: the same for every target
  std::vector<TargetReport> targets;
  std::optional<PeerMatrix> peers;
  Verdict verdict;   // written; on reading, left to net/report.h's loader, which decides it again
  std::string note;  // "" or one line (no target given and none in the environment)
};

// ---- JSON (model/net_json.cc) ------------------------------------------------------------------------------------

// Written as coldstart.net/1 has them: proxy values without their password, a report's schema and tool, each
// target's first broken layer, a matrix's failing pairs and each endpoint's gloo_differs.
nlohmann::json to_json(const Check& c);
nlohmann::json to_json(const HostFacts& f);
nlohmann::json to_json(const PeerMatrix& m);
nlohmann::json to_json(const PeerEndpoint& e);
nlohmann::json to_json(const NetReport& r);
// A peer matrix's row: one cell a rank, null on the diagonal; empty for a row not gathered.
nlohmann::json row_to_json(const std::vector<PeerCell>& row, int from);

// Read straight from the text (util/json_reader.h), each value's type checked as it is taken: whatever is malformed
// is one InputError naming `what` and the field's path ("peer matrix: cells[0][2].ok: expected true or false, found
// a string"; "(top)" for the whole). Unknown members are ignored and a missing or null optional one keeps its
// default, so that newer and older files open.
HostFacts host_facts_from_text(std::string_view text, const std::string& what = "host facts");
PeerMatrix peer_matrix_from_text(std::string_view text, const std::string& what = "peer matrix");
PeerEndpoint peer_endpoint_from_text(std::string_view text, const std::string& what);
// A row of `world` cells sent by rank `from` (empty: not gathered).
std::vector<PeerCell> peer_row_from_text(std::string_view text, int from, int world, const std::string& what);
// Whether `text` is an object whose "schema" names a coldstart.net/ file (report tells the two kinds apart by it).
bool is_net_report_text(std::string_view text);
// A coldstart.net/1 report's data, its verdict left at its default (net/report.h's loader decides it).
NetReport net_report_data_from_text(std::string_view text, const std::string& what = "doctor net report");
// The same from a tree (its text, read by the same readers).
HostFacts host_facts_from_json(const nlohmann::json& j);
PeerMatrix peer_matrix_from_json(const nlohmann::json& j);

}  // namespace coldstart::net
