// The worker's command line (worker/args.h): to_argv and from_argv are inverses, and
// tests/data/golden/worker_args.json, which python/tests/test_worker_args.py holds the torch probe to, is what this
// side says: every flag with its type and default, a rank's argv with every flag set, and what --startup's spellings
// mean. After changing a flag, run this test with COLDSTART_UPDATE_GOLDEN=1 to write the golden, then the Python one.
#include "worker/args.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "model/spec.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::worker {
namespace {
using nlohmann::json;

const std::string kGolden = std::string(COLDSTART_SOURCE_DIR) + "/tests/data/golden/worker_args.json";

// Every flag set to a value that is not its default.
WorkerArgs fully_set(bool launcher_flags) {
  WorkerArgs a;
  a.rank = 3;
  a.nranks = 8;
  a.device = 2;
  a.trial = 41;
  a.coord = "10.0.0.7:29400";
  a.collective = "broadcast";
  a.size = 4096;
  a.groups = "split:4";
  a.iters = 7;
  a.warmup = 2;
  a.nccl_lib = "/opt/nccl/lib/libnccl.so.2";
  a.timeout_s = 150.5;
  a.dry_run = true;
  a.startup = "h2d-pinned:1GiB/16MiB";
  a.prewarm = true;
  a.split_share = true;
  a.coverage = true;
  if (launcher_flags) {
    a.out = "runs/external";
    a.bind = "0.0.0.0";
    a.mask = true;
  }
  return a;
}

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  if constexpr (std::is_integral_v<T>) return "int";
  if constexpr (std::is_floating_point_v<T>) return "float";
  return "str";
}

json values_of(const WorkerArgs& a) {
  json out = json::object();
  WorkerArgs::each_flag(a, [&](const WorkerFlag& flag, const auto& value) { out[std::string(flag.name)] = value; });
  return out;
}

json startup_json(const std::string& text) {
  Startup s = Startup::parse(text).value();
  const bool copies = s.kind == Startup::Kind::h2d || s.kind == Startup::Kind::h2d_pinned;
  const char* kind =
      copies ? (s.kind == Startup::Kind::h2d ? "h2d" : "h2d-pinned") : (s.kind == Startup::Kind::cpu ? "cpu" : "none");
  return {{"text", text},
          {"kind", kind},
          {"amount", copies ? static_cast<double>(s.bytes) : s.seconds},
          {"piece", s.piece}};
}

json golden_now() {
  json flags = json::array();
  const WorkerArgs defaults;
  WorkerArgs::each_flag(defaults, [&](const WorkerFlag& flag, const auto& value) {
    flags.push_back({{"name", std::string(flag.name)},
                     {"type", type_name<std::decay_t<decltype(value)>>()},
                     {"default", value},
                     {"launcher_only", flag.launcher_only}});
  });
  const WorkerArgs rank = fully_set(false);
  json startups = json::array();
  for (const char* text : {"none", "cpu:300ms", "cpu:2s", "h2d:4GiB", "h2d:1GiB/16MiB", "h2d-pinned:32GiB",
                           "h2d-pinned:2GiB/256MiB", "h2d:512MiB/1MiB"})
    startups.push_back(startup_json(text));
  return {{"flags", flags},
          {"rank_example", {{"argv", rank.to_argv()}, {"values", values_of(rank)}}},
          {"startup", startups}};
}

TEST(WorkerArgs, TheDefaultsMakeNoArgv) { EXPECT_TRUE(WorkerArgs{}.to_argv().empty()); }

TEST(WorkerArgs, FromArgvReadsWhatToArgvWrites) {
  for (bool launcher_flags : {false, true}) {
    const WorkerArgs a = fully_set(launcher_flags);
    EXPECT_EQ(WorkerArgs::from_argv(a.to_argv()), a) << launcher_flags;
  }
  EXPECT_EQ(WorkerArgs::from_argv({}), WorkerArgs{});
}

TEST(WorkerArgs, AFullySetArgvNamesEveryFlag) {
  const auto argv = fully_set(true).to_argv();
  const WorkerArgs defaults;
  WorkerArgs::each_flag(defaults, [&](const WorkerFlag& flag, const auto&) {
    EXPECT_NE(std::find(argv.begin(), argv.end(), flag.name), argv.end())
        << flag.name << ": give it a value other than its default in fully_set";
  });
}

TEST(WorkerArgs, FromArgvRefusesWhatIsNotAWorkerFlag) {
  EXPECT_THROW(WorkerArgs::from_argv({"--ranks", "2"}), InputError);
  EXPECT_THROW(WorkerArgs::from_argv({"--rank", "two"}), InputError);
  EXPECT_THROW(WorkerArgs::from_argv({"--rank"}), InputError);
}

TEST(WorkerArgs, TheGoldenFileIsWhatThisSideSays) {
  const json now = golden_now();
  if (const char* update = std::getenv("COLDSTART_UPDATE_GOLDEN"); update && *update) {
    std::ofstream(kGolden) << now.dump(1) << "\n";
    GTEST_SKIP() << "wrote " << kGolden;
  }
  EXPECT_EQ(json::parse(read_file(kGolden)), now)
      << kGolden << " is stale: run this test with COLDSTART_UPDATE_GOLDEN=1, then python/tests/test_worker_args.py";
}

}  // namespace
}  // namespace coldstart::worker
