// Small string helpers shared by the parsers.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coldstart {

std::vector<std::string> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
// ASCII case: "eth0" from "ETH0", "HTTP_PROXY" from "http_proxy"; other bytes (UTF-8) as they are.
std::string lower(std::string_view s);
std::string upper(std::string_view s);
// Equal but for ASCII case ("Docker" and "docker").
bool iequals(std::string_view a, std::string_view b);

std::optional<int64_t> parse_int(std::string_view s);
// Whether `s` is one or more ASCII digits 0-9 and nothing else (no sign, space or other script's digits).
bool all_digits(std::string_view s);
// "64MiB", "64M", "1G", "4096", "1.5GiB": binary units; returns bytes, or nothing when malformed.
std::optional<uint64_t> parse_size(std::string_view s);
// The inverse, exactly: "64MiB", "1GiB", "4096".
std::string format_size(uint64_t bytes);
// "30", "30s", "500ms", "2m": returns seconds.
std::optional<double> parse_duration(std::string_view s);

std::string hex(const void* data, size_t n);
// Lower-case hex to bytes; nothing when the text is not hex of even length.
std::optional<std::string> unhex(std::string_view s);

// 64 MiB, 1.5 GiB, 512 B.
std::string format_bytes(double bytes);
// A duration for messages: "1 ms", "120 s", "2.5 s".
std::string format_seconds(double seconds);
// Ranks as a short list with ranges: "0, 2–5, 9" (sorted input).
std::string format_ranks(const std::vector<int>& ranks);
// "10.0.0.1:29500", "[fd00::1]:29500": an address and port as a URL or a socket's peer is written (IPv6 in brackets).
std::string host_port(std::string_view host, int port);
// A duration or rate for tables: "463", "6.5" (no decimals from 100 up).
std::string format_ms(double v);

// A PCI bus id in coldstart's one form, "0000:00:06.0" (4-digit domain, lower-case hex), whoever read it: CUDA's
// properties, NVML, torch. normalize_bus_id rewrites other spellings ("00000000:00:06.0", upper case) and returns
// anything it cannot parse unchanged.
// A URL with its credentials hidden: "http://user:secret@proxy:3128" -> "http://***@proxy:3128" (a proxy variable's
// value, before it is printed or recorded).
std::string redact_url_credentials(std::string_view url);

// A value the user gave (or a whole message), fit for one line: control characters (newline, tab, ESC, DEL, C1) written
// as \n, \t, \x1b, \x7f, \u0085, so no value can break a message into lines or draw on a terminal; past max_bytes it
// is cut, and the cut says how long the value was ("...(100000 bytes)"). Other bytes (UTF-8) as they are.
std::string shown(std::string_view value, size_t max_bytes = 200);

std::string format_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function = 0);
std::string normalize_bus_id(std::string_view text);

}  // namespace coldstart
