// NCCL's and Gloo's socket interface choice, re-done from their sources on the interfaces doctor net sees.
//
// NCCL (NVIDIA/nccl src/misc/socket.cc ncclFindInterfaces, src/os/linux.cc ncclOsFindInterfaces and
// ncclFindInterfaceMatchSubnet, src/misc/utils.cc parseStringList/matchIfList, src/bootstrap.cc bootstrapNetInit):
//  - NCCL_SOCKET_IFNAME, when longer than one character: a comma list of names (each cut at its first ':'), matched as
//    prefixes; a leading '^' excludes them, then a leading '=' makes the match exact ("^=docker0").
//  - unset: "ib" first; then, with NCCL_COMM_ID set, the first address (any interface) in its subnet; then
//    "^docker,lo,virbr"; then "docker", "lo", "virbr".
//  - each search walks getifaddrs() (IPv4 addresses of every interface, then IPv6), keeps interfaces that are
//    IFF_RUNNING with an AF_INET/AF_INET6 address (NCCL_SOCKET_FAMILY=AF_INET or AF_INET6 forces one, any other value
//    is ignored), skips ::1, and keeps each interface once with its first address, at most 16.
//  - the bootstrap listens on the first one, or, with NCCL_COMM_ID set, on the subnet match alone.
// Gloo as PyTorch creates it (torch/csrc/distributed/c10d/init.cpp, ProcessGroupGloo.cpp createDefaultDevice,
// GlooDeviceFactory.cpp; gloo/transport/tcp/device.cc lookupAddrForIface/lookupAddrForHostname):
//  - GLOO_SOCKET_IFNAME, when longer than one character: split on ',' (std::getline: a trailing empty part is dropped,
//    others kept); one device per name, found by exact name (strcmp) with its first address, any family, up or not;
//    a name that matches nothing throws "Unable to find address for: NAME", an empty one "interface or hostname can't
//    be empty".
//  - unset: gethostname(), getaddrinfo(); the first address that bind() accepts (an address of this host, 127/8
//    included); none -> 127.0.0.1 ("Unable to resolve hostname to a (local) address. Using the loopback address as
//    fallback"). Either way a hostname on 127.0.1.1 (Debian's /etc/hosts, WSL's) lands on loopback.
#include "net/ifselect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <sstream>

#include "net/netlink.h"
#include "util/strings.h"

