#include "nccllog/parser.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "util/error.h"

namespace coldstart::nccllog {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

template <class T>
bool to_num(std::string_view s, T* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

// Splits off the next space-separated token.
std::string_view token(std::string_view* s) {
  size_t i = 0;
  while (i < s->size() && (*s)[i] == ' ') ++i;
  size_t j = i;
  while (j < s->size() && (*s)[j] != ' ') ++j;
  std::string_view t = s->substr(i, j - i);
  s->remove_prefix(j);
  return t;
}

// "kernels 0.23, alloc 0.03, bootstrap 0.01" -> {kernels: 0.23, ...}; false when a pair is malformed.
bool parse_pairs(std::string_view s, std::map<std::string, double>* out) {
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view pair = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    std::string_view key = token(&pair), value = token(&pair);
    double v = 0;
    if (key.empty() || !to_num(value, &v)) return false;
    (*out)[std::string(key)] = v;
  }
  return true;
}

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

uint64_t thread_key(int pid, int tid) {
  return static_cast<uint64_t>(static_cast<uint32_t>(pid)) << 32 | static_cast<uint32_t>(tid);
}

// Drops a "[...] " tag from the front of *s (the CUDA device, or 2.29's "[Rank N]"); false where it does not close.
bool skip_tag(std::string_view* s) {
  size_t close = s->find("] ");
  if (close == std::string_view::npos) return false;
  s->remove_prefix(close + 2);
  return true;
}

// One NCCL INFO line as a handler reads it, with what the handler may change: the process's state, and which
// communicator each thread works on.
struct InfoLine {
  Process& p;
  int tid;
  uint64_t thread;  // thread_key(pid, tid)
  std::string_view msg;
  std::string_view rest;  // msg without the prefix its handler was found by (or the suffix)
  std::optional<double> t;
  std::unordered_map<uint64_t, std::string>& thread_comms;  // (pid, tid) -> the comm that thread last named
};

Comm& comm(Process& p, std::string_view id) {
  for (auto& c : p.comms)
    if (c.id == id) return c;
  Comm c;
  c.id = id;
  p.comms.push_back(std::move(c));
  return p.comms.back();
}

// The communicator the line's thread last named, or else the process's latest; null where the process has none.
Comm* current(const InfoLine& in) {
  auto it = in.thread_comms.find(in.thread);
  if (it != in.thread_comms.end())
    for (auto& c : in.p.comms)
      if (c.id == it->second) return &c;
  return in.p.comms.empty() ? nullptr : &in.p.comms.back();
}
// As current(), with a communicator "?" where the process has none yet.
Comm& current_or_unknown(const InfoLine& in) {
  Comm* c = current(in);
  return c ? *c : comm(in.p, "?");
}

// "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read": a connection, at init or lazily after it (ring listings, without
// " via ", are skipped).
std::string on_channel(InfoLine& in) {
  size_t via = in.msg.find(" via ");
  if (via == std::string_view::npos) return {};
  std::string_view transport = in.msg.substr(via + 5);
  while (!transport.empty() && transport.back() == ' ') transport.remove_suffix(1);
  if (transport.size() > 48) transport = transport.substr(0, 48);
  if (transport.empty()) return "channel connection without a transport";
  Comm& c = current_or_unknown(in);
  if (c.init_complete) {
    c.lazy_connections[std::string(transport)]++;
    if (in.t) {
      if (!c.t_first_lazy) c.t_first_lazy = in.t;
      c.t_last_lazy = in.t;
    }
  } else {
    c.init_connections[std::string(transport)]++;
  }
  return {};
}

// A communicator's line: "[fn] comm 0x.. rank N nranks N cudaDev N nvmlDev N busId .. commId 0x.. - Init COMPLETE".
// The comm it names becomes its thread's; null, with a problem, where it names no comm or rank.
Comm* read_comm_line(InfoLine& in, std::string* problem) {
  std::string_view body = in.msg;
  std::string_view fn;
  if (!starts(body, "comm ")) fn = token(&body);
  std::string_view id;
  Comm scratch;
  while (!body.empty()) {
    std::string_view key = token(&body);
    if (key == "-" || key.empty() || key == "Init" || key == "Destroy") break;
    std::string_view value = token(&body);
    int v = 0;
    if (key == "comm")
      id = value;
    else if (key == "rank" && to_num(value, &v))
      scratch.rank = v;
    else if (key == "nranks" && to_num(value, &v))
      scratch.nranks = v;
    else if (key == "cudaDev" && to_num(value, &v))
      scratch.cuda_dev = v;
    else if (key == "nvmlDev" && to_num(value, &v))
      scratch.nvml_dev = v;
    else if (key == "busId")
      scratch.bus_id = value;
    else if (key == "commId")
      scratch.comm_id = value;
  }
  if (id.empty() || scratch.rank < 0) {
    *problem = "communicator line without comm and rank: " + std::string(in.msg);
    return nullptr;
  }
  Comm& c = comm(in.p, id);
  in.thread_comms[in.thread] = c.id;
  if (!fn.empty() && c.init_fn.empty()) c.init_fn = fn;
  c.rank = scratch.rank;
  if (scratch.nranks >= 0) c.nranks = scratch.nranks;
  if (scratch.cuda_dev >= 0) c.cuda_dev = scratch.cuda_dev;
  if (scratch.nvml_dev >= 0) c.nvml_dev = scratch.nvml_dev;
  if (!scratch.bus_id.empty()) c.bus_id = scratch.bus_id;
  if (!scratch.comm_id.empty()) c.comm_id = scratch.comm_id;
  return &c;
}

std::string on_init_start(InfoLine& in) {
  std::string problem;
  if (Comm* c = read_comm_line(in, &problem)) {
    c->init_started = true;
    c->t_init_start = in.t;
  }
  return problem;
}

std::string on_init_complete(InfoLine& in) {
  std::string problem;
  if (Comm* c = read_comm_line(in, &problem)) {
    c->init_complete = true;
    c->t_init_complete = in.t;
    c->init_tid = in.tid;
  }
  return problem;
}

std::string on_destroy(InfoLine& in) {
  std::string problem;
  if (Comm* c = read_comm_line(in, &problem)) c->destroyed = true;
  return problem;
}

// "Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total 0.53 (kernels 0.23, alloc 0.03, ...)", or before
// 2.28 "Init timings: rank ..." without the function.
std::string on_init_timings(InfoLine& in) {
  std::string_view body = in.rest;
  InitTimings it;
  if (starts(body, " - ")) {
    size_t colon = body.find(':');
    if (colon == std::string_view::npos) return "Init timings line without ':'";
    it.fn = body.substr(3, colon - 3);
    body.remove_prefix(colon + 1);
  } else if (starts(body, ":")) {
    body.remove_prefix(1);
  } else {
    return "Init timings line of an unknown form";
  }
  size_t open = body.find('('), close = body.rfind(')');
  std::string_view head = body.substr(0, open);
  std::string_view r = token(&head), rv = token(&head), n = token(&head), nv = token(&head), tot = token(&head),
                   tv = token(&head);
  double total = 0;
  int rank = 0, nranks = 0;
  if (open == std::string_view::npos || close == std::string_view::npos || close < open || r != "rank" ||
      n != "nranks" || tot != "total" || !to_num(rv, &rank) || !to_num(nv, &nranks) || !to_num(tv, &total) ||
      !parse_pairs(body.substr(open + 1, close - open - 1), &it.parts))
    return "malformed Init timings line";
  it.parts["total"] = total;
  current_or_unknown(in).init_timings = std::move(it);
  return {};
}

// "Bootstrap timings total 0.01 (create 0.00, send 0.00, recv 0.00, ring 0.00, delay 0.00)"
std::string on_bootstrap_timings(InfoLine& in) {
  std::string_view body = in.rest;
  std::string_view tv = token(&body);
  double total = 0;
  size_t open = body.find('('), close = body.rfind(')');
  std::map<std::string, double> parts;
  if (!to_num(tv, &total) || open == std::string_view::npos || close == std::string_view::npos || close < open ||
      !parse_pairs(body.substr(open + 1, close - open - 1), &parts))
    return "malformed Bootstrap timings line";
  parts["total"] = total;
  current_or_unknown(in).bootstrap_timings = std::move(parts);
  return {};
}

// "24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer"
std::string on_channel_counts(InfoLine& in) {
  int v[5] = {-1, -1, -1, -1, -1};
  std::string_view body = in.msg;
  for (int i = 0; i < 5; ++i) {
    std::string_view num = token(&body);
    if (!to_num(num, &v[i])) return "malformed channel count line";
    size_t comma = body.find(',');
    body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
  }
  Comm& c = current_or_unknown(in);
  c.coll_channels = v[0];
  c.collnet_channels = v[1];
  c.nvls_channels = v[2];
  c.p2p_channels = v[3];
  c.p2p_channels_per_peer = v[4];
  return {};
}

std::string on_rings_connected(InfoLine& in) {
  if (Comm* c = current(in)) c->rings_connected = true;
  return {};
}

std::string on_trees_connected(InfoLine& in) {
  if (Comm* c = current(in)) c->trees_connected = true;
  return {};
}

// "NCCL version 2.28.9+cuda12.9"
std::string on_version(InfoLine& in) {
  std::string_view body = in.rest;
  in.p.nccl_version = token(&body);
  return {};
}

// "cudaDriverVersion 13000"
std::string on_cuda_driver(InfoLine& in) {
  if (!to_num(in.rest, &in.p.cuda_driver)) return "malformed cudaDriverVersion line";
  return {};
}

// Any other line. A collective's ("AllReduce: opCount 0 ... comm 0x...") tells which communicator its thread works
// on: lazy connections follow it. Only lines whose first word ends in ':' are searched, to keep the common path short.
std::string on_other(InfoLine& in) {
  std::string_view msg = in.msg;
  size_t at = 0;
  if (!starts(msg, "comm 0x")) {
    size_t first_space = msg.find(' ');
    if (first_space == std::string_view::npos || first_space == 0 || msg[first_space - 1] != ':') return {};
    at = msg.find("comm 0x", first_space);
  }
  if (at == std::string_view::npos) return {};
  std::string_view rest = msg.substr(at + 5);
  std::string_view id = token(&rest);
  for (auto& c : in.p.comms)
    if (c.id == id) {
      in.thread_comms[in.thread] = c.id;
      break;
    }
  return {};
}

// Each kind of INFO line NCCL writes, by what it starts or ends with, and its handler. Tried in this order, the first
// that matches reads the line: a channel line ending in "Destroy COMPLETE" is a channel line. None: on_other.
struct InfoHandler {
  enum class Match { prefix, suffix } match;
  std::string_view text;
  std::string (*read)(InfoLine&);  // what was wrong with the line (a problem), or nothing

