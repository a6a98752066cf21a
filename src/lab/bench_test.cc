// The lab end to end on the CPU, with real dry-run workers: NCCL logging reaches every rank's environment (never
// overriding the user's), and a rank's NCCL log becomes part of its result.
#include "lab/bench.h"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "lab/flags.h"
#include "lab/visibility.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "util/error.h"
#include "util/fs.h"
#include "util/random.h"
#include "util/scratch_for_test.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {
const std::string kFixtures = std::string(COLDSTART_SOURCE_DIR) + "/tests/data/nccl-2.28.9-h200x2/";

// A dry run's options: two ranks of coldstart's own worker, a fresh folder.
BenchOptions dry_options(BenchOptions opts = {}) {
  opts.out_dir = test_scratch::fresh_path("bench");
  opts.gpus = 2;
  if (opts.worker_command.empty()) opts.worker_command = {COLDSTART_BIN, "worker"};
  return opts;
}

BenchResults dry(BenchSpec spec, std::vector<std::string> worker = {}, BenchOptions opts = {}) {
  spec.dry_run = true;
  spec.trials = 1;
  spec.modes = {Mode::isolated};
  spec.env = {parse_env_axis("NCCL_CUMEM_ENABLE=")};
  opts.worker_command = worker;
  return run_bench(spec, dry_options(opts));
}

int system_rc(const std::string& cmd) { return std::system(cmd.c_str()); }
}  // namespace

