// Small parsers shared by the rank programs in nccl/: lists of integers, byte sizes, and an interleaved order of runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace coldstart::micro {

// "0,1" -> {0, 1}. False with *error naming the input when an item is not a non-negative integer.
bool parse_int_list(const std::string& text, std::vector<int>* out, std::string* error);
// "10MiB", "10M", "4k", "1GiB", "4096" (binary units, as the lab reads them: util/strings.h) -> bytes. False with
// *error naming the input on anything else.
bool parse_size(const std::string& text, uint64_t* out, std::string* error);
std::vector<std::string> split_list(const std::string& text);  // "a,b" -> {"a", "b"}
std::string format_size(uint64_t bytes);                       // 10485760 -> "10MiB", 4 -> "4B"

// Trials rounds of every one of `count` configurations, each round in its own shuffled order (seeded, so the same
// seed gives the same order): returns (configuration, trial) pairs.
struct Slot {
  int config;
  int trial;
};
std::vector<Slot> interleaved_plan(int count, int trials, uint64_t seed);

}  // namespace coldstart::micro