  // Whether msg is this handler's kind of line; *rest is then msg without the text. The first (last) character is
  // compared before the rest: most lines are none of these, and this keeps their cost to a load and a compare.
  bool finds(std::string_view msg, std::string_view* rest) const {
    const size_t n = text.size();
    if (msg.size() < n) return false;
    if (match == Match::prefix) {
      if (msg.front() != text.front() || msg.substr(0, n) != text) return false;
      *rest = msg.substr(n);
    } else {
      if (msg.back() != text.back() || msg.substr(msg.size() - n) != text) return false;
      *rest = msg.substr(0, msg.size() - n);
    }
    return true;
  }
};
using Match = InfoHandler::Match;
constexpr InfoHandler kInfoHandlers[] = {
    {Match::prefix, "Channel ", on_channel},
    {Match::suffix, "- Init START", on_init_start},
    {Match::suffix, "- Init COMPLETE", on_init_complete},
    {Match::suffix, "Destroy COMPLETE", on_destroy},
    {Match::prefix, "Init timings", on_init_timings},
    {Match::prefix, "Bootstrap timings total ", on_bootstrap_timings},
    {Match::suffix, "p2p channels per peer", on_channel_counts},
    {Match::prefix, "Connected all rings", on_rings_connected},
    {Match::prefix, "Connected all trees", on_trees_connected},
    {Match::prefix, "NCCL version ", on_version},
    {Match::prefix, "cudaDriverVersion ", on_cuda_driver},
};

}  // namespace