TEST(BenchLogging, LightLoggingReachesEveryRank) {
  BenchResults r = dry({});
  ASSERT_EQ(r.trials.size(), 1u);
  for (const auto& rank : r.trials[0].ranks) {
    EXPECT_EQ(rank.env.at("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(rank.env.at("NCCL_DEBUG_SUBSYS"), "INIT,BOOTSTRAP,ENV,COLL");
    EXPECT_EQ(rank.env.at("NCCL_DEBUG_TIMESTAMP_LEVELS"), "WARN,INFO");
    // Into the rank's output, as NCCL writes with no file named: the log opens no fd in the rank it measures.
    EXPECT_EQ(rank.env.count("NCCL_DEBUG_FILE"), 0u);
  }
}

TEST(BenchLogging, TheUsersOwnSettingsWinAndOffSetsNothing) {
  ::setenv("NCCL_DEBUG", "WARN", 1);
  BenchSpec spec;
  spec.nccl_logs = {NcclLog::light, NcclLog::off};
  BenchResults r = dry(spec);
  ::unsetenv("NCCL_DEBUG");
  ASSERT_EQ(r.configs.size(), 2u);
  for (const auto& t : r.trials) {
    const auto& env = t.ranks[0].env;
    EXPECT_EQ(env.at("NCCL_DEBUG"), "WARN");
    if (r.configs[static_cast<size_t>(t.config_id)].nccl_log == NcclLog::off)
      EXPECT_EQ(env.count("NCCL_DEBUG_SUBSYS"), 0u);
    else
      EXPECT_EQ(env.count("NCCL_DEBUG_SUBSYS"), 1u);
  }
  EXPECT_NE(r.configs[1].label().find("nccl-log=off"), std::string::npos);
}

TEST(BenchLogging, EachRanksLogBecomesPartOfItsResult) {
  // A worker that writes a real NCCL log to its standard output, as NCCL does with no file named, among lines of its
  // own, then runs as a dry-run rank.
  std::string script = "echo a line of the worker; cat " + kFixtures +
                       "isolated-cumem-default.pid70$1.log; echo another; shift; exec " + COLDSTART_BIN +
                       " worker \"$@\"";
  // $1 picks the fixture: rank 0 gets pid708 (not masked), rank 1 pid709 (masked).
  std::vector<std::string> worker{
      "/bin/sh", "-c", "r=$(echo \"$@\" | sed 's/.*--rank \\([0-9]*\\).*/\\1/'); set -- $((r+8)) \"$@\"; " + script,
      "sh"};
  BenchResults r = dry({}, worker);
  ASSERT_EQ(r.trials.size(), 1u);
  ASSERT_EQ(r.trials[0].status, TrialStatus::ok) << r.trials[0].message;
  const auto& r0 = r.trials[0].ranks[0];
  const auto& r1 = r.trials[0].ranks[1];
  ASSERT_TRUE(r0.nccl && r1.nccl);
  EXPECT_FALSE(r0.nccl->renumbered);
  EXPECT_TRUE(r1.nccl->renumbered);
  EXPECT_EQ(r1.nccl->version, "2.28.9+cuda13.0");
  EXPECT_EQ(r1.nccl->lazy_connection_count(), 24);
  EXPECT_DOUBLE_EQ(r1.nccl->init_timings_ms.at("kernels"), 230);
  const ConfigSummary& s = r.summaries.at(0);
  EXPECT_EQ(s.renumbered_ranks, 1);  // rank 1 is numbered differently by CUDA and NVML
  ASSERT_NE(s.phase("init.kernels"), nullptr);
  EXPECT_DOUBLE_EQ(s.phase("init.kernels")->median, 235);
  EXPECT_DOUBLE_EQ(s.lazy_connections.median, 24);

  // With the log off, NCCL lines the rank wrote on its own (its user's NCCL_DEBUG) are not the lab's log.
  BenchSpec off;
  off.nccl_logs = {NcclLog::off};
  BenchResults o = dry(off, worker);
  ASSERT_EQ(o.trials.size(), 1u);
  ASSERT_EQ(o.trials[0].status, TrialStatus::ok) << o.trials[0].message;
  EXPECT_FALSE(o.trials[0].ranks[0].nccl);
}

}  // namespace coldstart::lab

namespace coldstart::lab {

TEST(BenchChecks, RanksWithDifferentUniqueIdsAreNamedNotCalledAHang) {
  TrialResult t;
  t.status = TrialStatus::hang;
  t.ranks.resize(3);
  for (int r = 0; r < 3; ++r) {
    t.ranks[static_cast<size_t>(r)].rank = r;
    t.ranks[static_cast<size_t>(r)].uid_hash = r == 2 ? "bbbb" : "aaaa";
  }
  EXPECT_TRUE(name_unique_id_mixup(t));
  EXPECT_EQ(t.status, TrialStatus::error);
  EXPECT_EQ(t.message, "ranks were handed different NCCL unique ids (rank 0 aaaa, rank 1 aaaa, rank 2 bbbb)");
  TrialResult same;
  same.status = TrialStatus::ok;
  same.ranks.resize(2);
  same.ranks[0].uid_hash = same.ranks[1].uid_hash = "aaaa";
  EXPECT_FALSE(name_unique_id_mixup(same));
  EXPECT_EQ(same.status, TrialStatus::ok);
}

}  // namespace coldstart::lab

namespace coldstart::lab {

TEST(BenchChecks, AHangIsStoppedAndEachRankIsNamedWithItsPhase) {
  // Rank 1 never starts its worker; rank 0 gets through the unique id and waits at the init barrier.
  std::string script =
      std::string("case \"$*\" in *'--rank 1 '*) exec sleep 30;; esac; exec ") + COLDSTART_BIN + " worker \"$@\"";
  BenchSpec spec;
  spec.timeout_s = 3;
  BenchResults r = dry(spec, {"/bin/sh", "-c", script, "sh"});
  ASSERT_EQ(r.trials.size(), 1u);
  const TrialResult& t = r.trials[0];
  EXPECT_EQ(t.status, TrialStatus::hang);
  EXPECT_NE(t.message.find("rank 0 in sync_init"), std::string::npos) << t.message;
  EXPECT_EQ(t.ranks[0].last_phase, "sync_init");
  EXPECT_TRUE(t.ranks[0].in_phase);
  EXPECT_EQ(t.ranks[1].exit, "stopped by the lab");
  // What each thread was doing when the watchdog fired, from /proc: rank 0's worker waits on the coordinator's
  // socket, rank 1 (sleep) in its sleep.
  auto main_thread = std::find_if(t.ranks[0].threads.begin(), t.ranks[0].threads.end(),
                                  [](const ThreadState& th) { return th.tid == th.pid; });
  ASSERT_NE(main_thread, t.ranks[0].threads.end());
  EXPECT_EQ(main_thread->state, "S (sleeping)");
  EXPECT_TRUE(main_thread->syscall == "poll" || main_thread->syscall == "ppoll") << describe(*main_thread);
  ASSERT_EQ(t.ranks[1].threads.size(), 1u);
  EXPECT_EQ(t.ranks[1].threads[0].name, "sleep");
  EXPECT_EQ(t.ranks[1].threads[0].syscall, "clock_nanosleep");
  EXPECT_NE(t.message.find("[sleep: S clock_nanosleep]"), std::string::npos) << t.message;
  EXPECT_FALSE(all_ok(r));
}

}  // namespace coldstart::lab

namespace coldstart::lab {

// The ranks are told where the coordinator listens, not loopback: --bind 127.0.0.2 is another address of this host.
TEST(BenchBind, RanksAreToldTheBindAddress) {
  BenchOptions opts;
  opts.bind = "127.0.0.2";
  BenchResults r = dry({}, {}, opts);
  ASSERT_EQ(r.trials.size(), 1u);
  EXPECT_EQ(r.trials[0].status, TrialStatus::ok) << r.trials[0].message;
}

// Ranks in another network namespace (another host, as far as sockets go) reach the lab through a veth pair: with
// the coordinator bound to the link's address, and bound to every address with --advertise naming the link's.
TEST(BenchBind, RanksOnAnotherHostReachTheCoordinator) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string id = random_hex(3), ns = "csr" + id, here = "vh" + id, there = "vn" + id;
  ASSERT_EQ(system_rc("ip netns add " + ns + " && ip link add " + here + " type veth peer name " + there + " netns " +
                      ns + " && ip addr add 10.231.9.1/24 dev " + here + " && ip link set " + here + " up && ip -n " +
                      ns + " addr add 10.231.9.2/24 dev " + there + " && ip -n " + ns + " link set " + there +
                      " up && ip -n " + ns + " link set lo up"),
            0);
  std::vector<std::string> remote{"/bin/sh", "-c", "exec ip netns exec " + ns + " " + COLDSTART_BIN + " worker \"$@\"",
                                  "sh"};
  BenchOptions bound;
  bound.bind = "10.231.9.1";
  BenchOptions wildcard;
  wildcard.bind = "0.0.0.0";
  wildcard.advertise = "10.231.9.1";
  BenchResults a = dry({}, remote, bound), b = dry({}, remote, wildcard);
  system_rc("ip netns del " + ns);
  ASSERT_EQ(a.trials.size(), 1u);
  EXPECT_EQ(a.trials[0].status, TrialStatus::ok) << a.trials[0].message;
  ASSERT_EQ(b.trials.size(), 1u);
  EXPECT_EQ(b.trials[0].status, TrialStatus::ok) << b.trials[0].message;
}

}  // namespace coldstart::lab

