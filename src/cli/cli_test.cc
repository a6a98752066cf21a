// The binary end to end: dry runs, the no-GPU message, and one-line errors for bad input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include "analysis/fixes.h"
#include "analysis/verdict.h"
#include "gpu/cuda.h"
#include "model/result.h"
#include "util/fs.h"
#include "util/run_for_test.h"
#include "util/scratch_for_test.h"

namespace coldstart {
namespace {

using test_cli::Output;
using test_cli::run;
using test_cli::run_shell;

std::string fresh_dir() { return test_scratch::fresh_path("cli"); }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}
}  // namespace

TEST(Cli, DryRunStartsEveryRankWithItsViewAndWritesResults) {
  std::string out = fresh_dir();
  Output o = run("bench --dry-run --gpus 2 --trials 2 --seed 5 --out " + out);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("results: " + out + "/results.json"), std::string::npos);
  BenchResults r = load_bench_results(out + "/results.json");
  ASSERT_EQ(r.trials.size(), 12u);
  EXPECT_EQ(r.context.seed, 5u);
  for (const auto& t : r.trials) {
    EXPECT_EQ(t.status, TrialStatus::ok) << t.message;
    const Config& c = r.configs[static_cast<size_t>(t.config_id)];
    ASSERT_EQ(t.ranks.size(), 2u);
    const RankResult& r1 = t.ranks[1];
    if (c.mode == Mode::isolated) {
      EXPECT_EQ(r1.cuda_visible_devices, "1");
    } else if (c.mode == Mode::shared) {
      EXPECT_EQ(r1.device_index, 1);
    } else if (c.mode == Mode::remap) {
      EXPECT_EQ(r1.cuda_visible_devices, "1,0");
    }
    EXPECT_EQ(t.ranks[0].uid_hash, r1.uid_hash);
    EXPECT_EQ(r1.exit, "exit 0");
  }
  // Every finished trial is also in results.jsonl, one line each.
  std::ifstream jsonl(out + "/results.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(jsonl, line)) ++n;
  EXPECT_EQ(n, 12);
}

TEST(Cli, DryRunWithUuidsAndExplicitLists) {
  std::string out = fresh_dir();
  Output o =
      run("bench --dry-run --trials 1 --modes isolated --visible 'GPU-aa,GPU-bb/GPU-bb,GPU-aa' "
          "--devices GPU-aa,GPU-bb --out " +
          out);
  ASSERT_EQ(o.status, 0) << o.text;
  BenchResults r = load_bench_results(out + "/results.json");
  ASSERT_EQ(r.configs.size(), 2u * 2u);
  for (const auto& t : r.trials) {
    const Config& c = r.configs[static_cast<size_t>(t.config_id)];
    if (c.mode == Mode::explicit_list) {
      EXPECT_EQ(t.ranks[1].cuda_visible_devices, "GPU-bb,GPU-aa");
      EXPECT_EQ(t.ranks[1].device_index, 0);
    } else {
      EXPECT_EQ(t.ranks[0].cuda_visible_devices, "GPU-aa");
    }
  }
}

TEST(Cli, EnvAxisReachesTheRanksAndEmptyMeansUnset) {
  std::string out = fresh_dir();
  // The lab's own NCCL_CUMEM_ENABLE=1 must be removed for the "(unset)" configuration.
  Output o = run("bench --dry-run --gpus 1 --trials 1 --modes shared --env NCCL_CUMEM_ENABLE=,0 --out " + out,
                 "NCCL_CUMEM_ENABLE=1");
  ASSERT_EQ(o.status, 0) << o.text;
  BenchResults r = load_bench_results(out + "/results.json");
  EXPECT_EQ(r.context.inherited_env.at("NCCL_CUMEM_ENABLE"), "1");
  ASSERT_EQ(r.configs.size(), 2u);
  EXPECT_FALSE(r.configs[0].env[0].value.has_value());
  EXPECT_EQ(*r.configs[1].env[0].value, "0");
}

