#include "micro/args.h"

#include <cctype>
#include <random>

namespace coldstart::micro {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

bool parse_int_list(const std::string& text, std::vector<int>* out, std::string* error) {
  out->clear();
  for (const auto& item : split_list(text)) {
    bool digits = !item.empty() && item.size() <= 9;
    for (char c : item) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (!digits) {
      *error = "'" + text + "': expected a comma-separated list of non-negative integers, e.g. 0,1";
      return false;
    }
    out->push_back(std::stoi(item));
  }
  return true;
}

bool parse_size(const std::string& text, uint64_t* out, std::string* error) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit = text.substr(i);
  uint64_t scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "k" || unit == "K" || unit == "KiB") scale = 1ull << 10;
  if (unit == "M" || unit == "MiB") scale = 1ull << 20;
  if (unit == "G" || unit == "GiB") scale = 1ull << 30;
  if (i == 0 || i > 12 || scale == 0) {
    *error = "'" + text + "': expected a size such as 4096, 64KiB, 10MiB or 1GiB";
    return false;
  }
  *out = std::stoull(text.substr(0, i)) * scale;
  return true;
}

std::string format_size(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

std::vector<Slot> interleaved_plan(int count, int trials, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<Slot> plan;
  for (int t = 0; t < trials; ++t) {
    std::vector<int> order(count);
    for (int i = 0; i < count; ++i) order[i] = i;
    for (int i = count - 1; i > 0; --i) {  // Fisher-Yates, not std::shuffle: the same order on every library
      int j = static_cast<int>(random() % static_cast<uint64_t>(i + 1));
      std::swap(order[i], order[j]);
    }
    for (int c : order) plan.push_back({c, t});
  }
  return plan;
}

}  // namespace coldstart::micro
