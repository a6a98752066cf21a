#include "nccllog/parser.h"

#include <charconv>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace coldstart::nccllog {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

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

Comm& Parser::comm(Process& p, std::string_view id) {
  for (auto& c : p.comms)
    if (c.id == id) return c;
  Comm c;
  c.id = id;
  p.comms.push_back(std::move(c));
  return p.comms.back();
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
  if (!rest.empty() && rest[0] == '[') {  // [cudaDev]
    size_t close = rest.find("] ");
    if (close == std::string_view::npos) return;
    rest.remove_prefix(close + 2);
  }
  if (starts(rest, "[Rank ")) {  // 2.29+: [Rank N] before the level
    size_t close = rest.find("] ");
    if (close == std::string_view::npos) return;
    rest.remove_prefix(close + 2);
  }
  if (starts(rest, "NCCL INFO ")) {
    std::string_view msg = rest.substr(10);
    if (starts(msg, "[Rank ")) {
      size_t close = msg.find("] ");
      if (close != std::string_view::npos) msg.remove_prefix(close + 2);
    }
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
  const uint64_t tkey = thread_key(p.pid, tid);
  auto current = [&]() -> Comm* {
    auto it = thread_comm_.find(tkey);
    if (it != thread_comm_.end())
      for (auto& c : p.comms)
        if (c.id == it->second) return &c;
    return p.comms.empty() ? nullptr : &p.comms.back();
  };

  if (starts(msg, "Channel ")) {
    size_t via = msg.find(" via ");
    if (via == std::string_view::npos) return;  // ring listings, not connections
    std::string_view transport = msg.substr(via + 5);
    while (!transport.empty() && transport.back() == ' ') transport.remove_suffix(1);
    if (transport.size() > 48) transport = transport.substr(0, 48);
    if (transport.empty()) return problem("channel connection without a transport");
    Comm* c = current();
    if (!c) c = &comm(p, "?");
    if (c->init_complete) {
      c->lazy_connections[std::string(transport)]++;
      if (t) {
        if (!c->t_first_lazy) c->t_first_lazy = t;
        c->t_last_lazy = t;
      }
    } else {
      c->init_connections[std::string(transport)]++;
    }
    return;
  }
  if (ends(msg, "- Init START") || ends(msg, "- Init COMPLETE") || ends(msg, "- Destroy COMPLETE") ||
      ends(msg, "Destroy COMPLETE")) {
    std::string_view body = msg;
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
    if (id.empty() || scratch.rank < 0) return problem("communicator line without comm and rank: " + std::string(msg));
    Comm& c = comm(p, id);
    thread_comm_[tkey] = c.id;
    if (!fn.empty() && c.init_fn.empty()) c.init_fn = fn;
    c.rank = scratch.rank;
    if (scratch.nranks >= 0) c.nranks = scratch.nranks;
    if (scratch.cuda_dev >= 0) c.cuda_dev = scratch.cuda_dev;
    if (scratch.nvml_dev >= 0) c.nvml_dev = scratch.nvml_dev;
    if (!scratch.bus_id.empty()) c.bus_id = scratch.bus_id;
    if (!scratch.comm_id.empty()) c.comm_id = scratch.comm_id;
    if (ends(msg, "Init START")) {
      c.init_started = true;
      c.t_init_start = t;
    } else if (ends(msg, "Init COMPLETE")) {
      c.init_complete = true;
      c.t_init_complete = t;
      c.init_tid = tid;
    } else {
      c.destroyed = true;
    }
    return;
  }
  if (starts(msg, "Init timings")) {
    std::string_view body = msg.substr(12);
    InitTimings it;
    if (starts(body, " - ")) {
      size_t colon = body.find(':');
      if (colon == std::string_view::npos) return problem("Init timings line without ':'");
      it.fn = body.substr(3, colon - 3);
      body.remove_prefix(colon + 1);
    } else if (starts(body, ":")) {
      body.remove_prefix(1);
    } else {
      return problem("Init timings line of an unknown form");
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
      return problem("malformed Init timings line");
    it.parts["total"] = total;
    Comm* c = current();
    if (!c) c = &comm(p, "?");
    c->init_timings = std::move(it);
    return;
  }
  if (starts(msg, "Bootstrap timings total ")) {
    std::string_view body = msg.substr(24);
    std::string_view tv = token(&body);
    double total = 0;
    size_t open = body.find('('), close = body.rfind(')');
    std::map<std::string, double> parts;
    if (!to_num(tv, &total) || open == std::string_view::npos || close == std::string_view::npos || close < open ||
        !parse_pairs(body.substr(open + 1, close - open - 1), &parts))
      return problem("malformed Bootstrap timings line");
    parts["total"] = total;
    Comm* c = current();
    if (!c) c = &comm(p, "?");
    c->bootstrap_timings = std::move(parts);
    return;
  }
  if (ends(msg, "p2p channels per peer")) {
    // "24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer"
    int v[5] = {-1, -1, -1, -1, -1};
    std::string_view body = msg;
    for (int i = 0; i < 5; ++i) {
      std::string_view num = token(&body);
      if (!to_num(num, &v[i])) return problem("malformed channel count line");
      size_t comma = body.find(',');
      body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
    }
    Comm* c = current();
    if (!c) c = &comm(p, "?");
    c->coll_channels = v[0];
    c->collnet_channels = v[1];
    c->nvls_channels = v[2];
    c->p2p_channels = v[3];
    c->p2p_channels_per_peer = v[4];
    return;
  }
  if (starts(msg, "Connected all rings") || starts(msg, "Connected all trees")) {
    Comm* c = current();
    if (!c) return;
    (msg[14] == 'r' ? c->rings_connected : c->trees_connected) = true;
    return;
  }
  if (starts(msg, "NCCL version ")) {
    std::string_view body = msg.substr(13);
    p.nccl_version = token(&body);
    return;
  }
  if (starts(msg, "cudaDriverVersion ")) {
    if (!to_num(msg.substr(18), &p.cuda_driver)) problem("malformed cudaDriverVersion line");
    return;
  }
  // A collective's line ("AllReduce: opCount 0 ... comm 0x...") tells which communicator this thread works on:
  // lazy connections follow it. Only lines whose first word ends in ':' are searched, to keep the common path short.
  size_t at = 0;
  if (!starts(msg, "comm 0x")) {
    size_t first_space = msg.find(' ');
    if (first_space == std::string_view::npos || first_space == 0 || msg[first_space - 1] != ':') return;
    at = msg.find("comm 0x", first_space);
  }
  if (at != std::string_view::npos) {
    std::string_view rest = msg.substr(at + 5);
    std::string_view id = token(&rest);
    for (auto& c : p.comms)
      if (c.id == id) {
        thread_comm_[tkey] = c.id;
        break;
      }
  }
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