// The worker's CUDA schedule (COLDSTART_CUDA_SCHEDULE, an --env axis like any): a value it does not know fails the
// rank with one line naming the variable and its values, also in a dry run.
TEST(Cli, AnUnknownCudaScheduleFailsTheRankWithItsValues) {
  std::string out = fresh_dir();
  Output o =
      run("bench --dry-run --gpus 1 --trials 1 --modes shared --env COLDSTART_CUDA_SCHEDULE=blocking,sometimes "
          "--out " +
          out);
  EXPECT_EQ(o.status, 1) << o.text;
  BenchResults r = load_bench_results(out + "/results.json");
  ASSERT_EQ(r.trials.size(), 2u);
  for (const auto& t : r.trials) {
    const bool bad = *r.configs[static_cast<size_t>(t.config_id)].env[0].value == "sometimes";
    EXPECT_EQ(t.status, bad ? TrialStatus::error : TrialStatus::ok) << t.message;
    if (bad)
      EXPECT_NE(t.ranks[0].error.find("COLDSTART_CUDA_SCHEDULE=sometimes: give spin, yield or blocking"),
                std::string::npos)
          << t.ranks[0].error;
  }
}

// One GPU is a node too: a one-rank job connects nothing, so bench plans 2 ranks on it and says why, unless one rank
// a GPU is asked for.
TEST(Cli, OneGpuRunsTwoRanksOnItAndSaysWhy) {
  std::string out = fresh_dir();
  Output o = run("bench --dry-run --gpus 1 --trials 1 --modes shared --out " + out);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("one GPU: a one-rank job has no peers"), std::string::npos) << o.text;
  EXPECT_EQ(load_bench_results(out + "/results.json").spec.ranks_per_gpu, 2);
  std::string one = fresh_dir();
  o = run("bench --dry-run --gpus 1 --ranks-per-gpu 1 --trials 1 --modes shared --out " + one);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_EQ(o.text.find("one GPU:"), std::string::npos) << o.text;
  EXPECT_EQ(load_bench_results(one + "/results.json").spec.ranks_per_gpu, 1);
}