namespace coldstart::net {
// Named, so that a unity build's other files (their own helpers in anonymous namespaces) cannot clash with these.
namespace ifselect_impl {
namespace {

constexpr size_t kNcclMaxIfs = 16;  // MAX_IFS (src/include/socket.h), also the most parseStringList keeps

struct Addr {
  const Interface* itf = nullptr;
  std::string text;
  int family = AF_INET;
  int prefix = -1;
};

// getifaddrs() as glibc builds it from rtnetlink: the IPv4 addresses of every interface (by index), then the IPv6 ones.
std::vector<Addr> getifaddrs_order(const std::vector<Interface>& ifs) {
  std::vector<Addr> out;
  for (const auto& i : ifs)
    for (size_t k = 0; k < i.ipv4.size(); ++k)
      out.push_back({&i, i.ipv4[k], AF_INET, k < i.ipv4_prefix.size() ? i.ipv4_prefix[k] : -1});
  for (const auto& i : ifs)
    for (size_t k = 0; k < i.ipv6.size(); ++k)
      out.push_back({&i, i.ipv6[k], AF_INET6, k < i.ipv6_prefix.size() ? i.ipv6_prefix[k] : -1});
  return out;
}

struct Bytes {
  int family = AF_UNSPEC;
  unsigned char b[16] = {};
};

std::optional<Bytes> numeric(const std::string& text) {
  Bytes x;
  if (::inet_pton(AF_INET, text.c_str(), x.b) == 1) {
    x.family = AF_INET;
    return x;
  }
  if (::inet_pton(AF_INET6, text.c_str(), x.b) == 1) {
    x.family = AF_INET6;
    return x;
  }
  return std::nullopt;
}

bool same_address(const std::string& a, const std::string& b) {
  auto x = numeric(a), y = numeric(b);
  return x && y && x->family == y->family && std::memcmp(x->b, y->b, x->family == AF_INET ? 4 : 16) == 0;
}

bool is_loopback_address(const std::string& a) {
  auto x = numeric(a);
  if (!x) return false;
  if (x->family == AF_INET) return x->b[0] == 127;
  in6_addr v6;
  std::memcpy(&v6, x->b, 16);
  return IN6_IS_ADDR_LOOPBACK(&v6);
}

bool is_loopback(const Interface& i, const std::string& address) { return i.loopback || is_loopback_address(address); }

std::string quoted_list(const std::vector<std::string>& names, const char* suffix = "") {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n + suffix;
  return out;
}

std::string names_of(const std::vector<Interface>& ifs) {
  std::vector<std::string> n;
  for (const auto& i : ifs) n.push_back(i.name);
  return n.empty() ? "none" : coldstart::join(n, ", ");
}

// ---- NCCL ----

struct NcclList {
  bool exclude = false, exact = false;
  std::vector<std::string> names;
  bool matches(const std::string& name) const {
    bool listed = names.empty() || std::any_of(names.begin(), names.end(), [&](const std::string& n) {
                    return exact ? name == n : name.compare(0, n.size(), n) == 0;
                  });
    return listed != exclude;
  }
};

NcclList parse_nccl_list(std::string_view s) {
  NcclList l;
  if (!s.empty() && s[0] == '^') {
    l.exclude = true;
    s.remove_prefix(1);
  }
  if (!s.empty() && s[0] == '=') {
    l.exact = true;
    s.remove_prefix(1);
  }
  for (const auto& entry : coldstart::split(s, ',')) {  // strtok_r: empty entries vanish; "eth0:1" is eth0 (port 1)
    std::string name = entry.substr(0, entry.find(':'));
    if (!name.empty() && l.names.size() < kNcclMaxIfs) l.names.push_back(name);
  }
  return l;
}

struct Picked {
  const Interface* itf;
  std::string address;
};

std::vector<Picked> nccl_find(const std::vector<Interface>& ifs, std::string_view list, int family) {
  NcclList l = parse_nccl_list(list);
  std::vector<Picked> out;
  for (const Addr& a : getifaddrs_order(ifs)) {
    if (out.size() >= kNcclMaxIfs) break;
    if (!a.itf->running()) continue;
    if (family != -1 && a.family != family) continue;
    if (a.family == AF_INET6 && is_loopback_address(a.text)) continue;
    if (!l.matches(a.itf->name)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Picked& p) { return p.itf == a.itf; })) continue;
    out.push_back({a.itf, a.text});
  }
  return out;
}

bool in_subnet(const Bytes& local, const Bytes& remote, int prefix) {
  int bytes = local.family == AF_INET ? 4 : 16;
  if (prefix < 0 || prefix > bytes * 8) return false;
  for (int i = 0; i < bytes; ++i) {
    int bits = std::clamp(prefix - i * 8, 0, 8);
    unsigned char mask = static_cast<unsigned char>(bits == 0 ? 0 : 0xff << (8 - bits));
    if ((local.b[i] & mask) != (remote.b[i] & mask)) return false;
  }
  return true;
}

// ncclFindInterfaceMatchSubnet: the first address in getifaddrs() order, of any interface (down and lo included),
// whose subnet holds `remote`.
std::optional<Picked> nccl_subnet_match(const std::vector<Interface>& ifs, const Bytes& remote) {
  for (const Addr& a : getifaddrs_order(ifs)) {
    auto local = numeric(a.text);
    if (!local || local->family != remote.family) continue;
    if (local->family == AF_INET6 && local->b[0] == 0xfe && (local->b[1] & 0xc0) == 0x80) continue;  // scope differs
    if (in_subnet(*local, remote, a.prefix)) return Picked{a.itf, a.text};
  }
  return std::nullopt;
}

// NCCL_COMM_ID's host: "<ipv4>:<port>", "[<ipv6>]:<port>", or "<hostname>:<port>".
std::string comm_id_host(const std::string& id) {
  if (!id.empty() && id[0] == '[') {
    size_t end = id.find(']');
    return end == std::string::npos ? "" : id.substr(1, end - 1);
  }
  return id.substr(0, id.find(':'));
}

std::string describe_nccl_list(const NcclList& l) {
  std::vector<std::string> names;
  for (const auto& n : l.names) names.push_back("'" + n + "'");
  std::string what = quoted_list(names);
  if (l.names.empty()) return l.exclude ? "excluding nothing listed: matches no interface" : "an empty list";
  if (l.exclude) return std::string(l.exact ? "excluding exactly " : "excluding prefixes ") + what;
  return std::string(l.exact ? "exact match " : "prefix match ") + what;
}

// Why an NCCL_SOCKET_IFNAME list found nothing: the interfaces it names that are down or lack an address.
std::string nccl_hint(const std::vector<Interface>& ifs, const NcclList& l, int family) {
  std::vector<std::string> why;
  for (const auto& i : ifs) {
    if (!l.matches(i.name)) continue;
    bool v4 = !i.ipv4.empty(),
         v6 = std::any_of(i.ipv6.begin(), i.ipv6.end(), [](const std::string&a) { return !is_loopback_address(a); });
    if (!i.up)
      why.push_back(i.name + " is down");
    else if (i.no_carrier)
      why.push_back(i.name + " has no carrier");
    else if (family == AF_INET && !v4)
      why.push_back(i.name + " has no IPv4 address (NCCL_SOCKET_FAMILY=AF_INET)");
    else if (family == AF_INET6 && !v6)
      why.push_back(i.name + " has no IPv6 address (NCCL_SOCKET_FAMILY=AF_INET6)");
    else if (!v4 && !v6)
      why.push_back(i.name + " has no address");
  }
  if (!why.empty()) return " (" + coldstart::join(why, "; ") + ")";
  if (!l.exclude && l.exact) {
    NcclList prefix = l;
    prefix.exact = false;
    std::vector<std::string> would;
    for (const auto& i : ifs)
      if (prefix.matches(i.name)) would.push_back(i.name);
    if (!would.empty())
      return " ('=' asks for exact names; as prefixes they would match " + coldstart::join(would, ", ") + ")";
  }
  return " (interfaces here: " + names_of(ifs) + ")";
}

// ---- Gloo ----

// The interface holding `address` as Gloo's sockaddrToInterfaceName finds it: an exact match, or for 127/8 the first
// interface with a 127/8 address.
const Interface* holder(const std::vector<Interface>& ifs, const std::string& address) {
  bool lo = is_loopback_address(address) && address.find(':') == std::string::npos;
  for (const Addr& a : getifaddrs_order(ifs)) {
    if (same_address(a.text, address)) return a.itf;
    if (lo && a.family == AF_INET && is_loopback_address(a.text)) return a.itf;
  }
  return nullptr;
}

std::string first_address(const Interface& i) {
  if (!i.ipv4.empty()) return i.ipv4.front();
  if (!i.ipv6.empty()) return i.ipv6.front();
  return "";
}

// createDefaultDevice: the hostname's first address that bind() accepts, else 127.0.0.1.
void gloo_default(const std::vector<Interface>& ifs, const HostFacts& host, IfChoice& c) {
  c.rule = "default: the address the hostname resolves to";
  if (host.hostname.empty()) {
    c.rule += " (hostname unknown)";
    return;
  }
  std::vector<std::string> addresses;
  for (const auto& [address, name] : host.hosts_file)
    if (coldstart::iequals(name, host.hostname)) addresses.push_back(address);
  if (addresses.empty()) {
    c.rule = "default: hostname '" + host.hostname +
             "' is not in /etc/hosts, so it is resolved by DNS at run time; Gloo binds the first address of the "
             "answer that is this host's, else 127.0.0.1";
    return;
  }
  // The first address bind() accepts: one of this host's (127/8 always is, through lo). getaddrinfo may reorder the
  // hosts file's addresses (RFC 6724); they are taken in file order here.
  const Interface* itf = nullptr;
  std::string chosen;
  for (const auto& a : addresses) {
    if ((itf = holder(ifs, a))) {
      chosen = a;
      break;
    }
  }
  std::string where = "hostname '" + host.hostname + "' is " + coldstart::join(addresses, ", ") + " in /etc/hosts";
  if (!itf) {
    chosen = "127.0.0.1";
    itf = holder(ifs, chosen);
    c.rule = "default: " + where + ", not an address of this host: Gloo falls back to 127.0.0.1";
    c.interfaces.push_back(itf ? itf->name : "lo");
    c.address = chosen;
    c.problem = where +
                ", which is not an address of this host: Gloo falls back to 127.0.0.1 (loopback) and peers "
                "on other hosts cannot reach it; set GLOO_SOCKET_IFNAME or fix /etc/hosts";
    return;
  }
  c.rule = "default: " + where;
  c.interfaces.push_back(itf->name);
  c.address = chosen;
  if (is_loopback(*itf, chosen))
    c.problem = where + ", a loopback address: Gloo listens on " + itf->name +
                " and peers on other hosts cannot reach it; set GLOO_SOCKET_IFNAME or fix /etc/hosts";
  else if (!itf->running())
    c.problem = where + ", on " + itf->name + ", which is " + (itf->up ? "without carrier" : "down") +
                ": peers cannot reach Gloo there";
}

}  // namespace

