// libFuzzer target for the files coldstart reads besides results.json, its first byte picking which: a fact set
// (doctor --facts), a run's settings (run.json, bench --resume), a trial line (results.jsonl, bench --resume), a
// doctor net report (report, report --compare), a build's manifest (nccl list, nccl env, bench --nccl-lib). Each is
// read as its command reads it: the text parsed (a parse error is the command's one line), then the reader, which
// either accepts or throws InputError; anything else escaping is a finding. What is accepted must hold what the rules
// promise (model/validate.h, doctor/facts.h) and write out again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "doctor/facts.h"
#include "model/result.h"
#include "model/validate.h"
#include "ncclbuild/cache.h"
#include "net/report.h"
#include "report/net_text.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace {

using nlohmann::json;

void facts(const json& j) {
  coldstart::doctor::Facts f = coldstart::doctor::facts_from_json(j);
  // The rules index the matrix and the lists by GPU: all of it must be there.
  for (size_t i = 0; i < f.nvml.p2p.size(); ++i)
    for (size_t k = 0; k < f.nvml.p2p.size(); ++k) (void)f.nvml.p2p.at(i).at(k);
  // What was accepted writes out as a fact set that is accepted again (a refusal here is a finding, not bad input).
  try {
    (void)coldstart::doctor::facts_from_json(coldstart::doctor::to_json(f));
  } catch (const coldstart::InputError&) {
    std::abort();
  }
}

void settings(const json& j) {
  coldstart::BenchSpec s;
  try {
    s = j.at("spec").get<coldstart::BenchSpec>();
  } catch (const json::exception&) {
    return;  // load_run_settings: "a malformed spec"
  }
  if (coldstart::check_spec(s)) return;  // load_run_settings: the field named
  const int n = s.nranks();
  if (n < 0 || n > coldstart::kMaxRanks) std::abort();
  if (json(s).get<coldstart::BenchSpec>().ranks_per_gpu != s.ranks_per_gpu) std::abort();
}

void trial(const json& j) {
  coldstart::TrialResult t;
  try {
    t = coldstart::trial_from_json(j);
  } catch (const json::exception&) {
    return;  // finished_trials: "a line of the wrong shape"
  }
  coldstart::BenchSpec spec;
  spec.devices = {"0", "1"};
  coldstart::Config config;
  config.mode = coldstart::Mode::isolated;
  if (coldstart::check_trial(t, spec, {config}, "trial")) return;
  for (const auto& r : t.ranks)
    if (r.nccl && r.nccl->lazy_connection_count() < 0) std::abort();  // counts are bounded: a sum never wraps
  (void)t.ready_ms();
  (void)coldstart::dump_json(json(t));
}

void net_report(const json& j) {
  coldstart::net::NetReport r = coldstart::net::net_report_from_json(j);
  (void)coldstart::report::render_text(r);
  (void)coldstart::report::compare_reports(r, r);
  (void)coldstart::dump_json(coldstart::net::to_json(r));
}

// A build.json as nccl list reads it, in an entry of a cache of the fuzzer's own (its library there): what the listing
// calls complete names that entry and its own library inside it, and whatever it says of an entry is one line.
void manifest(std::string_view text) {
  namespace fs = std::filesystem;
  static const coldstart::TempDir cache("coldstart-fuzz-cache-");
  static const std::string entry = cache.path() + "/" + coldstart::ncclbuild::entry_name("2.30.7");
  static const bool made = [] {
    fs::create_directories(entry + "/build/patched/lib");
    coldstart::write_file_atomic(entry + "/build/patched/lib/libnccl.so.2", "x");
    return true;
  }();
  (void)made;
  coldstart::write_file_atomic(entry + "/" + coldstart::ncclbuild::kManifestFile, std::string(text));
  for (const auto& e : coldstart::ncclbuild::list_entries(cache.path(), false)) {
    if (e.state.find('\n') != std::string::npos) std::abort();
    if (!e.complete) continue;
    const fs::path lib = fs::path(e.manifest->library).lexically_normal();
    if (e.manifest->name != e.name || !lib.is_absolute() || lib.lexically_relative(entry).string().starts_with(".."))
      std::abort();
    // What was accepted writes out as a manifest that reads back the same
    const auto again = coldstart::ncclbuild::parse_manifest(coldstart::ncclbuild::manifest_json(*e.manifest), "x");
    if (again.library != e.manifest->library || again.arch != e.manifest->arch) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 5 == 4) {
    manifest(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    return 0;
  }
  const json j = json::parse(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    switch (data[0] % 5) {
      case 0: facts(j); break;
      case 1: settings(j); break;
      case 2: trial(j); break;
      default: net_report(j); break;
    }
  } catch (const coldstart::InputError&) {
  }
  return 0;
}