TEST(Cli, WithoutAGpuBenchSaysSoInOneLine) {
  if (gpu::probe_cuda().available) GTEST_SKIP() << "this machine has a GPU";
  std::string out = fresh_dir();
  Output o = run("bench --out " + out);
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(lines(o.text), 1) << o.text;
  EXPECT_NE(o.text.find("no NVIDIA"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("coldstart doctor"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing is written when nothing ran";
}

TEST(Cli, BadInputIsOneLineNamingTheInputWithStatus2) {
  std::string existing = fresh_dir();
  std::filesystem::create_directories(existing);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bench --dry-run --modes shared,torchrun", "--modes"},
      {"bench --dry-run --modes explicit", "--visible"},
      {"bench --dry-run --env NCCL_CUMEM_ENABLE", "--env"},
      {"bench --dry-run --env CUDA_VISIBLE_DEVICES=0", "--env CUDA_VISIBLE_DEVICES"},
      {"bench --dry-run --size 12parsecs", "--size"},
      {"bench --dry-run --timeout never", "--timeout"},
      {"bench --dry-run --collective allreduce", "--collective"},
      {"bench --dry-run --groups split:0", "--groups"},
      {"bench --dry-run --trials 0", "--trials"},
      {"bench --dry-run --devices 0,0", "--devices"},
      {"bench --dry-run --devices 0,1 --gpus 3", "--gpus 3"},
      {"bench --dry-run --visible 0/1@x", "--visible"},
      {"bench --dry-run --out " + existing, "--out"},
      {"bench --dry-run --bind not-an-ip", "--bind"},
      {"bench --dry-run --trials five", "--trials"},
      {"bench --dry-run --modes isolated,isolated", "bench: modes[1]: isolated twice"},
      {"bench --dry-run --env NCCL_ALGO=Ring --env NCCL_ALGO=Tree", "bench: env[1].key: NCCL_ALGO twice"},
      {"bench --dry-run --iters 2000000", "--iters 2000000 --warmup 5: give 0 to 1000000 each"},
      {"bench --no-such-flag", "no-such-flag"},
      {"frobnicate", "frobnicate"},
      {"worker --rank 0 --nranks 1 --coord 127.0.0.1:1", "COLDSTART_TOKEN"},
      {"worker --rank 0 --nranks 1 --coord nowhere", "--coord"},
      {"bench --resume " + existing, "no run.json there"},
      {"bench --dry-run --out /proc/coldstart-cannot-write", "--out /proc/coldstart-cannot-write"},
      {"bench --resume " + existing + " --trials 3", "give no other flag (--trials)"},
      {"bench --dry-run --worker jax", "--worker jax"},
      {"bench --dry-run --launcher slurm", "--launcher slurm"},
      {"bench --dry-run --modes ray", "--launcher ray"},
      {"bench --dry-run --ray-address 1.2.3.4:6379", "--ray-address needs --launcher ray"},
      {"report " + existing + "/none.json", "none.json"},
      {"doctor --launcher ray", "--launcher needs --ranks N"},
      // doctor net: targets, durations, files and flags that go with --peers.
      {"doctor net ftp://example.com/", "unknown scheme 'ftp'"},
      {"doctor net example.com", "no port"},
      {"doctor net example.com:70000", "port '70000'"},
      {"doctor net ::1:80", "IPv6 address needs brackets"},
      {"doctor net https://127.0.0.1/ --timeout forever", "--timeout forever"},
      {"doctor net https://127.0.0.1/ --timeout 0s", "--timeout 0s"},
      {"doctor net https://127.0.0.1/ --timeout 2h", "--timeout 2h"},
      {"doctor net --compare " + existing + " " + existing, "not a regular file"},
      {"doctor net --compare /nonexistent/a.json /nonexistent/b.json", "/nonexistent/a.json"},
      {"doctor net --root /nonexistent https://127.0.0.1/", "--root /nonexistent"},
      {"doctor net --cacert /nonexistent https://127.0.0.1/", "--cacert /nonexistent"},
      {"doctor net --wait 5s https://127.0.0.1/", "--wait goes with --peers"},
      {"doctor net --peers", "no launcher in the environment (torchrun's RANK/WORLD_SIZE"},
      {"doctor net --peers --wait 0s", "--wait 0s"},
      {"doctor net --compare a.json b.json --timeout 5s", "--timeout shapes a new run"},
      // Counts and durations within limits that fit their types.
      {"bench --dry-run --timeout 9999999999", "--timeout"},
      {"bench --dry-run --trials 2000000000", "--trials 2000000000"},
      {"doctor --ranks 100000", "--ranks 100000"},
      {"bench --dry-run --gpus 0", "--gpus"},
      {"bench --dry-run --gpus ''", "--gpus"},
      {"bench --dry-run --gpus 2 --visible 0/1/0", "--visible gives 3 lists for 2 ranks"},
      {"bench --dry-run --gpus 1 --visible 0/0/0", "--ranks-per-gpu"},
      {"bench --dry-run --ranks-per-gpu 0", "--ranks-per-gpu 0"},
      {"bench --dry-run --launcher ray --ranks-per-gpu 2", "--ranks-per-gpu with --launcher ray"},
      {"worker --rank 0 --nranks 1 --coord 127.0.0.1:1 --timeout -1", "worker --timeout"},
      {"bench --dry-run --env COLDSTART_TOKEN=x", "--env COLDSTART_TOKEN"},
      {"bench --dry-run --startup gpu:1s", "--startup gpu:1s"},
      {"bench --dry-run --fix cumem", "--fix cumem"},
      {"bench --dry-run --fix prewarm,prewarm", "asked for twice"},
      {"bench --dry-run --bind 8.8.8.8 --out " + existing + "/bound", "--bind 8.8.8.8"},
      {"bench --dry-run --out /etc/hostname", "exists and is a file"},
  };
  for (const auto& [args, needle] : cases) {
    Output o = run(args, "env -u COLDSTART_TOKEN");
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    EXPECT_EQ(lines(o.text), 1) << args << "\n" << o.text;
    EXPECT_NE(o.text.find(needle), std::string::npos) << args << "\n" << o.text;
  }
  // An error before the first trial leaves no folder behind.
  EXPECT_FALSE(std::filesystem::exists(existing + "/bound"));
  Output rank = run("worker", "env RANK=-1 WORLD_SIZE=2");
  EXPECT_EQ(rank.status, 2) << rank.text;
  EXPECT_NE(rank.text.find("RANK=-1: expected a whole number from 0"), std::string::npos) << rank.text;
}

}  // namespace coldstart

namespace coldstart {

// Runs started in the same second get folders of their own.
TEST(Cli, DefaultOutputFoldersAreUniqueForRunsOfTheSameSecond) {
  std::string dir = fresh_dir();
  std::filesystem::create_directories(dir);
  std::string one = std::string("(") + COLDSTART_BIN +
                    " bench --dry-run --gpus 2 --trials 1 --modes isolated --seed 1 >/dev/null 2>&1; echo $?)";
  Output o = run_shell("cd " + dir + " && { " + one + " & " + one + " & wait; }");
  EXPECT_EQ(o.text, "0\n0\n") << o.text;
  int folders = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/coldstart-out")) {
    ++folders;
    EXPECT_TRUE(std::filesystem::exists(e.path() / "results.json")) << e.path();
  }
  EXPECT_EQ(folders, 2);
}

// A reader that goes away (`bench ... 2>&1 | head -1`) ends the run like Ctrl-C: results kept, status 130.
TEST(Cli, AClosedPipeEndsTheRunLikeCtrlCAndKeepsTheResults) {
  std::string out = fresh_dir();
  Output o = run_shell("bash -c '" + std::string(COLDSTART_BIN) +
                       " bench --dry-run --gpus 2 --trials 40 --modes isolated --out " + out +
                       " 2>&1 | head -1 >/dev/null; echo ${PIPESTATUS[0]}'");
  EXPECT_EQ(o.text, "130\n") << o.text;
  EXPECT_TRUE(std::filesystem::exists(out + "/results.json"));
}

// Endless inputs stop at the documented limits with one line, in bounded memory.
TEST(Cli, EndlessInputsStopAtTheirLimitWithOneLine) {
  const std::string dir = fresh_dir();
  std::filesystem::create_directories(dir);
  const std::string big = dir + "/big.json";  // sparse: one byte past what report reads from a file
  std::ofstream(big).close();
  std::filesystem::resize_file(big, kMaxResultsBytes + 1);
  for (const auto& [args, needle] :
       std::vector<std::pair<std::string, std::string>>{{"nccllog /dev/zero", "more than the 4 GiB"},
                                                        {"report /dev/zero", "/dev/zero: a device, not a regular file"},
                                                        {"report " + big, "larger than the 512 MiB"}}) {
    Output o = run(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    EXPECT_EQ(lines(o.text), 1) << args << "\n" << o.text;
    EXPECT_NE(o.text.find(needle), std::string::npos) << args << "\n" << o.text;
  }
  std::filesystem::remove_all(dir);
}

// A FIFO where a file belongs is refused at once (never waited on for a writer), in one line naming it.
TEST(Cli, AFifoWhereAFileBelongsIsRefusedAtOnce) {
  const std::string dir = fresh_dir();
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/results.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& args : {"report " + fifo, "doctor --from " + fifo, "doctor --facts " + fifo,
                                  "doctor net --compare " + fifo + " " + fifo}) {
    Output o = run(args, "timeout 20");
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    EXPECT_EQ(lines(o.text), 1) << args << "\n" << o.text;
    EXPECT_NE(o.text.find(fifo), std::string::npos) << args << "\n" << o.text;
    EXPECT_NE(o.text.find("not a regular file"), std::string::npos) << args << "\n" << o.text;
  }
  std::filesystem::remove_all(dir);
}

// doctor's launch plan runs ranks in a scratch folder, and leaves nothing.
TEST(CliDoctor, APlanLeavesNothingBehind) {
  std::string tmp = fresh_dir();
  std::filesystem::create_directories(tmp);
  Output o = run("doctor --ranks 2 --mode isolated", "env TMPDIR=" + tmp);
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << std::filesystem::directory_iterator(tmp)->path();
}

TEST(CliTrace, PassesTheCommandsExitStatusOnAndWritesItsFiles) {
  std::string out = fresh_dir();
  Output o = run("trace --out " + out + " -- /bin/sh -c 'exit 3'");
  EXPECT_EQ(o.status, 3) << o.text;
  EXPECT_NE(o.text.find("command: exit 3"), std::string::npos);
  EXPECT_NE(o.text.find("runtime_env"), std::string::npos);  // how to pass it to a running Ray cluster
  EXPECT_TRUE(std::filesystem::exists(out + "/trace.json"));
  EXPECT_TRUE(std::filesystem::exists(out + "/budget.json"));
}

TEST(CliTrace, TheCommandSeesTheTracingEnvironment) {
  std::string out = fresh_dir();
  Output o = run("trace --out " + out +
                 " -- /bin/sh -c 'echo inj=$CUDA_INJECTION64_PATH dir=$COLDSTART_TRACE_DIR "
                 "nccl=$NCCL_DEBUG file=$NCCL_DEBUG_FILE threads=$NCCL_SET_THREAD_NAME'");
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("libcoldstart_cupti.so dir=/"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("nccl=INFO file=/"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("nccl.%h.%p.log threads=1"), std::string::npos) << o.text;
}

// A command that ignores the SIGTERM coldstart forwards gets SIGKILL after the grace period, and what was recorded
// is still merged.
TEST(CliTrace, ACommandThatIgnoresSigtermIsKilledAfterTheGraceAndItsFilesAreWritten) {
  std::string out = fresh_dir();
  std::string script = std::string(COLDSTART_BIN) + " trace --grace 1s --out " + out +
                       " -- /bin/sh -c 'trap \"\" TERM; sleep 30' 2>&1 & pid=$!; sleep 1; kill -TERM $pid; wait $pid; "
                       "echo status=$?";
  auto t0 = std::chrono::steady_clock::now();
  FILE* p = ::popen(script.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  ::pclose(p);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 10) << text;
  EXPECT_NE(text.find("sent SIGKILL"), std::string::npos) << text;
  EXPECT_NE(text.find("status=137"), std::string::npos) << text;  // the command's end: 128 + SIGKILL
  EXPECT_TRUE(std::filesystem::exists(out + "/trace.json"));
  EXPECT_TRUE(std::filesystem::exists(out + "/budget.json"));
}

TEST(CliTrace, BadCommandsAndATakenInjectionSlotAreOneLineErrors) {
  std::string out = fresh_dir();
  Output missing = run("trace --out " + out + " -- no-such-command-xyz");
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(lines(missing.text), 1) << missing.text;
  EXPECT_NE(missing.text.find("cannot start 'no-such-command-xyz'"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out));
  Output absent = run("trace --out " + out + " -- /nonexistent/cmd");
  EXPECT_EQ(absent.status, 2) << absent.text;
  EXPECT_EQ(lines(absent.text), 1) << absent.text;
  EXPECT_FALSE(std::filesystem::exists(out));  // nothing ran: nothing left
  Output taken = run("trace --out " + out + " -- /bin/true", "CUDA_INJECTION64_PATH=/x/other.so");
  EXPECT_EQ(taken.status, 2);
  EXPECT_EQ(lines(taken.text), 1) << taken.text;
  EXPECT_NE(taken.text.find("CUDA_INJECTION64_PATH is already set"), std::string::npos);
}

}  // namespace coldstart

namespace coldstart {

TEST(CliDoctor, WithoutAGpuItStillReportsAndExitsZero) {
  if (gpu::probe_cuda().available) GTEST_SKIP() << "this machine has a GPU";
  Output o = run("doctor");
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("Layer 3"), std::string::npos);
  EXPECT_NE(o.text.find("No NVIDIA GPU or driver"), std::string::npos);
  Output plan = run("doctor --ranks 2 --mode isolated --json");
  EXPECT_EQ(plan.status, 0) << plan.text;
  auto j = nlohmann::json::parse(plan.text);
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][1]["cuda_visible_devices"], "1");
  Output measure = run("doctor --measure");
  EXPECT_EQ(measure.status, 1) << measure.text;
  EXPECT_EQ(lines(measure.text), 1) << measure.text;
  EXPECT_NE(measure.text.find("doctor --measure runs a short bench, which needs a GPU"), std::string::npos)
      << measure.text;
}

