// Doctor's rules on fact sets recorded on real machines (a 2x H200 node, plain and with CUDA_VISIBLE_DEVICES=1, and
// this build machine without a GPU), and CUDA_VISIBLE_DEVICES as CUDA reads it.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "analysis/fixes.h"
#include "doctor/cvd.h"
#include "doctor/report.h"
#include "doctor/rules.h"
#include "doctor/test_facts.h"
#include "model/summary.h"
#include "model/test_runs.h"
#include "report/html.h"
#include "util/error.h"

namespace coldstart::doctor {
namespace {
const std::string kResults = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-29-h200x2/";

Facts load(const std::string& name) { return test::recorded_facts(name); }

const Finding* find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

std::vector<gpu::NvmlGpu> two_gpus() {
  gpu::NvmlGpu a, b;
  a.index = 0;
  a.uuid = "GPU-12d8ce7a-c793-6a51-c805-4c63f4af7bf1";
  b.index = 1;
  b.uuid = "GPU-caf307a4-e476-a445-be57-8d80620586ce";
  return {a, b};
}
}  // namespace

TEST(DoctorFacts, RecordedH200NodeLoadsWithAllLayers) {
  Facts f = load("h200x2.json");
  EXPECT_TRUE(f.nvml.available);
  ASSERT_EQ(f.nvml.gpus.size(), 2u);
  EXPECT_EQ(f.nvml.gpus[0].nvlinks, 18);
  EXPECT_EQ(f.nvml.p2p[0][1], "OK");
  EXPECT_EQ(f.cuda.gpus.size(), 2u);
  EXPECT_EQ(f.vmm, (std::vector<int>{1, 1}));
  EXPECT_EQ(f.nccl.size(), 2u);
}

TEST(DoctorRules, H200NodePlainHasTwoNcclVersionsAndNoMasking) {
  Facts f = load("h200x2.json");
  auto fs = evaluate({&f, {}, nullptr});
  const Finding* v = find(fs, "nccl-versions");
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v->evidence.find("2.28.3"), std::string::npos);
  EXPECT_NE(v->evidence.find("2.28.9"), std::string::npos);
  EXPECT_EQ(find(fs, "masked-cumem"), nullptr);
  EXPECT_EQ(find(fs, "no-gpu"), nullptr);
  EXPECT_EQ(find(fs, "persistence-off"), nullptr);
}

TEST(DoctorRules, OneVisibleGpuOfTwoIsMaskedWithCumemOn) {
  Facts f = load("h200x2-cvd1.json");
  auto fs = evaluate({&f, {}, nullptr});
  const Finding* m = find(fs, "masked-cumem");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->severity, Severity::warn);
  EXPECT_NE(m->evidence.find("shows 1 of 2 GPUs"), std::string::npos);
  ASSERT_EQ(m->fixes.size(), 4u);
  EXPECT_NE(m->fixes[0].what.find("NCCL_CUMEM_ENABLE=0"), std::string::npos);
  EXPECT_NE(m->fixes[0].cost.find("NVLS buffer registration"), std::string::npos);
  EXPECT_NE(m->fixes[1].what.find("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1"), std::string::npos);
  EXPECT_NE(m->fixes[2].what.find("device_id"), std::string::npos);
  EXPECT_NE(m->fixes[3].what.find("patched NCCL"), std::string::npos);
  EXPECT_NE(m->fixes[3].what.find("`coldstart nccl build`"), std::string::npos) << m->fixes[3].what;
  EXPECT_NE(m->fixes[3].cost.find("custom NCCL build"), std::string::npos);
  // The same node loading coldstart's patched NCCL: recognised, information only, and its switch respected.
  Facts patched = f;
  for (auto& lib : patched.nccl)
    if (lib.would_load) lib.version += "+peer-regions";
  auto pf = evaluate({&patched, {}, nullptr});
  EXPECT_EQ(find(pf, "masked-cumem"), nullptr);
  const Finding* p = find(pf, "masked-cumem-patched");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::info);
  EXPECT_NE(p->evidence.find("+peer-regions"), std::string::npos) << p->evidence;
  EXPECT_EQ(p->evidence.find("fd table"), std::string::npos) << p->evidence;
  // The series' fd-table reservation, named where the library has it and its switch is not off
  for (auto& lib : patched.nccl)
    if (lib.would_load) lib.version += "+fd-reserve";
  auto reserving = evaluate({&patched, {}, nullptr});
  p = find(reserving, "masked-cumem-patched");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->evidence.find("fd table at init"), std::string::npos) << p->evidence;
  patched.env["NCCL_FD_TABLE_RESERVE"] = "0";
  auto reserve_off = evaluate({&patched, {}, nullptr});
  p = find(reserve_off, "masked-cumem-patched");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->evidence.find("fd table"), std::string::npos) << p->evidence;
  patched.env["NCCL_P2P_PEER_REGION"] = "0";
  EXPECT_NE(find(evaluate({&patched, {}, nullptr}), "masked-cumem"), nullptr);
  // With cuMem off the same masking is only information.
  f.env["NCCL_CUMEM_ENABLE"] = "0";
  auto off = evaluate({&f, {}, nullptr});
  EXPECT_EQ(find(off, "masked-cumem"), nullptr);
  ASSERT_NE(find(off, "masked"), nullptr);
  EXPECT_EQ(find(off, "masked")->severity, Severity::info);
}