namespace coldstart::lab {

// The fix axis reaches the ranks: environment fixes in their environment, behaviour fixes as phases.
TEST(BenchFixes, EnvironmentFixesReachEveryRankAndPrewarmRunsBesideTheStartUp) {
  BenchSpec spec;
  spec.startups = {parse_startup("cpu:100ms")};
  spec.fixes = {parse_fix("none"), parse_fix("cumem-off"), parse_fix("eager-connect"), parse_fix("channels:4"),
                parse_fix("prewarm")};
  spec.dry_run = true;
  spec.trials = 1;
  spec.modes = {Mode::isolated};
  BenchResults r = run_bench(spec, dry_options());
  ASSERT_EQ(r.trials.size(), 5u);
  for (const auto& t : r.trials) {
    ASSERT_EQ(t.status, TrialStatus::ok) << t.message;
    const Config& c = r.configs[static_cast<size_t>(t.config_id)];
    for (const auto& rank : t.ranks) {
      for (const auto& e : c.fix.env()) EXPECT_EQ(rank.env.at(e.key), *e.value) << c.label();
      const PhaseRecord* startup = rank.phase("startup");
      ASSERT_NE(startup, nullptr) << c.label();
      EXPECT_GE(startup->dur_ms, 99) << c.label();
      EXPECT_EQ(rank.phase("prewarm_join") != nullptr, c.fix.kind == Fix::Kind::prewarm) << c.label();
    }
  }
}

// Several ranks on one GPU (--ranks-per-gpu): four ranks on two GPUs, neighbours sharing one, and NCCL told to allow
// it in every rank's environment; --visible 0/0 names two ranks on one GPU.
TEST(BenchPlacement, SeveralRanksShareAGpuWhenAsked) {
  BenchSpec spec;
  spec.ranks_per_gpu = 2;
  BenchResults r = dry(spec);
  ASSERT_EQ(r.trials.size(), 1u);
  ASSERT_EQ(r.trials[0].status, TrialStatus::ok) << r.trials[0].message;
  ASSERT_EQ(r.trials[0].ranks.size(), 4u);
  for (const auto& rank : r.trials[0].ranks) {
    EXPECT_EQ(rank.cuda_visible_devices, rank.rank < 2 ? "0" : "1");
    EXPECT_EQ(rank.env.at("NCCL_MULTI_RANK_GPU_ENABLE"), "1");
  }
  BenchSpec one;
  one.ranks_per_gpu = 2;
  one.modes = {Mode::explicit_list};
  one.explicit_lists = parse_explicit_lists("0/0");
  one.env = {parse_env_axis("NCCL_CUMEM_ENABLE=")};
  one.dry_run = true;
  one.trials = 1;
  BenchOptions opts = dry_options();
  opts.gpus = 1;
  BenchResults shared_gpu = run_bench(one, opts);
  ASSERT_EQ(shared_gpu.trials.size(), 1u);
  ASSERT_EQ(shared_gpu.trials[0].ranks.size(), 2u);
  for (const auto& rank : shared_gpu.trials[0].ranks) EXPECT_EQ(rank.cuda_visible_devices, "0");
  EXPECT_EQ(shared_gpu.spec.ranks_per_gpu, 2);
  BenchResults single = dry({});
  EXPECT_EQ(single.trials[0].ranks[0].env.count("NCCL_MULTI_RANK_GPU_ENABLE"), 0u);
}

}  // namespace coldstart::lab