namespace {

// NCCL's variables as it reads them: unset and empty differ.
struct NcclEnv {
  const GetEnv& env;
  std::string_view get(const char* key) const {
    const char* v = env ? env(key) : nullptr;
    return v ? std::string_view(v) : std::string_view();
  }
  bool is_set(const char* key) const { return env && env(key) != nullptr; }
};

// NCCL_SOCKET_FAMILY: AF_INET, AF_INET6, or -1 for either (any other value is ignored, and noted).
int nccl_family(const NcclEnv& e, std::vector<std::string>& notes) {
  if (!e.is_set("NCCL_SOCKET_FAMILY")) return -1;
  std::string_view f = e.get("NCCL_SOCKET_FAMILY");
  if (f == "AF_INET") return AF_INET;
  if (f == "AF_INET6") return AF_INET6;
  notes.push_back("NCCL_SOCKET_FAMILY=" + std::string(f) + " ignored (NCCL takes AF_INET or AF_INET6)");
  return -1;
}

// The interfaces NCCL picks by default, stage after stage: ib*, the interface in NCCL_COMM_ID's subnet, not docker*,
// lo*, virbr*, then those. `fallback` gets the last stage's name when it found them; c.rule says which stage did.
std::vector<Picked> nccl_default(const std::vector<Interface>& ifs, const std::string& comm_id, int family, IfChoice& c,
                                 std::string& fallback) {
  std::vector<Picked> picked = nccl_find(ifs, "ib", family);
  c.rule = "default: ib*";
  if (picked.empty() && comm_id.size() > 1) {
    if (auto remote = numeric(comm_id_host(comm_id))) {
      if (auto m = nccl_subnet_match(ifs, *remote)) picked.push_back(*m);
      c.rule = "default: the interface in NCCL_COMM_ID's subnet";
    }
  }
  if (picked.empty()) {
    picked = nccl_find(ifs, "^docker,lo,virbr", family);
    c.rule = "default: not docker*, lo*, virbr*";
  }
  for (const char* last : {"docker", "lo", "virbr"}) {
    if (!picked.empty()) break;
    picked = nccl_find(ifs, last, family);
    c.rule = std::string("default: ") + last + "* (no other interface is running with an address)";
    fallback = last;
  }
  if (picked.empty()) c.rule = "default: ib*, then not docker*, lo*, virbr*, then docker*, lo*, virbr*";
  return picked;
}

// The bootstrap: with NCCL_COMM_ID set, the subnet match alone (NCCL_SOCKET_IFNAME plays no part). Its problem, or
// "" (with a note where there is something to say).
std::string nccl_bootstrap(const std::vector<Interface>& ifs, const NcclEnv& e, std::vector<std::string>& notes) {
  if (!e.is_set("NCCL_COMM_ID")) return "";
  const std::string comm_id(e.get("NCCL_COMM_ID"));
  std::string host = comm_id_host(comm_id);
  if (comm_id.size() <= 1 || host.empty())
    return "NCCL_COMM_ID='" + comm_id + "' is not <address>:<port>: NCCL's bootstrap fails ('Invalid " +
           "NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>')";
  if (auto remote = numeric(host)) {
    if (auto m = nccl_subnet_match(ifs, *remote)) {
      notes.push_back("bootstrap: " + m->itf->name + " (" + m->address + "), in NCCL_COMM_ID's subnet");
      return "";
    }
    return "NCCL_COMM_ID=" + comm_id + ": no interface has an address in " + host +
           "'s subnet: NCCL's bootstrap fails ('No usable listening interface found')";
  }
  notes.push_back("bootstrap: the interface in the subnet of NCCL_COMM_ID's host, resolved at run time");
  return "";
}

// The problem with what NCCL picked: none found, a loopback address, or a bridge it fell back to.
std::string nccl_pick_problem(const std::vector<Interface>& ifs, const IfChoice& c, const std::vector<Picked>& picked,
                              bool user_list, const std::string& ifname, int family, const std::string& fallback) {
  if (picked.empty()) {
    if (user_list)
      return c.variable + " matches no running interface with an address" +
             nccl_hint(ifs, parse_nccl_list(ifname), family) +
             ": NCCL finds none and fails ('no socket interface found'), naming nothing (NVIDIA/nccl#1837)";
    return "no interface is running with an address: NCCL finds none ('no socket interface found')";
  }
  if (is_loopback(*picked.front().itf, picked.front().address)) {
    std::string what = "a loopback address";
    if (user_list && parse_nccl_list(ifname).exclude) what += " that " + c.variable + " does not exclude";
    return "NCCL would listen on " + picked.front().itf->name + " (" + picked.front().address + "), " + what +
           ": peers on other hosts cannot reach it";
  }
  if (fallback == "docker" || fallback == "virbr")
    return "NCCL falls back to " + picked.front().itf->name + " (" + picked.front().address +
           "), a bridge inside this host: peers on other hosts cannot reach it";
  return "";
}

}  // namespace