TEST(DoctorRules, MeasuredNumbersFromRecordedBenchResultsGoIntoTheAdvice) {
  Facts f = load("h200x2-cvd1.json");
  BenchResults r = load_bench_results(kResults + "default.json");
  auto fs = evaluate({&f, {}, &r});
  const Finding* m = find(fs, "masked-cumem");
  ASSERT_NE(m, nullptr);
  // Judged on cold start (ready), with the phases cuMem off moves cost between.
  for (const char* part : {"(ready: process start to the first collective done) 930 ms with cuMem on vs 810 ms with "
                           "NCCL_CUMEM_ENABLE=0",
                           "first collective drops from 196 to 6.2 ms but comm_init goes from 469 to 518 ms",
                           "388 MiB vs 738 MiB", "unmasked (shared) with cuMem on: ready 943 ms"})
    EXPECT_NE(m->evidence.find(part), std::string::npos) << part << "\n" << m->evidence;
}

TEST(DoctorRules, RankViewsFromALaunchPlanFindMaskedRanks) {
  Facts f = load("h200x2.json");
  std::vector<RankView> isolated{{0, "0", 0, {0}, 0}, {1, "1", 0, {1}, 1}};
  std::vector<RankView> shared{{0, "0,1", 0, {0, 1}, 0}, {1, "0,1", 1, {0, 1}, 1}};
  EXPECT_NE(find(evaluate({&f, isolated, nullptr}), "masked-cumem"), nullptr);
  EXPECT_EQ(find(evaluate({&f, shared, nullptr}), "masked-cumem"), nullptr);
}

TEST(DoctorRules, NoGpuMachineGivesAUsefulReport) {
  Facts f = load("no-gpu.json");
  auto fs = evaluate({&f, {}, nullptr});
  ASSERT_NE(find(fs, "no-gpu"), nullptr);
  std::string text = render_report(f, {}, fs);
  EXPECT_NE(text.find("Layer 3"), std::string::npos);
  EXPECT_NE(text.find("Layer 1"), std::string::npos);
  EXPECT_NE(text.find("Layer 2"), std::string::npos);
  EXPECT_NE(text.find("NCCL libraries"), std::string::npos);
  EXPECT_NE(text.find("no NVIDIA driver"), std::string::npos);
  EXPECT_EQ(report_json(f, {}, fs)["schema"], "coldstart.doctor/2");
}

