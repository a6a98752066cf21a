#include "model/spec.h"

#include <cctype>
#include <cmath>
#include <utility>

#include "util/strings.h"

namespace coldstart {

std::string Groups::name() const {
  switch (kind) {
    case Kind::world: return "world";
    case Kind::split: return "split:" + std::to_string(count);
    case Kind::fresh: return "fresh:" + std::to_string(count);
  }
  return "?";
}

std::optional<Groups> Groups::parse(std::string_view s) {
  if (s == "world") return Groups{};
  auto colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view kind = s.substr(0, colon);
  auto k = parse_int(s.substr(colon + 1));
  if ((kind != "split" && kind != "fresh") || !k || *k < 1 || *k > kMax) return std::nullopt;
  return Groups{kind == "split" ? Kind::split : Kind::fresh, static_cast<int>(*k)};
}

std::string Startup::name() const {
  switch (kind) {
    case Kind::none: return "none";
    case Kind::cpu: {
      const double ms = seconds * 1e3;
      if (ms == std::floor(ms) && static_cast<int64_t>(ms) % 1000 == 0)
        return "cpu:" + std::to_string(static_cast<int64_t>(ms) / 1000) + "s";
      return ms == std::floor(ms) ? "cpu:" + std::to_string(static_cast<int64_t>(ms)) + "ms"
                                  : "cpu:" + std::to_string(ms) + "ms";
    }
    case Kind::h2d:
    case Kind::h2d_pinned: {
      std::string s = kind == Kind::h2d ? "h2d:" : "h2d-pinned:";
      s += format_size(bytes);
      if (piece != kDefaultPiece) s.append(1, '/').append(format_size(piece));
      return s;
    }
  }
  return "?";
}

std::optional<Startup> Startup::parse(std::string_view s) {
  if (s == "none") return Startup{};
  auto colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view kind = s.substr(0, colon), value = s.substr(colon + 1);
  if (kind == "cpu") {
    auto d = parse_duration(value);
    if (!d || *d <= 0 || *d > 3600) return std::nullopt;
    return Startup{Kind::cpu, *d, 0};
  }
  if (kind == "h2d" || kind == "h2d-pinned") {
    auto slash = value.find('/');
    auto b = parse_size(value.substr(0, slash));
    if (!b || *b == 0 || *b > (uint64_t{1} << 40)) return std::nullopt;
    uint64_t piece = kDefaultPiece;
    if (slash != std::string_view::npos) {
      auto p = parse_size(value.substr(slash + 1));
      if (!p || *p == 0 || *p > (uint64_t{16} << 30)) return std::nullopt;
      piece = *p;
    }
    return Startup{kind == "h2d" ? Kind::h2d : Kind::h2d_pinned, 0, *b, piece};
  }
  return std::nullopt;
}

std::string Fix::name() const {
  switch (kind) {
    case Kind::none: return "none";
    case Kind::cumem_off: return "cumem-off";
    case Kind::eager_connect: return "eager-connect";
    case Kind::channels: return "channels:" + std::to_string(channels);
    case Kind::prewarm: return "prewarm";
    case Kind::split_share: return "split-share";
    case Kind::socket_poll: return "socket-poll";
    case Kind::patched_nccl: return "patched-nccl";
  }
  return "?";
}

std::optional<Fix> Fix::parse(std::string_view s) {
  for (Kind k : {Kind::none, Kind::cumem_off, Kind::eager_connect, Kind::prewarm, Kind::split_share, Kind::socket_poll})
    if (Fix{k, 0}.name() == s) return Fix{k, 0};
  if (s.starts_with("channels:"))
    if (auto n = parse_int(s.substr(9)); n && *n >= 1 && *n <= 64) return Fix{Kind::channels, static_cast<int>(*n)};
  return std::nullopt;
}

std::vector<EnvSetting> Fix::env() const {
  switch (kind) {
    case Kind::cumem_off: return {{"NCCL_CUMEM_ENABLE", "0"}};
    case Kind::eager_connect: return {{"NCCL_RUNTIME_CONNECT", "0"}};
    case Kind::channels: return {{"NCCL_MAX_CTAS", std::to_string(channels)}};
    case Kind::socket_poll: return {{"NCCL_SOCKET_POLL_TIMEOUT_MSEC", "1"}};
    default: return {};
  }
}

std::string_view Fix::cost() const {
  switch (kind) {
    case Kind::none: return "";
    case Kind::cumem_off:
      return "legacy CUDA IPC instead of cuMem: no lazy connection, NVLS buffer registration, symmetric memory "
             "windows or multi-node NVLink; more memory at init; every process of the job must agree";
    case Kind::eager_connect:
      return "every algorithm's connections are made at init, used or not: more memory and a longer init";
    case Kind::channels: return "fewer channels: less bandwidth at large sizes (measured in busbw)";
    case Kind::prewarm:
      return "a background thread during start-up (it shares the GPU driver with the start-up work); hides the cost "
             "only behind start-up work that exists, and only for the algorithms the warm-up used";
    case Kind::split_share:
      return "the groups share the world communicator's resources: one failing communicator takes its family down";
    case Kind::socket_poll:
      return "a blocking socket wait sleeps up to 1 ms between looks, so it notices an abort up to 1 ms later; needs "
             "NCCL 2.29 or newer (older releases ignore the variable); it reaches NCCL's socketWait only: the "
             "bootstrap's all-gathers and accepts and the waits for the proxy's answer and a peer's cuMem fd still "
             "spin (coldstart's patched NCCL makes them sleep too: nccl/*/0007)";
    case Kind::patched_nccl:
      return "a custom NCCL build (coldstart's nccl/ patches over the same release, `coldstart nccl build`) that every "
             "rank of the job must load (LD_PRELOAD, or --nccl-lib here); not in an NVIDIA release";
  }
  return "";
}

std::string_view Fix::cost_in_brief() const {
  switch (kind) {
    case Kind::none: return "";
    case Kind::cumem_off: return "legacy CUDA IPC instead of cuMem (no lazy connection, NVLS, symmetric memory)";
    case Kind::eager_connect: return "every connection made at init: more memory, a longer init";
    case Kind::channels: return "less bandwidth at large sizes";
    case Kind::prewarm: return "a background thread during start-up";
    case Kind::split_share: return "one failing communicator takes its family down";
    case Kind::socket_poll: return "a wait notices an abort up to 1 ms later";
    case Kind::patched_nccl: return "a custom NCCL build every rank must load";
  }
  return "";
}

std::string Link::name() const {
  if (!any()) return "";
  const auto us = static_cast<int64_t>(std::llround(latency_s * 1e6));
  std::string s = us % 1'000'000 == 0 && us > 0 ? std::to_string(us / 1'000'000) + "s"
                  : us % 1000 == 0              ? std::to_string(us / 1000) + "ms"
                                                : std::to_string(us) + "us";
  if (rate_bps > 0) {
    static constexpr std::pair<uint64_t, const char*> kUnits[] = {
        {1'000'000'000'000, "tbit"}, {1'000'000'000, "gbit"}, {1'000'000, "mbit"}, {1000, "kbit"}, {1, "bit"}};
    for (const auto& [scale, unit] : kUnits)
      if (rate_bps % scale == 0) {
        s += "/" + std::to_string(rate_bps / scale) + unit;
        break;
      }
  }
  return s;
}

std::optional<Link> Link::parse(std::string_view text) {
  auto slash = text.find('/');
  std::string_view lat = text.substr(0, slash);
  Link l;
  // LATENCY: a number with us, ms or s.
  double scale = 0;
  if (lat.ends_with("us"))
    scale = 1e-6, lat.remove_suffix(2);
  else if (lat.ends_with("ms"))
    scale = 1e-3, lat.remove_suffix(2);
  else if (lat.ends_with("s"))
    scale = 1, lat.remove_suffix(1);
  auto v = parse_duration(lat);  // a bare number: its value
  if (scale == 0 || !v || *v < 0) return std::nullopt;
  const double us = std::round(*v * scale * 1e6);
  if (us > 10e6 || std::fabs(us - *v * scale * 1e6) > 1e-3) return std::nullopt;  // whole microseconds, at most 10 s
  l.latency_s = us / 1e6;
  if (slash != std::string_view::npos) {
    std::string rate(text.substr(slash + 1));
    for (auto& c : rate) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static constexpr std::pair<const char*, double> kUnits[] = {
        {"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}};
    double bps = 0;
    for (const auto& [unit, mult] : kUnits)
      if (rate.ends_with(unit)) {
        auto n = parse_duration(std::string_view(rate).substr(0, rate.size() - std::string_view(unit).size()));
        if (n && *n > 0) bps = *n * mult;
        break;
      }
    if (bps < 1 || bps > 1e13 || bps != std::floor(bps)) return std::nullopt;
    l.rate_bps = static_cast<uint64_t>(bps);
  }
  if (!l.any()) return std::nullopt;  // "0ms": no link to shape
  return l;
}

EnvAxis default_env_axis() { return {"NCCL_CUMEM_ENABLE", {std::nullopt, std::string("0")}}; }

namespace {
// The fix's own variables are in a configuration's env (what its ranks ran with) but not in its label or key: the
// fix names them, and keys stay those of runs recorded before the env held them.
bool set_by_fix(const Fix& fix, const EnvSetting& e) {
  for (const auto& f : fix.env())
    if (f.key == e.key) return true;
  return false;
}
}  // namespace

std::string Config::label(const std::string& nccl_name) const {
  std::string s = launcher.empty() ? std::string(name_of(mode)) : launcher;
  for (const auto& e : env)
    if (!set_by_fix(fix, e)) s += " · " + e.key + "=" + (e.value ? *e.value : "(unset)");
  if (!nccl_lib.empty()) s += " · " + (nccl_name.empty() ? nccl_lib : nccl_name);
  if (nccl_log != NcclLog::light) s += " · nccl-log=" + std::string(name_of(nccl_log));
  if (trace) s += " · traced";
  if (startup.kind != Startup::Kind::none) s += " · startup=" + startup.name();
  if (fix.kind != Fix::Kind::none) s += " · fix=" + fix.name();
  if (nodes > 1) s += " · " + std::to_string(nodes) + " nodes" + (link.any() ? " (link " + link.name() + ")" : "");
  return s;
}

std::string Config::key() const {
  std::string s = launcher.empty() ? std::string(name_of(mode)) : "launcher=" + launcher;
  for (const auto& e : env)
    if (!set_by_fix(fix, e)) s += "|" + e.key + (e.value ? "=" + *e.value : std::string(" unset"));
  s += "|nccl=" + nccl_lib + "|log=" + std::string(name_of(nccl_log)) + "|trace=" + (trace ? "on" : "off");
  if (startup.kind != Startup::Kind::none) s += "|startup=" + startup.name();
  if (fix.kind != Fix::Kind::none) s += "|fix=" + fix.name();
  // Only above one node: the keys of runs on one host (every run before --nodes) stay what they were.
  if (nodes > 1) s += "|nodes=" + std::to_string(nodes) + (link.any() ? "|link=" + link.name() : "");
  return s;
}

}  // namespace coldstart