// The verdict bench ends with (render_verdicts of the fix ranking, src/cli/bench_cmd.cc) is what doctor --from says of
// the same results, line for line: on a recorded run of 8 ranks on one H100, the patch's switch and cuMem as axes.
TEST(CliDoctor, FromAResultGivesTheVerdictBenchEndsWith) {
  const std::string file =
      std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-12-05-h100x1-growth/growth-8/results.json";
  const std::string verdict = analysis::render_verdicts(analysis::rank_fixes(load_bench_results(file)));
  ASSERT_NE(verdict.find("shortest ready: patched-nccl"), std::string::npos) << verdict;
  Output o =
      run("doctor --from " + file + " --facts " + std::string(COLDSTART_SOURCE_DIR) + "/tests/data/facts/h200x2.json");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find(verdict), std::string::npos) << o.text << "\nbench's verdict:\n" << verdict;
}

TEST(CliDoctor, RecordedFactsAndBadInput) {
  std::string facts = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-29-h200x2/doctor/doctor-cvd1.json";
  Output o = run("doctor --facts " + facts);
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("Masked ranks with cuMem on"), std::string::npos);
  EXPECT_NE(o.text.find("NVIDIA H200"), std::string::npos);
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"doctor --mode torchrun", "--mode"},
           {"doctor --facts /etc/hostname", "--facts"},
           {"doctor --from /nonexistent/results.json", "/nonexistent/results.json"},
           {"doctor --ranks -1", "--ranks"}}) {
    Output bad = run(args);
    EXPECT_EQ(bad.status, 2) << args << "\n" << bad.text;
    EXPECT_EQ(lines(bad.text), 1) << args << "\n" << bad.text;
    EXPECT_NE(bad.text.find(needle), std::string::npos) << args << "\n" << bad.text;
  }
}

}  // namespace coldstart