// Every fix of every finding says what it costs, in the JSON as in the text (docs/doctor.md, docs/python.md).
TEST(DoctorRules, EveryFixStatesItsCost) {
  Facts f = load("h200x2.json");
  f.env["NCCL_P2P_DISABLE"] = "1";
  f.env["NCCL_NVLS_ENABLE"] = "1";
  f.shm_bytes = 64 << 20;
  f.memlock_bytes = 1 << 20;
  f.host_netns = 0;
  f.nvml.gpus[1].persistence = 0;
  std::vector<RankView> isolated{{0, "0", 0, {0}, 0}, {1, "1", 0, {1}, 1}};
  auto fs = evaluate({&f, isolated, nullptr});
  Facts none = load("no-gpu.json");
  for (auto& x : evaluate({&none, {}, nullptr})) fs.push_back(x);
  size_t fixes = 0;
  for (const auto& finding : to_json(fs))
    for (const auto& fix : finding["fixes"]) {
      ++fixes;
      EXPECT_FALSE(fix.at("fix").get<std::string>().empty()) << finding;
      EXPECT_FALSE(fix.at("cost").get<std::string>().empty()) << finding;
    }
  EXPECT_GE(fixes, 10u);
  EXPECT_NE(render_findings(fs).find("— cost: loses NVLS algorithms"), std::string::npos);
}

TEST(DoctorRules, EnvironmentHazards) {
  Facts f = load("h200x2.json");
  f.env["NCCL_P2P_DISABLE"] = "1";
  f.env["NCCL_NVLS_ENABLE"] = "1";
  f.shm_bytes = 64 << 20;
  f.nvml.gpus[1].persistence = 0;
  f.host_netns = 0;
  auto fs = evaluate({&f, {}, nullptr});
  for (const char* id : {"p2p-disabled", "nvls", "shm-small", "persistence-off", "netns"})
    EXPECT_NE(find(fs, id), nullptr) << id;
  EXPECT_NE(find(fs, "persistence-off")->evidence.find("GPUs 1"), std::string::npos);
}

// The casebook's entry 14: NCCL_HOSTID makes every rank with the same value one host to NCCL.
TEST(DoctorRules, HostIdSetIsNamedWithItsValue) {
  Facts f = load("h200x2.json");
  f.env.erase("NCCL_HOSTID");
  EXPECT_EQ(find(evaluate({&f, {}, nullptr}), "host-id"), nullptr);
  f.env["NCCL_HOSTID"] = "rack7";
  auto fs = evaluate({&f, {}, nullptr});
  const Finding* x = find(fs, "host-id");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::warn);
  EXPECT_NE(x->evidence.find("NCCL_HOSTID=rack7"), std::string::npos) << x->evidence;
  EXPECT_NE(x->evidence.find("NVIDIA/nccl#879"), std::string::npos) << x->evidence;
  ASSERT_EQ(x->fixes.size(), 1u);
  EXPECT_NE(x->fixes[0].what.find("unset NCCL_HOSTID"), std::string::npos) << x->fixes[0].what;
  f.env["NCCL_HOSTID"] = "rack7\nwarn: forged";  // a value keeps to one line, as every value the user gave
  const std::string one_line = find(evaluate({&f, {}, nullptr}), "host-id")->evidence;
  EXPECT_NE(one_line.find("NCCL_HOSTID=rack7\\nwarn: forged"), std::string::npos) << one_line;
  EXPECT_EQ(one_line.find('\n'), std::string::npos) << one_line;
}

TEST(DoctorRules, AProxyBesideARendezvousPointsToDoctorNet) {
  Facts f = load("h200x2.json");
  f.host_netns = 1;
  EXPECT_EQ(find(evaluate({&f, {}, nullptr}), "network"), nullptr);
  f.env["https_proxy"] = "http://127.0.0.1:7890";
  EXPECT_EQ(find(evaluate({&f, {}, nullptr}), "network"), nullptr);  // no rendezvous: nothing to say
  f.env["MASTER_ADDR"] = "10.0.0.5";
  auto fs = evaluate({&f, {}, nullptr});
  const Finding* n = find(fs, "network");
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->evidence.find("https_proxy=http://127.0.0.1:7890 beside MASTER_ADDR=10.0.0.5 and no no_proxy"),
            std::string::npos)
      << n->evidence;
  EXPECT_NE(n->fixes.at(0).what.find("coldstart doctor net"), std::string::npos);
  f.env.clear();
  f.host_netns = 0;
  EXPECT_NE(find(evaluate({&f, {}, nullptr}), "network"), nullptr);
}