IfChoice nccl(const std::vector<Interface>& ifs, const GetEnv& env) {
  IfChoice c;
  c.tool = "NCCL";
  const NcclEnv e{env};
  std::vector<std::string> notes;
  const int family = nccl_family(e, notes);

  std::string ifname(e.get("NCCL_SOCKET_IFNAME"));
  std::vector<Picked> picked;
  bool user_list = e.is_set("NCCL_SOCKET_IFNAME") && ifname.size() > 1;
  std::string fallback;  // the default stage that found them, when it is docker, lo or virbr
  if (e.is_set("NCCL_SOCKET_IFNAME")) c.variable = "NCCL_SOCKET_IFNAME=" + ifname;
  if (user_list) {
    picked = nccl_find(ifs, ifname, family);
    c.rule = describe_nccl_list(parse_nccl_list(ifname));
  } else {
    if (e.is_set("NCCL_SOCKET_IFNAME"))
      notes.push_back("NCCL_SOCKET_IFNAME='" + ifname +
                      "' ignored (NCCL reads it only when longer than one character)");
    picked = nccl_default(ifs, std::string(e.get("NCCL_COMM_ID")), family, c, fallback);
  }
  if (family == AF_INET) c.rule += "; AF_INET only";
  if (family == AF_INET6) c.rule += "; AF_INET6 only";

  for (const auto& p : picked) c.interfaces.push_back(p.itf->name);
  if (!picked.empty()) c.address = picked.front().address;

  const std::string bootstrap_problem = nccl_bootstrap(ifs, e, notes);

  // The route to MASTER_ADDR, against the interface NCCL listens on.
  const std::string master(e.get("MASTER_ADDR"));
  if (numeric(master) && !picked.empty() && !is_loopback_address(master)) {
    Route r = route_to(master);
    if (r.ok() && !r.dev.empty() && r.dev != picked.front().itf->name)
      notes.push_back("the route to MASTER_ADDR " + master + " leaves by " + r.dev + ", NCCL listens on " +
                      picked.front().itf->name);
  }
  for (const auto& n : notes) c.rule += "; " + n;

  c.problem = !bootstrap_problem.empty() ? bootstrap_problem
                                         : nccl_pick_problem(ifs, c, picked, user_list, ifname, family, fallback);
  return c;
}