namespace coldstart::lab {

// --resume keeps only the trials of its own run: a line of another run, or of the wrong shape, is refused by file and
// line, and nothing is merged.
TEST(BenchResume, LinesOfAnotherRunOrTheWrongShapeAreRefusedByFileAndLine) {
  BenchSpec spec;
  spec.dry_run = true;
  spec.trials = 2;
  spec.seed = 7;
  spec.modes = {Mode::isolated};
  BenchOptions a = dry_options();
  BenchResults first = run_bench(spec, a);
  BenchOptions b = a;
  b.out_dir = a.out_dir + "-other";
  run_bench(spec, b);  // the same settings, another run
  const std::string jsonl = a.out_dir + "/results.jsonl";
  const std::string mine = read_file(jsonl);
  const std::string theirs = split(read_file(b.out_dir + "/results.jsonl"), '\n').front();
  BenchOptions resume = a;
  resume.resume = true;
  resume.run_id = first.context.run_id;
  const size_t lines = std::count(mine.begin(), mine.end(), '\n');
  for (const auto& [line, needle] : std::vector<std::pair<std::string, std::string>>{
           {theirs, "a trial of another run"}, {R"({"index": "x", "ranks": []})", "a line of the wrong shape"}}) {
    write_file_atomic(jsonl, mine + line + "\n" + split(mine, '\n').front() + "\n");
    try {
      run_bench(first.spec, resume);
      ADD_FAILURE() << "resumed over " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(jsonl + ":" + std::to_string(lines + 1) + ": " + needle), std::string::npos)
          << e.what();
    }
  }
  // The run's own trials resume as before.
  write_file_atomic(jsonl, mine);
  BenchResults again = run_bench(first.spec, resume);
  EXPECT_EQ(again.trials.size(), first.trials.size());
  EXPECT_EQ(read_file(jsonl), mine);
}

// --resume takes nothing from a damaged run.json or results.jsonl that the rules of a run refuse (model/validate.h):
// ranks_per_gpu of -1 or 65, a rank outside the job, a trial twice. Each names the file and the field.
TEST(BenchResume, DamagedSettingsAndTrialsAreRefusedByField) {
  BenchSpec spec;
  spec.dry_run = true;
  spec.trials = 1;
  spec.seed = 11;
  spec.modes = {Mode::isolated};
  BenchOptions a = dry_options();
  BenchResults first = run_bench(spec, a);
  const std::string run_json = a.out_dir + "/run.json", jsonl = a.out_dir + "/results.jsonl";
  const std::string settings = read_file(run_json), mine = read_file(jsonl);
  for (int bad : {-1, 0, 65, 2147483647}) {
    auto j = nlohmann::json::parse(settings);
    j["spec"]["ranks_per_gpu"] = bad;
    write_file_atomic(run_json, j.dump());
    try {
      load_run_settings(a.out_dir);
      ADD_FAILURE() << "resumed with ranks_per_gpu " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("run.json's spec.ranks_per_gpu: " + std::to_string(bad)), std::string::npos)
          << e.what();
    }
  }
  write_file_atomic(run_json, settings);
  EXPECT_EQ(load_run_settings(a.out_dir).spec.ranks_per_gpu, 1);
  BenchOptions resume = a;
  resume.resume = true;
  resume.run_id = first.context.run_id;
  auto line = nlohmann::json::parse(split(mine, '\n').front());
  auto outside = line;
  outside["ranks"][0]["rank"] = 5;
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {outside.dump(), ":1: trial.ranks[0].rank: 5, but the job has 2 ranks"},
           {line.dump() + "\n" + line.dump(), ":2: trial " + std::to_string(line["index"].get<int>()) + " again"}}) {
    write_file_atomic(jsonl, text + "\n");
    try {
      run_bench(first.spec, resume);
      ADD_FAILURE() << "resumed over " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(jsonl + needle), std::string::npos) << e.what();
    }
  }
}

}  // namespace coldstart::lab