int Comm::lazy_connection_count() const {
  int n = 0;
  for (const auto& [k, v] : lazy_connections) n += v;
  return n;
}
int Comm::init_count() const {
  int n = 0;
  for (const auto& [k, v] : init_connections) n += v;
  return n;
}

std::optional<double> parse_timestamp(std::string_view s, size_t* consumed) {
  // [YYYY-MM-DD HH:MM:SS] or with .fraction before the bracket; then one space.
  if (s.size() < 22 || s[0] != '[' || s[5] != '-' || s[8] != '-' || s[11] != ' ' || s[14] != ':' || s[17] != ':')
    return std::nullopt;
  int y, mo, d, h, mi, se;
  if (!to_num(s.substr(1, 4), &y) || !to_num(s.substr(6, 2), &mo) || !to_num(s.substr(9, 2), &d) ||
      !to_num(s.substr(12, 2), &h) || !to_num(s.substr(15, 2), &mi) || !to_num(s.substr(18, 2), &se))
    return std::nullopt;
  size_t i = 20;
  double frac = 0;
  if (s[i] == '.') {
    size_t j = i + 1;
    double scale = 0.1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
      frac += (s[j] - '0') * scale;
      scale /= 10;
      ++j;
    }
    i = j;
  }
  if (i >= s.size() || s[i] != ']') return std::nullopt;
  ++i;
  if (i < s.size() && s[i] == ' ') ++i;
  *consumed = i;
  return static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                             h * 3600 + mi * 60 + se) +
         frac;
}