IfChoice gloo(const std::vector<Interface>& ifs, const GetEnv& env, const HostFacts& host) {
  IfChoice c;
  c.tool = "Gloo";
  const char* v = env ? env("GLOO_SOCKET_IFNAME") : nullptr;
  std::string value = v ? v : "";
  if (v) c.variable = "GLOO_SOCKET_IFNAME=" + value;

  if (v && value.size() > 1) {
    std::vector<std::string> names;
    std::istringstream in(value);
    for (std::string part; std::getline(in, part, ',');) names.push_back(part);
    std::vector<std::string> shown;
    for (const auto& n : names) shown.push_back("'" + n + "'");
    c.rule = "exact names " + quoted_list(shown) + " (one Gloo device each)";
    std::vector<const Interface*> found;
    for (const auto& name : names) {
      if (name.empty()) {
        c.problem = c.variable + " holds an empty name: PyTorch fails ('interface or hostname can't be empty')";
        break;
      }
      auto it = std::find_if(ifs.begin(), ifs.end(), [&](const Interface& i) { return i.name == name; });
      if (it == ifs.end() || first_address(*it).empty()) {
        std::string why;
        std::vector<std::string> prefixed;
        std::string bare =
            name.substr(name.find_first_not_of("^=") == std::string::npos ? name.size() : name.find_first_not_of("^="));
        for (const auto& i : ifs)
          if (!bare.empty() && i.name != name && i.name.compare(0, bare.size(), bare) == 0) prefixed.push_back(i.name);
        if (it != ifs.end())
          why = ": " + name + " has no address";
        else if (name[0] == '^' || name[0] == '=')
          why = ": '" + name.substr(0, 1) + "' is NCCL's syntax, Gloo takes exact names";
        else if (!prefixed.empty())
          why = ": Gloo takes exact names, not prefixes (" + coldstart::join(prefixed, ", ") + " exist)";
        else
          why = " (interfaces here: " + names_of(ifs) + ")";
        c.problem = c.variable + ": no interface named '" + name + "'" + why + "; Gloo fails ('Unable to find " +
                    "address for: " + name + "')";
        break;
      }
      found.push_back(&*it);
    }
    if (!c.problem.empty()) return c;  // PyTorch raises while creating the process group: no device at all
    for (const Interface* i : found) c.interfaces.push_back(i->name);
    c.address = first_address(*found.front());
    for (const Interface* i : found) {
      if (is_loopback(*i, first_address(*i))) {
        c.problem = "Gloo would listen on " + i->name + " (" + first_address(*i) +
                    "), a loopback address: peers on other hosts cannot reach it";
        break;
      }
      if (!i->running()) {
        c.problem = "Gloo would listen on " + i->name + " (" + first_address(*i) + "), which is " +
                    (i->up ? "without carrier" : "down") + ": peers cannot reach it";
        break;
      }
    }
    return c;
  }

  gloo_default(ifs, host, c);
  if (v) c.rule += "; " + c.variable + " ignored (PyTorch reads it only when longer than one character)";
  return c;
}

}  // namespace ifselect_impl

IfChoice nccl_choice(const std::vector<Interface>& ifs, const GetEnv& env) { return ifselect_impl::nccl(ifs, env); }

IfChoice gloo_choice(const std::vector<Interface>& ifs, const GetEnv& env, const HostFacts& host) {
  return ifselect_impl::gloo(ifs, env, host);
}

}  // namespace coldstart::net