namespace coldstart {

// A flag that would be ignored, or a value that would be read as another, is refused in one line (status 2).
TEST(Cli, FlagsThatWouldChangeNothingAreRefused) {
  std::string results = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-30-h200x2/fixes-nccl-cpu.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"trace --nccl-log off,light -- /bin/true", "--nccl-log off,light: unknown; use off, light or full\n"},
      {"doctor --mode explicit --ranks 2", "--mode explicit needs --visible"},
      {"doctor --ranks 2 --mode isolated --visible 0/1", "--visible goes with --mode explicit"},
      {"doctor --ranks 0", "--ranks 0: give 1 to 256"},
      {"doctor --mode shared", "--mode needs --ranks N"},
      {"doctor --visible 0/1", "--visible needs --ranks N"},
      {"doctor --ranks 2 --ray-address 1.2.3.4:6379", "--ray-address needs --launcher ray"},
      {"doctor --measure --from " + results, "--measure and --from both give measurements"},
      {"doctor --measure --facts " + results, "--measure measures this machine and --facts describes another"},
      {"report " + results + " --trial -1 --html /tmp/x.html", "--trial -1: give a trial index"},
      {"report " + results + " --trial 3", "--trial goes with --html"},
      {"report " + results + " --threshold 5", "--threshold goes with --compare"},
      {"bench --dry-run --seed -1", "--seed -1: give a whole number from 1"},
      {"bench --dry-run --seed 0", "--seed 0"},
      {"bench --dry-run --seed 18446744073709551616", "--seed 18446744073709551616"},
      {"worker", "RANK=0 is set but WORLD_SIZE is not"},
  };
  for (const auto& [args, needle] : cases) {
    Output o = run(args, "env -u WORLD_SIZE RANK=0");
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    EXPECT_EQ(lines(o.text), 1) << args << "\n" << o.text;
    EXPECT_NE(o.text.find(needle), std::string::npos) << args << "\n" << o.text;
  }
  // The largest seed is taken as given.
  std::string out = fresh_dir();
  Output big = run("bench --dry-run --gpus 1 --trials 1 --modes shared --seed 18446744073709551615 --out " + out);
  ASSERT_EQ(big.status, 0) << big.text;
  EXPECT_EQ(load_bench_results(out + "/results.json").context.seed, 18446744073709551615u);
}