namespace coldstart::lab {

// A trial's message says what happened: the ranks a timeout waited for, and a rank the coordinator turned away.
TEST(BenchMessages, TimeoutsNameTheRanksAndRefusedRanksSayWhy) {
  BenchSpec quick;
  quick.timeout_s = 0.001;
  BenchResults t = dry(quick);
  ASSERT_EQ(t.trials[0].status, TrialStatus::hang) << t.trials[0].message;
  EXPECT_NE(t.trials[0].message.find("timeout after 1.0 ms; "), std::string::npos) << t.trials[0].message;
  // Which ranks the 1 ms caught depends on how far each got: both, one (a fast rank 0 can report first), or none.
  EXPECT_TRUE(std::regex_search(t.trials[0].message, std::regex("ranks (0, 1|0|1) had not finished")) ||
              t.trials[0].message.find("every rank had reported") != std::string::npos)
      << t.trials[0].message;
  // Ranks caught inside a phase are named with it and their threads: 20 s of start-up work against a 3 s watchdog.
  BenchSpec busy;
  busy.timeout_s = 3;
  busy.startups = {parse_startup("cpu:20s")};
  BenchResults b = dry(busy);
  ASSERT_EQ(b.trials[0].status, TrialStatus::hang) << b.trials[0].message;
  // Alike, the two are one entry: a hang of many ranks stays one readable line.
  EXPECT_NE(b.trials[0].message.find("(ranks 0, 1 in startup ["), std::string::npos) << b.trials[0].message;
  std::string wrong = std::string("COLDSTART_TOKEN=not-the-token exec ") + COLDSTART_BIN + " worker \"$@\"";
  BenchResults r = dry({}, {"/bin/sh", "-c", wrong, "sh"});
  ASSERT_EQ(r.trials[0].status, TrialStatus::error);
  EXPECT_NE(r.trials[0].message.find("the coordinator refused a connection: wrong token"), std::string::npos)
      << r.trials[0].message;
  EXPECT_GE(r.trials[0].refused, 1u);
}

// A rank that fails with a message the casebook knows: the trial's message names the cause. This rank prints the
// WARN a real NCCL 2.28.9 rank wrote into its output on a 16 MiB /dev/shm (docs/results/2026-12-06-h100x1-casebook-shm)
// and exits, as that rank did.
TEST(BenchMessages, AFailureWhoseWordsTheCasebookKnowsIsNamed) {
  std::string full_shm =
      "echo '[2026-12-06 06:23:52.218650] coldstart-node-0:2367:2376 [0] misc/shmutils.cc:87 NCCL WARN Error: failed "
      "to extend /dev/shm/nccl-pqFdWU to 34210180 bytes, error: No space left on device (28)'; exit 1";
  BenchResults r = dry({}, {"/bin/sh", "-c", full_shm, "sh"});
  ASSERT_EQ(r.trials[0].status, TrialStatus::error) << r.trials[0].message;
  EXPECT_NE(r.trials[0].message.find("; known cause: /dev/shm is too small for NCCL's shared memory"),
            std::string::npos)
      << r.trials[0].message;
  BenchResults other = dry({}, {"/bin/sh", "-c", "echo 'some other failure'; exit 1", "sh"});
  ASSERT_EQ(other.trials[0].status, TrialStatus::error) << other.trials[0].message;
  EXPECT_EQ(other.trials[0].message.find("known cause"), std::string::npos) << other.trials[0].message;
}

}  // namespace coldstart::lab