void Parser::problem(const std::string& what) {
  ++out_.problem_count;
  if (out_.problems.size() < kMaxProblems) out_.problems.push_back({file_, line_no_, what});
}

Process& Parser::process(std::string_view host, int pid) {
  if (pid == last_pid_ && host == last_host_) return out_.processes[last_index_];
  std::string key(host);
  key += ':';
  key += std::to_string(pid);
  auto [it, inserted] = process_index_.try_emplace(key, out_.processes.size());
  if (inserted) {
    Process p;
    p.host = host;
    p.pid = pid;
    out_.processes.push_back(std::move(p));
  }
  last_host_ = host;
  last_pid_ = pid;
  last_index_ = it->second;
  return out_.processes[it->second];
}

void Parser::feed(std::string_view chunk) {
  while (!chunk.empty()) {
    const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
    const size_t n = nl ? static_cast<size_t>(static_cast<const char*>(nl) - chunk.data()) : chunk.size();
    // A line is kept up to kMaxLine bytes: memory stays bounded whatever the input.
    if (!partial_.empty() || !nl || n > kMaxLine) {
      const size_t room = kMaxLine - partial_.size();
      cut_ = cut_ || n > room;
      partial_.append(chunk.substr(0, std::min(n, room)));
      if (!nl) return;
      line(partial_);
      if (cut_) problem("a line longer than " + std::to_string(kMaxLine) + " bytes; its end was not read");
      partial_.clear();
      cut_ = false;
    } else {
      line(chunk.substr(0, n));
    }
    chunk.remove_prefix(n + 1);
  }
}