// doctor --mode explicit plans the lists --visible gives.
TEST(CliDoctor, ExplicitListsArePlannedFromVisible) {
  Output o = run("doctor --ranks 2 --mode explicit --visible 1,0/0,1@1 --json");
  ASSERT_EQ(o.status, 0) << o.text;
  auto j = nlohmann::json::parse(o.text);
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][0]["cuda_visible_devices"], "1,0");
  EXPECT_EQ(j["ranks"][1]["cuda_visible_devices"], "0,1");
  EXPECT_EQ(j["ranks"][1]["device_index"], 1);
}

}  // namespace coldstart

namespace coldstart {

// A dry run plans for the GPUs the lab is shown, checks --nccl-lib paths, and says what it does not write.
TEST(Cli, DryRunTakesTheLabsVisibleDevicesAndChecksLibraryPaths) {
  if (gpu::probe_cuda().available) GTEST_SKIP() << "this machine has a GPU (CUDA's own list applies)";
  std::string out = fresh_dir();
  Output o = run("bench --dry-run --trials 1 --modes isolated --env NCCL_CUMEM_ENABLE= --out " + out,
                 "env CUDA_VISIBLE_DEVICES=3,5");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("no report.html or timeline.json"), std::string::npos) << o.text;
  EXPECT_FALSE(std::filesystem::exists(out + "/report.html"));
  BenchResults r = load_bench_results(out + "/results.json");
  ASSERT_EQ(r.trials.size(), 1u);
  ASSERT_EQ(r.trials[0].ranks.size(), 2u);
  EXPECT_EQ(r.trials[0].ranks[0].cuda_visible_devices, "3");
  EXPECT_EQ(r.trials[0].ranks[1].cuda_visible_devices, "5");
  Output lib = run("bench --dry-run --trials 1 --nccl-lib /nonexistent/libnccl.so.2 --out " + fresh_dir());
  EXPECT_EQ(lib.status, 2) << lib.text;
  EXPECT_EQ(lines(lib.text), 1) << lib.text;
  EXPECT_NE(lib.text.find("--nccl-lib /nonexistent/libnccl.so.2: no such file"), std::string::npos) << lib.text;
  // A dry run refuses what a real run could not load: here a file that is no library.
  const std::string text = fresh_dir() + ".so";
  write_file_atomic(text, "not a library\n");
  Output not_lib = run("bench --dry-run --trials 1 --nccl-lib " + text + " --out " + fresh_dir());
  EXPECT_EQ(not_lib.status, 2) << not_lib.text;
  EXPECT_NE(not_lib.text.find("--nccl-lib " + text + ": not a shared library"), std::string::npos) << not_lib.text;
  std::filesystem::remove(text);
}

