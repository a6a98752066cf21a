#include "micro/args.h"

#include <cctype>
#include <random>

#include "util/strings.h"

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
  auto bytes = coldstart::parse_size(text);  // the lab's spellings, so that a size means the same in every program
  if (!bytes) {
    *error = "'" + text + "': expected a size such as 4096, 64KiB, 10MiB or 1GiB";
    return false;
  }
  *out = *bytes;
  return true;
}

std::string format_size(uint64_t bytes) {
  std::string text = coldstart::format_size(bytes);
  return text.back() == 'B' ? text : text + "B";  // "4B": the check names say bytes where there is no unit
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
