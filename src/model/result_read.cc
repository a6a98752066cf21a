// JSON in: read_value of every result type straight from the text (util/json_reader.h), a whole results.json
// (bench_results_from_text, load_bench_results), a rank's report (parse_report), and nlohmann's from_json entry points.
#include <algorithm>
#include <filesystem>

#include "model/result.h"
#include "model/result_fields.h"
#include "model/result_v1.h"
#include "model/summary.h"
#include "model/validate.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_reader.h"
#include "util/strings.h"

namespace coldstart {
using nlohmann::json;

// The plain structs' readers, from their field lists (model/result_fields.h).
#define COLDSTART_READ_FIELD(f) \
  if (key == #f) return read_value(in, v.f), true;
#define COLDSTART_READ_FIELDS(T, ...)                                            \
  bool read_field(JsonReader& in, std::string_view key, T& v) {                  \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(COLDSTART_READ_FIELD, __VA_ARGS__)) \
    return false;                                                                \
  }
#define COLDSTART_READER(T)                   \
  void read_value(JsonReader& in, T& v) {     \
    in.object([&](std::string_view key) {     \
      if (!read_field(in, key, v)) in.skip(); \
    });                                       \
  }

COLDSTART_RESULT_FIELDS(COLDSTART_READ_FIELDS, COLDSTART_READER)
#undef COLDSTART_READER
#undef COLDSTART_READ_FIELDS
#undef COLDSTART_READ_FIELD

// Under either schema's names (model/result_v1.cc).
void read_value(JsonReader& in, Memory& m) {
  RankMarks ignored;
  read_memory(in, m, ignored);
}
void read_value(JsonReader& in, RankNccl& n) {
  RankMarks ignored;
  read_nccl(in, n, ignored);
}

// A value written as its name: "split:4", "h2d:32GiB", "cumem-off".
template <class T>
void read_named(JsonReader& in, T& v, const char* what) {
  std::string_view s = in.string();
  auto parsed = T::parse(s);
  if (!parsed) JsonReader::reject(std::string("not ") + what + ": \"" + std::string(s) + "\"");
  v = *parsed;
}

void read_value(JsonReader& in, Groups& g) { read_named(in, g, "a group plan"); }
void read_value(JsonReader& in, Startup& v) { read_named(in, v, "a start-up"); }
void read_value(JsonReader& in, Fix& v) { read_named(in, v, "a fix"); }
void read_value(JsonReader& in, Link& v) { read_named(in, v, "a link"); }

void read_value(JsonReader& in, EnvSetting& e) {
  bool key = false;
  in.object([&](std::string_view k) {
    if (k == "key") return key = true, read_value(in, e.key);
    if (k == "value") return read_value(in, e.value);
    in.skip();
  });
  if (!key) JsonReader::reject("no \"key\"");
}

namespace {

// One field of RankFacts, if `key` names one (true: its value is read). The report (wire) and the result share them.
bool read_fact(JsonReader& in, std::string_view key, RankFacts& r, RankMarks& marks) {
  if (key == "rank") return read_value(in, r.rank), true;
  if (key == "pid") return read_value(in, r.pid), true;
  if (key == "host") return read_value(in, r.host), true;
  if (key == "worker") return read_value(in, r.worker), true;
  if (key == "cuda_visible_devices") return read_value(in, r.cuda_visible_devices), true;
  if (key == "env") return read_value(in, r.env), true;
  if (key == "device_index") return read_value(in, r.device_index), true;
  if (key == "visible_device_count") return read_value(in, r.visible_device_count), true;
  if (key == "bus_id") return r.bus_id = normalize_bus_id(in.string()), true;
  if (key == "uuid") return read_value(in, r.uuid), true;
  if (key == "gpu_name") return read_value(in, r.gpu_name), true;
  if (key == "nccl_path") return read_value(in, r.nccl_path), true;
  if (key == "nccl_version") return read_value(in, r.nccl_version), true;
  if (key == "uid_hash") return read_value(in, r.uid_hash), true;
  if (key == "steady") return read_value(in, r.steady), true;
  if (key == "mem") return read_memory(in, r.mem, marks), true;
  if (key == "overhead_ms") return read_value(in, r.overhead_ms), true;
  if (key == "start_source") return read_value(in, r.start_source), true;
  if (key == "launcher") return read_value(in, r.launcher), true;
  if (key == "torch_version") return marks.torch_version = true, read_value(in, r.torch_version), true;
  if (key == "torch_init") return read_value(in, r.torch_init), true;
  if (key == "dry_run") return read_value(in, r.dry_run), true;
  if (key == "store_calls") return read_value(in, r.store_calls), true;
  return false;
}

void read_rank(JsonReader& in, RankResult& r, RankMarks& marks) {
  in.object([&](std::string_view key) {
    if (read_fact(in, key, r, marks)) return;
    if (key == "phases") return read_value(in, r.phases);
    if (key == "last_phase") return read_value(in, r.last_phase);
    if (key == "in_phase") return read_value(in, r.in_phase);
    if (key == "exit") return read_value(in, r.exit);
    if (key == "stopped_by_lab") return read_value(in, r.stopped_by_lab);
    if (key == "exited_cleanly") return read_value(in, r.exited_cleanly);
    if (key == "exit_ms") return read_value(in, r.exit_ms);
    if (key == "error") return read_value(in, r.error);
    if (key == "nccl") {
      if (in.null()) return r.nccl.reset();
      return read_nccl(in, r.nccl.emplace(), marks);
    }
    if (key == "first_collective_calls") return read_value(in, r.first_collective_calls);
    if (key == "first_collective_peer_calls") return read_value(in, r.first_collective_peer_calls);
    if (key == "phase_calls") return read_value(in, r.phase_calls);
    if (key == "threads") return read_value(in, r.threads);
    in.skip();  // ready_ms is derived: recomputed from the phases
  });
}

// A trial, with a mark per rank (upgrade_trial_v1 uses them).
void read_trial(JsonReader& in, TrialResult& t, std::vector<RankMarks>& marks) {
  bool refused = false;
  in.object([&](std::string_view key) {
    if (key == "index") return read_value(in, t.index);
    if (key == "config_id") return read_value(in, t.config_id);
    if (key == "repeat") return read_value(in, t.repeat);
    if (key == "status") return read_value(in, t.status);
    if (key == "message") return read_value(in, t.message);
    if (key == "wall_ms") return read_value(in, t.wall_ms);
    if (key == "lab_overhead_ms") return read_value(in, t.lab_overhead_ms);
    if (key == "ranks") {
      t.ranks.clear();
      marks.clear();
      return in.array([&](size_t) { read_rank(in, t.ranks.emplace_back(), marks.emplace_back()); });
    }
    if (key == "refusals") return read_value(in, t.refusals);
    if (key == "refused") return refused = true, read_value(in, t.refused);
    if (key == "run_id") return read_value(in, t.run_id);
    if (key == "config_key") return read_value(in, t.config_key);
    in.skip();
  });
  if (!refused) t.refused = t.refusals.size();
}

}  // namespace

void read_value(JsonReader& in, RankReport& r) {
  RankMarks ignored;
  in.object([&](std::string_view key) {
    if (read_fact(in, key, r, ignored)) return;
    if (key == "phases") return read_value(in, r.phases);
    if (key == "mono_anchor_ns") return read_value(in, r.mono_anchor_ns);
    if (key == "real_anchor_ns") return read_value(in, r.real_anchor_ns);
    in.skip();
  });
}
void read_value(JsonReader& in, RankResult& r) {
  RankMarks ignored;
  read_rank(in, r, ignored);
}

void read_value(JsonReader& in, TrialResult& t) {
  std::vector<RankMarks> ignored;
  read_trial(in, t, ignored);
}

// key and label are derived from the settings.
void read_value(JsonReader& in, Config& c) {
  bool id = false, mode = false;
  in.object([&](std::string_view key) {
    if (key == "id") return id = true, read_value(in, c.id);
    if (key == "mode") return mode = true, read_value(in, c.mode);
    if (key == "env") return read_value(in, c.env);
    if (key == "nccl_lib") return read_value(in, c.nccl_lib);
    if (key == "nccl_log") return read_value(in, c.nccl_log);
    if (key == "trace") return read_value(in, c.trace);
    if (key == "launcher") return read_value(in, c.launcher);
    if (key == "startup") return read_value(in, c.startup);
    if (key == "fix") return read_value(in, c.fix);
    if (key == "nodes") return read_value(in, c.nodes);
    if (key == "link") return read_value(in, c.link);
    in.skip();
  });
  if (!id || !mode) JsonReader::reject(id ? "no \"mode\"" : "no \"id\"");
}

// Defaults come from BenchSpec's own initialisers: one place.
void read_value(JsonReader& in, BenchSpec& s) {
  bool modes = false;
  in.object([&](std::string_view key) {
    if (key == "modes") return modes = true, read_value(in, s.modes);
    if (key == "env") return read_value(in, s.env);
    if (key == "visible") return read_value(in, s.explicit_lists);
    if (key == "nccl_libs") return read_value(in, s.nccl_libs);
    if (key == "nccl_logs") return read_value(in, s.nccl_logs);
    if (key == "devices") return read_value(in, s.devices);
    if (key == "ranks_per_gpu") return read_value(in, s.ranks_per_gpu);
    if (key == "world") return read_value(in, s.world);
    if (key == "trials") return read_value(in, s.trials);
    if (key == "seed") return read_value(in, s.seed);
    if (key == "collective") return read_value(in, s.collective);
    if (key == "size_bytes") return read_value(in, s.size_bytes);
    if (key == "groups") return read_value(in, s.groups);
    if (key == "timeout_s") return read_value(in, s.timeout_s);
    if (key == "steady_iters") return read_value(in, s.steady_iters);
    if (key == "warmup_iters") return read_value(in, s.warmup_iters);
    if (key == "dry_run") return read_value(in, s.dry_run);
    if (key == "traces") return read_value(in, s.traces);
    if (key == "worker") return read_value(in, s.worker);
    if (key == "launcher") return read_value(in, s.launcher);
    if (key == "ray_address") return read_value(in, s.ray_address);
    if (key == "startups") return read_value(in, s.startups);
    if (key == "fixes") return read_value(in, s.fixes);
    if (key == "coverage") return read_value(in, s.coverage);
    if (key == "nodes") return read_value(in, s.nodes);
    if (key == "link") return read_value(in, s.link);
    in.skip();
  });
  if (!modes) JsonReader::reject("no \"modes\"");
}

namespace {

// A trial read alone (a line of results.jsonl, a tree), of either schema: a rank that uses a /1 name makes it /1.
TrialResult read_trial_any(JsonReader& in) {
  TrialResult t;
  std::vector<RankMarks> marks;
  read_trial(in, t, marks);
  if (std::any_of(marks.begin(), marks.end(), [](const RankMarks& m) { return m.v1; })) upgrade_trial_v1(t, marks);
  return t;
}

// The tree's text, read by the one reader; a value of the wrong shape is a json::exception, as nlohmann's own are.
template <class T, class Read>
void read_tree_text(const json& j, T& v, Read read) {
  const std::string text = dump_json(j);
  JsonReader in(text);
  try {
    read(in, v);
    in.finish();
  } catch (const JsonShapeError& e) {
    throw json::other_error::create(501, e.what(), &j);
  }
}

}  // namespace

TrialResult trial_from_json(const json& j) {
  TrialResult t;
  read_tree_text(j, t, [](JsonReader& in, TrialResult& out) { out = read_trial_any(in); });
  return t;
}

namespace {

// A text that is not JSON: said so, and where; bench's results.jsonl (one trial per line) is named as such.
[[noreturn]] void results_not_json(std::string_view text, const std::string& what, const JsonSyntaxError& e) {
  if (text.starts_with("\x1f\x8b"))  // gzip's magic: a results.json.gz, as docs/results/ keeps the larger runs
    throw InputError(what + ": gzip-compressed; give it decompressed (`gunzip -k " + what + "`, or `zcat " + what +
                     "` piped to `-`)");
  auto nl = text.find('\n');
  if (nl != std::string_view::npos) {
    bool trial = false;
    try {
      JsonReader line(text.substr(0, nl));
      line.object([&](std::string_view key) {
        trial = trial || key == "ranks";
        line.skip();
      });
      line.finish();
    } catch (const std::exception&) {
      trial = false;
    }
    if (trial)
      throw InputError(what + ": one trial per line (bench's results.jsonl); give results.json from the same folder");
  }
  throw InputError(what + ": not valid JSON (truncated or corrupt: " + e.what() + "); give a complete results.json");
}

}  // namespace

BenchResults bench_results_from_text(std::string_view text, const std::string& what) {
  JsonReader in(text);
  BenchResults r;
  std::optional<std::string> schema;  // "?" when not a string
  bool trace = false, spec = false, configs = false, trials = false;
  std::vector<std::vector<RankMarks>> marks;
  std::optional<std::string> malformed;  // the first field of the wrong shape: said after what the schema says
  bool object = false;
  try {
    object = in.peek() == JsonReader::Kind::object;
    if (!object) {
      in.skip();
    } else {
      in.object([&](std::string_view key) {
        try {
          if (key == "schema") {
            if (in.peek() == JsonReader::Kind::string) return schema = std::string(in.string()), void();
            schema = "?";
            return in.skip();
          }
          if (key == "context") return read_value(in, r.context);
          if (key == "spec") return spec = true, read_value(in, r.spec);
          if (key == "configs") return configs = true, read_value(in, r.configs);
          if (key == "trials") {
            trials = true;
            r.trials.clear();
            marks.clear();
            return in.array([&](size_t) { read_trial(in, r.trials.emplace_back(), marks.emplace_back()); });
          }
          if (key == "traceEvents") trace = true;
          in.skip();  // summaries are recomputed
        } catch (JsonShapeError& e) {
          e.within(key);
          if (!malformed) malformed = e.what();
          in.recover(1);  // read on: what the schema says is said first
        }
      });
    }
    in.finish();
  } catch (const JsonSyntaxError& e) {
    results_not_json(text, what, e);
  }
  if (object && schema == "coldstart.run/1")
    throw InputError(what +
                     ": bench's run settings (run.json), not its results; give results.json from the same folder");
  if (trace)
    throw InputError(what + ": a Perfetto/Chrome trace, not a bench result; give the results.json that bench wrote");
  if (!object || !schema)
    throw InputError(what +
                     ": not a coldstart bench result (no \"schema\" field); give a results.json written by bench");
  if (schema->starts_with("coldstart.") && !schema->starts_with("coldstart.bench/")) {
    // Name the command that writes files of this schema.
    std::string from = "another coldstart command";
    for (auto [prefix, writer] : {std::pair{"coldstart.doctor/", "coldstart doctor --json"},
                                  std::pair{"coldstart.facts/", "coldstart doctor --json"},
                                  std::pair{"coldstart.nccllog/", "coldstart nccllog --json"},
                                  std::pair{"coldstart.budget/", "coldstart trace"}})
      if (schema->starts_with(prefix)) from = writer;
    throw InputError(what + ": a " + *schema + " file (from " + from +
                     "), not a bench result; give the results.json that bench wrote");
  }
  if (*schema != kBenchSchema && *schema != kBenchSchemaV1)
    throw InputError(what + ": schema " + *schema + " is not " + kBenchSchema + " (or " + kBenchSchemaV1 +
                     "); use the coldstart version that wrote it, or re-run bench");
  if (!malformed && !(spec && configs && trials))
    malformed = std::string("no \"") + (!spec ? "spec" : !configs ? "configs" : "trials") + "\"";
  if (malformed) throw InputError(what + ": malformed bench result (" + *malformed + ")");
  if (*schema == kBenchSchemaV1)
    for (size_t i = 0; i < r.trials.size(); ++i) upgrade_trial_v1(r.trials[i], marks[i]);
  r.context.schema = kBenchSchema;
  if (auto bad = check_results(r))
    throw InputError(what + ": " + bad->text() + "; the file is damaged (give the results.json bench wrote)");
  r.summaries = summarize(r.configs, r.trials, r.context.nccl, r.spec.nranks());
  return r;
}

BenchResults bench_results_from_json(const json& j, const std::string& what) {
  return bench_results_from_text(dump_json(j), what);
}

BenchResults load_bench_results(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(path + ": a folder; give " + (fs::path(path) / "results.json").string() +
                     " (the results bench wrote there)");
  std::string text;
  try {
    text = read_input_limited(path, kMaxResultsBytes, "give the results.json bench wrote");
  } catch (const RuntimeError& e) {
    throw InputError(std::string(e.what()) + "; give a readable results.json");
  }
  return bench_results_from_text(text, path == "-" ? "- (standard input)" : path);
}

std::optional<RankReport> parse_report(const json& j, std::string* error) {
  if (!j.is_object()) {
    *error = "the rank sent a malformed report (not an object)";
    return std::nullopt;
  }
  const std::string text = dump_json(j);
  JsonReader in(text);
  RankReport r;
  try {
    read_value(in, r);
    in.finish();
  } catch (const JsonShapeError& e) {
    *error = std::string("the rank sent a malformed report (") + e.what() + ")";
    return std::nullopt;
  }
  return r;
}

// nlohmann's entry points (j.get<T>()) for code that holds a tree: through the same readers.
#define COLDSTART_FROM_TREE(T)                                                 \
  void from_json(const json& j, T& v) {                                        \
    read_tree_text(j, v, [](JsonReader& in, T& out) { read_value(in, out); }); \
  }
COLDSTART_FROM_TREE(Groups)
COLDSTART_FROM_TREE(Startup)
COLDSTART_FROM_TREE(Fix)
COLDSTART_FROM_TREE(EnvSetting)
COLDSTART_FROM_TREE(EnvAxis)
COLDSTART_FROM_TREE(RankView)
COLDSTART_FROM_TREE(BenchSpec)
COLDSTART_FROM_TREE(Config)
COLDSTART_FROM_TREE(GpuInfo)
COLDSTART_FROM_TREE(PhaseRecord)
COLDSTART_FROM_TREE(PhaseSpan)
COLDSTART_FROM_TREE(Steady)
COLDSTART_FROM_TREE(Memory)
COLDSTART_FROM_TREE(RankNccl)
COLDSTART_FROM_TREE(CallTally)
COLDSTART_FROM_TREE(RankReport)
COLDSTART_FROM_TREE(RankResult)
COLDSTART_FROM_TREE(NcclLibInfo)
COLDSTART_FROM_TREE(RunContext)
COLDSTART_FROM_TREE(PhaseStats)
COLDSTART_FROM_TREE(ConfigSummary)
#undef COLDSTART_FROM_TREE
void from_json(const json& j, TrialResult& t) { t = trial_from_json(j); }
void from_json(const json& j, BenchResults& r) { r = bench_results_from_json(j, "a bench result"); }

}  // namespace coldstart
