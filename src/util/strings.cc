#include "util/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace coldstart {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

namespace {
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
}  // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), ascii_upper);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

namespace {
std::optional<double> parse_number_prefix(std::string_view s, std::string_view* unit) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  std::string num(s.substr(0, i));
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(v)) return std::nullopt;
  *unit = s.substr(i);
  return v;
}
}  // namespace

std::optional<uint64_t> parse_size(std::string_view s) {
  s = trim(s);
  std::string_view unit;
  auto v = parse_number_prefix(s, &unit);
  if (!v) return std::nullopt;
  double mult = 0;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "K" || unit == "KiB" || unit == "k")
    mult = 1024.0;
  else if (unit == "M" || unit == "MiB")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else
    return std::nullopt;
  double bytes = *v * mult;
  if (bytes < 0 || bytes > 1e15 || bytes != std::floor(bytes)) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<double> parse_duration(std::string_view s) {
  s = trim(s);
  std::string_view unit;
  auto v = parse_number_prefix(s, &unit);
  if (!v) return std::nullopt;
  if (unit.empty() || unit == "s") return *v;
  if (unit == "ms") return *v / 1000.0;
  if (unit == "m" || unit == "min") return *v * 60.0;
  return std::nullopt;
}

std::string hex(const void* data, size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

std::optional<std::string> unhex(std::string_view s) {
  if (s.size() % 2) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(s.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

std::string format_bytes(double bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0 || bytes == std::floor(bytes)) return fmt::format("{:.0f} {}", bytes, units[u]);
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

std::string format_ms(double v) { return std::abs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v); }

std::string format_seconds(double seconds) {
  if (seconds < 1) return format_ms(seconds * 1e3) + " ms";
  return (seconds == std::floor(seconds) ? fmt::format("{:.0f}", seconds) : fmt::format("{:.1f}", seconds)) + " s";
}

std::string host_port(std::string_view host, int port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

std::string format_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "–") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string format_size(uint64_t bytes) {
  for (auto [shift, unit] : {std::pair{30, "GiB"}, {20, "MiB"}, {10, "KiB"}})
    if (bytes && bytes % (uint64_t{1} << shift) == 0) return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes);
}

std::string format_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

std::string normalize_bus_id(std::string_view text) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  int used = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &used) == 4 &&
      static_cast<size_t>(used) == s.size())
    return format_bus_id(domain, bus, device, function);
  return s;
}

std::string redact_url_credentials(std::string_view url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  const size_t end = url.find_first_of("/?#", start);
  const size_t at = url.substr(0, end).rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(url);
  return std::string(url.substr(0, start)) + "***" + std::string(url.substr(at));
}

std::string shown(std::string_view value, size_t max_bytes) {
  std::string out;
  const bool cut = value.size() > max_bytes;
  const std::string_view v = cut ? value.substr(0, max_bytes) : value;
  for (size_t i = 0; i < v.size(); ++i) {
    const auto u = static_cast<unsigned char>(v[i]);
    if (v[i] == '\n')
      out += "\\n";
    else if (v[i] == '\t')
      out += "\\t";
    else if (v[i] == '\r')
      out += "\\r";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else if (u == 0xc2 && i + 1 < v.size() && static_cast<unsigned char>(v[i + 1]) >= 0x80 &&
             static_cast<unsigned char>(v[i + 1]) <= 0x9f)  // C1 controls (U+0080-U+009F) in UTF-8
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(v[++i]));
    else
      out += v[i];
  }
  if (cut) out += fmt::format("...({} bytes)", value.size());
  return out;
}

}  // namespace coldstart