TEST(DoctorRules, MixedSettingsAcrossRanksOfOneTrial) {
  Facts f = load("h200x2.json");
  BenchResults r = load_bench_results(kResults + "default.json");
  r.trials[0].ranks[1].env["NCCL_CUMEM_ENABLE"] = "0";
  r.trials[0].ranks[0].env.erase("NCCL_CUMEM_ENABLE");
  auto findings = evaluate({&f, {}, &r});
  const Finding* m = find(findings, "mixed-ranks");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->severity, Severity::error);
}

// A ragged P2P matrix (rows of different lengths) used to be read past a row's end (SIGSEGV in doctor --facts).
TEST(DoctorFacts, ARaggedOrShortPeerMatrixIsRefused) {
  nlohmann::json j = to_json(load("h200x2.json"));
  ASSERT_EQ(j["nvml"]["p2p"].size(), 2u);
  nlohmann::json ragged = j;
  ragged["nvml"]["p2p"][1] = nlohmann::json::array({"OK"});
  try {
    facts_from_json(ragged);
    ADD_FAILURE() << "a ragged matrix was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "malformed fact set: nvml.p2p[1]: 1 entries for 2 GPUs");
  }
  nlohmann::json short_rows = j;
  short_rows["nvml"]["p2p"].erase(1);
  EXPECT_THROW(facts_from_json(short_rows), InputError);
  EXPECT_NO_THROW(facts_from_json(j));
}