void Parser::finish() {
  if (!partial_.empty()) {
    std::string last = std::move(partial_);
    partial_.clear();
    line(last);
  }
}

void Parser::next_file(std::string file_name) {
  finish();
  file_ = std::move(file_name);
  line_no_ = 0;
}

void Parser::line(std::string_view s) {
  ++line_no_;
  ++out_.lines;
  out_.bytes += s.size() + 1;
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  if (s.empty()) return;
  std::optional<double> t;
  if (s[0] == '[') {
    size_t used = 0;
    t = parse_timestamp(s, &used);
    if (!t) return;  // not a line we know
    s.remove_prefix(used);
  }
  // host:pid:tid
  size_t sp = s.find(' ');
  if (sp == std::string_view::npos) return;
  std::string_view hpt = s.substr(0, sp);
  size_t c2 = hpt.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return;
  size_t c1 = hpt.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos) return;
  int pid = 0, tid = 0;
  if (!to_num(hpt.substr(c1 + 1, c2 - c1 - 1), &pid) || !to_num(hpt.substr(c2 + 1), &tid)) return;
  std::string_view rest = s.substr(sp + 1);
  if (!rest.empty() && rest[0] == '[' && !skip_tag(&rest)) return;  // [cudaDev]
  if (starts(rest, "[Rank ") && !skip_tag(&rest)) return;           // 2.29+: [Rank N] before the level
  if (starts(rest, "NCCL INFO ")) {
    std::string_view msg = rest.substr(10);
    if (starts(msg, "[Rank ")) skip_tag(&msg);
    Process& p = process(hpt.substr(0, c1), pid);
    ++p.lines;
    p.timestamps |= t.has_value();
    on_info(p, tid, msg, t);
    return;
  }
  size_t warn = rest.find(" NCCL WARN ");
  if (warn == std::string_view::npos) {
    if (starts(rest, "NCCL WARN "))
      warn = 0;
    else
      return;
  }
  Process& p = process(hpt.substr(0, c1), pid);
  ++p.lines;
  ++p.warning_count;
  if (p.warnings.size() < kMaxWarnings) {
    std::string_view where = rest.substr(0, warn);
    std::string_view msg = rest.substr(warn == 0 ? 10 : warn + 11);
    p.warnings.push_back({line_no_, std::string(where), std::string(msg), t});
  }
}

void Parser::on_info(Process& p, int tid, std::string_view msg, std::optional<double> t) {
  InfoLine in{p, tid, thread_key(p.pid, tid), msg, msg, t, thread_comm_};
  std::string (*read)(InfoLine&) = on_other;
  for (const InfoHandler& h : kInfoHandlers)
    if (h.finds(msg, &in.rest)) {
      read = h.read;
      break;
    }
  if (std::string what = read(in); !what.empty()) problem(what);
}

LogSummary Parser::take() {
  finish();
  LogSummary s = std::move(out_);
  out_ = LogSummary{};
  process_index_.clear();
  last_pid_ = -1;
  last_host_.clear();
  thread_comm_.clear();
  return s;
}

LogSummary parse_files(const std::vector<std::string>& paths) {
  Parser parser;
  std::string buf(1 << 20, '\0');
  for (const auto& path : paths) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw InputError(path + ": cannot read (" + std::strerror(errno) + "); give an NCCL debug log file");
    parser.next_file(path);
    size_t n;
    uint64_t total = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
      if ((total += n) > kMaxInputBytes) {
        std::fclose(f);
        throw InputError(path + ": more than the " + std::to_string(kMaxInputBytes >> 30) +
                         " GiB coldstart reads from NCCL logs; give the log files themselves");
      }
      parser.feed(std::string_view(buf.data(), n));
    }
    bool failed = std::ferror(f);
    std::fclose(f);
    if (failed) throw InputError(path + ": read error; give a readable NCCL debug log file");
    parser.finish();
  }
  return parser.take();
}

}  // namespace coldstart::nccllog