// Without a GPU, bench under the default folder name leaves no coldstart-out/ behind.
TEST(Cli, WithoutAGpuBenchLeavesNoDefaultFolder) {
  if (gpu::probe_cuda().available) GTEST_SKIP() << "this machine has a GPU";
  std::string dir = fresh_dir();
  std::filesystem::create_directories(dir);
  Output o = run_shell("cd " + dir + " && " + COLDSTART_BIN + " bench");
  EXPECT_EQ(o.status, 1) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << std::filesystem::directory_iterator(dir)->path();
}

// An interpreter that finds no site-packages (no torch, no Ray): python3 -S.
std::string python_without_site_packages() {
  std::string dir = fresh_dir();
  std::filesystem::create_directories(dir);
  std::string path = dir + "/python3";
  std::ofstream(path) << "#!/bin/sh\nexec python3 -S \"$@\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// --worker torch without torch is refused once, before any trial, in one line.
TEST(Cli, TorchWorkerWithoutTorchIsRefusedBeforeTheFirstTrial) {
  std::string out = fresh_dir();
  Output o = run("bench --dry-run --worker torch --gpus 2 --trials 3 --out " + out,
                 "env COLDSTART_PYTHON=" + python_without_site_packages());
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
  EXPECT_NE(o.text.find("--worker torch: torch is not installed for"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("-m pip install torch"), std::string::npos) << o.text;
  EXPECT_FALSE(std::filesystem::exists(out));  // no trial ran
}

// Starting a local Ray instance takes a while: doctor says so before it waits.
TEST(CliDoctor, SaysSoWhileItStartsRay) {
  Output o = run("doctor --ranks 2 --launcher ray", "env COLDSTART_PYTHON=" + python_without_site_packages());
  EXPECT_EQ(o.status, 2) << o.text;  // Ray is not importable by this interpreter
  auto note = o.text.find("doctor: starting a local Ray instance with 2 GPU(s) (this can take a minute)...");
  EXPECT_NE(note, std::string::npos) << o.text;
  EXPECT_LT(note, o.text.find("Ray is not installed")) << o.text;
}

// --ranks-per-gpu 2,4: a series of jobs, one run each in OUT/ranks-K with its own count; counts out of order, and
// --resume of a whole series, are one line each.
TEST(Cli, ARankSeriesIsOneRunPerCount) {
  const std::string out = fresh_dir();
  Output o = run("bench --dry-run --gpus 1 --ranks-per-gpu 2,4 --modes isolated --trials 1 --out " + out);
  ASSERT_EQ(o.status, 0) << o.text;
  for (int k : {2, 4}) {
    const BenchResults r = load_bench_results(out + "/ranks-" + std::to_string(k) + "/results.json");
    EXPECT_EQ(r.spec.ranks_per_gpu, k);
    ASSERT_FALSE(r.trials.empty());
    EXPECT_EQ(r.trials[0].ranks.size(), static_cast<size_t>(k));
  }
  EXPECT_NE(o.text.find("series: 4 rank(s) per GPU, " + out + "/ranks-4"), std::string::npos) << o.text;
  std::filesystem::remove_all(out);
  for (const auto& [args, needle] :
       std::vector<std::pair<std::string, std::string>>{{"bench --dry-run --ranks-per-gpu 4,2", "ascending"},
                                                        {"bench --dry-run --ranks-per-gpu 2,2", "each once"},
                                                        {"bench --dry-run --ranks-per-gpu 2,99", "1 to 64"},
                                                        {"bench --ranks-per-gpu 2,4 --resume " + out, "--resume"}}) {
    Output bad = run(args);
    EXPECT_EQ(bad.status, 2) << args << "\n" << bad.text;
    EXPECT_EQ(lines(bad.text), 1) << args << "\n" << bad.text;
    EXPECT_NE(bad.text.find(needle), std::string::npos) << args << "\n" << bad.text;
  }
}

// An interrupted run counts the trials it finished, not the one it stopped.
TEST(Cli, AnInterruptedRunCountsOnlyItsFinishedTrials) {
  std::string out = fresh_dir();
  // Interrupted once some trials are done (a fixed sleep raced a fast machine, which finished them all first).
  Output o = run_shell(std::string(COLDSTART_BIN) + " bench --dry-run --gpus 2 --trials 20000 --modes isolated --out " +
                       out + " 2>&1 >/dev/null & pid=$!; for i in $(seq 100); do [ \"$(wc -l <" + out +
                       "/results.jsonl 2>/dev/null)\" -gt 5 ] 2>/dev/null && break; sleep 0.1; done; kill -INT $pid; "
                       "wait $pid; echo status=$?");
  ASSERT_NE(o.text.find("status=130"), std::string::npos) << o.text;
  BenchResults r = load_bench_results(out + "/results.json");
  size_t finished = 0;
  for (const auto& t : r.trials) finished += t.status != TrialStatus::interrupted;
  EXPECT_NE(o.text.find("interrupted; " + std::to_string(finished) + " finished trial(s) are in " + out),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("bench --resume " + out), std::string::npos) << o.text;
}

}  // namespace coldstart

namespace coldstart {

// A file of another kind names the command that writes it, and where it belongs.
TEST(Cli, AFileOfAnotherKindNamesItsWriter) {
  const std::string dir = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/";
  const std::string doctor = dir + "2026-11-29-h200x2/doctor/doctor.json";
  const std::string results = dir + "2026-11-30-h200x2/default.json";
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"report " + doctor, "a coldstart.doctor/1 file (from coldstart doctor --json), not a bench result"},
           {"doctor --from " + doctor, "a coldstart.doctor/1 file (from coldstart doctor --json)"},
           {"doctor --facts " + results, "--facts " + results + ": a bench result, not a fact set; give it to --from"},
           {"doctor --facts /nonexistent/facts.json", "--facts /nonexistent/facts.json"}}) {
    Output o = run(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    EXPECT_EQ(lines(o.text), 1) << args << "\n" << o.text;
    EXPECT_NE(o.text.find(needle), std::string::npos) << args << "\n" << o.text;
  }
}

// A fix's configuration records, in results.json, the variables its ranks ran with.
TEST(Cli, FixConfigurationsRecordTheirEnv) {
  std::string out = fresh_dir();
  Output o = run("bench --dry-run --gpus 1 --trials 1 --modes shared --fix none,cumem-off --out " + out);
  ASSERT_EQ(o.status, 0) << o.text;
  BenchResults r = load_bench_results(out + "/results.json");
  ASSERT_EQ(r.configs.size(), 2u);
  EXPECT_TRUE(r.configs[0].env.empty());
  ASSERT_EQ(r.configs[1].env.size(), 1u);
  EXPECT_EQ(r.configs[1].env[0].key, "NCCL_CUMEM_ENABLE");
  EXPECT_EQ(r.configs[1].env[0].value, "0");
  EXPECT_EQ(r.configs[1].key(), "shared|nccl=|log=light|trace=off|fix=cumem-off");
}

}  // namespace coldstart