// A fact set that parses but lies (model/validate.h's rules for coldstart.facts/1): each refused naming the field.
TEST(DoctorFacts, FactsThatParseButLieAreRefusedByField) {
  const nlohmann::json j = to_json(load("h200x2.json"));
  auto refusal = [](const nlohmann::json& bad) {
    try {
      facts_from_json(bad);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> cases{
      {"nvml.gpus[1].index: 0 twice", [](auto& f) { f["nvml"]["gpus"][1]["index"] = 0; }},
      {"cuda.gpus[0].index: 7 (give 0 to 1)", [](auto& f) { f["cuda"]["gpus"][0]["index"] = 7; }},
      {"nvml.gpus[0].nvlinks: -3", [](auto& f) { f["nvml"]["gpus"][0]["nvlinks"] = -3; }},
      {"nvml.gpus[0].mig: 2", [](auto& f) { f["nvml"]["gpus"][0]["mig"] = 2; }},
      {"vmm[1]: 5", [](auto& f) { f["vmm"][1] = 5; }},
      {"vmm: 3 entries for 2 CUDA devices",
       [](auto& f) {
         f["vmm"] = {1, 1, 1};
       }},
      {"host_netns: 9", [](auto& f) { f["host_netns"] = 9; }},
      {"shm_bytes: -7", [](auto& f) { f["shm_bytes"] = -7; }},
  };
  for (auto& [want, edit] : cases) {
    nlohmann::json bad = j;
    edit(bad);
    EXPECT_EQ(refusal(bad).find("malformed fact set: " + want), 0u) << want << " -> " << refusal(bad);
  }
  EXPECT_EQ(refusal(j), "accepted");
}

TEST(DoctorFacts, AMalformedFactSetIsAnInputError) {
  EXPECT_THROW(facts_from_json(nlohmann::json::object()), InputError);
  nlohmann::json bad = {{"schema", "coldstart.facts/1"}, {"nvml", "nope"}};
  EXPECT_THROW(facts_from_json(bad), InputError);
}

TEST(Cvd, UnsetShowsEveryGpu) {
  auto a = analyze_cvd(false, "", two_gpus());
  EXPECT_EQ(a.visible_nvml, (std::vector<int>{0, 1}));
  EXPECT_TRUE(a.problems.empty());
}

TEST(Cvd, EmptyAndMinusOneHideEverything) {
  for (const char* t : {"", "-1", " "}) {
    auto a = analyze_cvd(true, t, two_gpus());
    EXPECT_TRUE(a.hides_all) << t;
    EXPECT_TRUE(a.visible_nvml.empty());
    EXPECT_EQ(a.problems.size(), 1u);
  }
}

TEST(Cvd, IndicesUuidsAndUniquePrefixes) {
  auto a = analyze_cvd(true, "1,GPU-12d8ce7a-c793-6a51-c805-4c63f4af7bf1", two_gpus());
  EXPECT_EQ(a.visible_nvml, (std::vector<int>{1, 0}));
  EXPECT_EQ(a.entries[1].kind, "uuid");
  auto p = analyze_cvd(true, "GPU-caf3", two_gpus());
  EXPECT_EQ(p.entries[0].kind, "uuid-prefix");
  EXPECT_EQ(p.visible_nvml, (std::vector<int>{1}));
  auto ambiguous = analyze_cvd(true, "GPU-", two_gpus());
  EXPECT_EQ(ambiguous.entries[0].kind, "invalid");
  EXPECT_NE(ambiguous.entries[0].note.find("several"), std::string::npos);
}

TEST(Cvd, AnInvalidEntryEndsTheListAndGapsOutOfRangeAndDuplicatesAreNamed) {
  auto gap = analyze_cvd(true, "0,7,1", two_gpus());
  EXPECT_EQ(gap.visible_nvml, (std::vector<int>{0}));  // 7 is out of range: 1 is never reached
  EXPECT_EQ(gap.entries[2].kind, "ignored");
  ASSERT_EQ(gap.problems.size(), 1u);
  EXPECT_NE(gap.problems[0].find("'7': index 7 is out of range (2 GPUs)"), std::string::npos) << gap.problems[0];
  auto neg = analyze_cvd(true, "1,-1,0", two_gpus());
  EXPECT_EQ(neg.visible_nvml, (std::vector<int>{1}));
  auto dup = analyze_cvd(true, "0,0,1", two_gpus());
  EXPECT_EQ(dup.visible_nvml, (std::vector<int>{0, 1}));
  EXPECT_NE(dup.problems.at(0).find("already listed"), std::string::npos);
  auto junk = analyze_cvd(true, "zero", two_gpus());
  EXPECT_EQ(junk.entries[0].kind, "invalid");
  auto mig = analyze_cvd(true, "MIG-a1b2c3", two_gpus());
  EXPECT_EQ(mig.entries[0].kind, "mig");
  EXPECT_NE(mig.entries[0].note.find("MIG"), std::string::npos);
}

}  // namespace coldstart::doctor

namespace coldstart::doctor {
namespace {

using analysis::FixRanking;
using analysis::rank_fixes;
using analysis::render_fix_rankings;
using analysis::Window;

// A run of three fixes against one start-up: per trial, each rank's phases from its process start.
// Every rank meets the others (sync_init) after its CUDA context; prewarm_import adds to prewarm's trials before the
// meeting (as import torch varies between trials), where no fix acts.
// The warm-up (the prewarm phase, on its thread from the start-up's start) ends where the join does.
BenchResults fix_run(const char* startup_work = "cpu:300ms", double prewarm_first = 1, double prewarm_import = 0,
                     double prewarm_join = 2) {
  BenchResults r;
  r.spec.devices = {"0", "1"};
  auto add = [&](const char* fix, double init, double startup, double join, double first, double import = 0) {
    Config c;
    c.id = static_cast<int>(r.configs.size());
    c.mode = Mode::isolated;
    c.startup = *Startup::parse(startup_work);
    c.fix = *Fix::parse(fix);
    r.configs.push_back(c);
    for (int trial = 0; trial < 3; ++trial) {
      TrialResult t;
      t.config_id = c.id;
      for (int k = 0; k < 2; ++k) {
        RankResult rank = test::rank_in_order({{"process_start", 10.0},
                                               {"import_torch", import},
                                               {"cuda_context", 250.0},
                                               {"sync_init", 1.0},
                                               {"comm_init", init},
                                               {"startup", startup},
                                               {"prewarm_join", join},
                                               {"first_enqueue", first},
                                               {"first_wait", 0.2}},
                                              trial);
        if (join >= 0) {
          const PhaseRecord* start = rank.phase("startup");
          rank.phases.push_back({"prewarm", start->start_ms, start->dur_ms + join});
        }
        t.ranks.push_back(rank);
      }
      r.trials.push_back(t);
    }
  };
  add("none", 400, 300, -1, 180);
  add("prewarm", 400, 300, prewarm_join, prewarm_first, prewarm_import);
  add("cumem-off", 460, 300, -1, 6);
  r.summaries = summarize(r.configs, r.trials);
  return r;
}

}  // namespace

TEST(FixRanking, FixesAreRankedByTheColdStartTheySaveWithTheirCost) {
  auto rankings = rank_fixes(fix_run());
  ASSERT_EQ(rankings.size(), 1u);
  const FixRanking& k = rankings[0];
  EXPECT_EQ(k.scope, "isolated · startup=cpu:300ms");
  EXPECT_NEAR(k.baseline_cost_ms, 182.2, 0.01);  // the baseline's first collective: enqueue + wait (medians)
  ASSERT_EQ(k.fixes.size(), 2u);
  EXPECT_EQ(k.fixes[0].fix.name(), "prewarm");
  EXPECT_NEAR(k.fixes[0].saved_ms, 176, 0.01);  // the first collective less what the warm-up left (join, enqueue)
  EXPECT_GT(k.fixes[0].hidden_pct, 90);
  EXPECT_EQ(k.fixes[1].fix.name(), "cumem-off");
  EXPECT_NEAR(k.fixes[1].saved_ms, 114, 0.01);  // 180 - 6, but init grows by 60
  EXPECT_FALSE(k.fixes[1].cost.empty());
  std::string text = render_fix_rankings(rankings);
  EXPECT_NE(text.find("1. prewarm"), std::string::npos) << text;
  EXPECT_NE(text.find("cost: legacy CUDA IPC"), std::string::npos) << text;
}

TEST(FixRanking, WhatAFixSavesIsMeasuredOnTheWindowItActsOn) {
  // prewarm's trials happened to import 400 ms slower: its ready is worse, what it changed is not.
  auto rankings = rank_fixes(fix_run("cpu:300ms", 1, 400));
  ASSERT_EQ(rankings.size(), 1u);
  const FixRanking& k = rankings[0];
  ASSERT_EQ(k.fixes.size(), 2u);
  EXPECT_EQ(k.fixes[0].fix.name(), "prewarm");
  EXPECT_EQ(k.fixes[0].window, Window::after_init);
  EXPECT_EQ(k.fixes[1].window, Window::after_meeting);
  EXPECT_GT(k.fixes[0].ready.median, k.baseline_ready.median);
  EXPECT_NEAR(k.fixes[0].saved_ms, 176, 0.01);
  EXPECT_GT(k.fixes[0].hidden_pct, 90);
  std::string text = render_fix_rankings(rankings);
  EXPECT_NE(text.find("saves 176 ms after init"), std::string::npos) << text;
  EXPECT_NE(text.find("after the ranks met"), std::string::npos) << text;
  // Without the meeting in some trial, cuMem off's window is what ready says.
  BenchResults r = fix_run("cpu:300ms", 1, 400);
  auto& phases = r.trials.back().ranks[0].phases;
  phases.erase(std::remove_if(phases.begin(), phases.end(), [](const PhaseRecord& p) { return p.name == "sync_init"; }),
               phases.end());
  auto fallback = rank_fixes(r);
  ASSERT_EQ(fallback.at(0).fixes.size(), 2u);
  EXPECT_EQ(fallback.at(0).fixes.at(1).fix.name(), "cumem-off");
  EXPECT_EQ(fallback.at(0).fixes.at(1).window, Window::ready);
}

TEST(FixRanking, AWarmUpLongerThanTheStartUpIsExplained) {
  std::string text = render_fix_rankings(rank_fixes(fix_run("cpu:300ms", 1, 0, 120)));
  EXPECT_NE(text.find("why it hid no more: the start-up work (301 ms) ended before the warm-up (421 ms)"),
            std::string::npos)
      << text;
}

TEST(FixRanking, AWarmUpHeldBackByLargePageableCopiesSaysHowToCopy) {
  const std::string advice = "copy in small pieces";
  // The advice concerns copies made back to back, and says which loaders it does not concern.
  EXPECT_NE(render_fix_rankings(rank_fixes(fix_run("h2d:4GiB", 120))).find("builds each tensor on the CPU"),
            std::string::npos);
  EXPECT_NE(render_fix_rankings(rank_fixes(fix_run("h2d:4GiB", 120))).find(advice), std::string::npos);
  EXPECT_EQ(render_fix_rankings(rank_fixes(fix_run("h2d:4GiB/16MiB", 120))).find(advice), std::string::npos);
  EXPECT_EQ(render_fix_rankings(rank_fixes(fix_run("h2d-pinned:4GiB", 120))).find(advice), std::string::npos);
  EXPECT_EQ(render_fix_rankings(rank_fixes(fix_run("h2d:4GiB", 1))).find(advice), std::string::npos);  // it hid
  BenchResults held = fix_run("h2d:4GiB", 50);  // prewarm still the best fix, hiding about 70%
  std::string html = report::render_html({&held}, {});
  EXPECT_NE(html.find("Why prewarm hid no more: the start-up copies pageable memory 256 MiB at a time"),
            std::string::npos);
  BenchResults lost = fix_run("h2d:4GiB", 120);  // cuMem off is the best fix; prewarm's limit is still said
  html = report::render_html({&lost}, {});
  EXPECT_NE(html.find("Why prewarm hid no more: the start-up copies pageable memory 256 MiB at a time"),
            std::string::npos);
}

// The log A/B recorded on 2x H200 (--nccl-log off,light,full, NCCL 2.28.3): doctor --from says what the log cost, per
// pair, and that nothing moved beyond noise; a run without the log off beside it says nothing of the log.
TEST(Doctor, TheLogsOwnCostIsReadFromARunThatHasItOff) {
  Facts f = load("h200x2.json");
  BenchResults logged = load_bench_results(kResults + "default-logging.json");
  const auto findings = evaluate({&f, {}, &logged});
  const Finding* d = find(findings, "log-disturbance");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->evidence.find("the NCCL log's own cost, light against off"), std::string::npos) << d->evidence;
  EXPECT_NE(d->evidence.find("  isolated · NCCL_CUMEM_ENABLE=(unset): within noise on every phase (comm_init "),
            std::string::npos)
      << d->evidence;
  EXPECT_EQ(d->severity, Severity::info);  // on 2.28.3 no phase moved beyond noise (docs/nccllog.md)
  EXPECT_TRUE(d->fixes.empty());
  BenchResults plain = load_bench_results(kResults + "default.json");
  EXPECT_EQ(find(evaluate({&f, {}, &plain}), "log-disturbance"), nullptr);
}

TEST(FixRanking, TheDoctorAndTheReportLeadWithIt) {
  BenchResults r = fix_run();
  Facts f = load("h200x2.json");
  EXPECT_NE(find(evaluate({&f, {}, &r}), "fixes-ranked"), nullptr);
  std::string html = report::render_html({&r}, {});
  size_t verdict = html.find("<h2>Verdict</h2>"), summary = html.find("<h2>Summary</h2>");
  ASSERT_NE(verdict, std::string::npos);
  EXPECT_LT(verdict, summary);
  EXPECT_NE(html.find("Best fix measured: <b>prewarm</b>"), std::string::npos);
}

}  // namespace coldstart::doctor
