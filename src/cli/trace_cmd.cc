#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "lab/flags.h"
#include "launch/process.h"
#include "trace/inject.h"
#include "trace/merge.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::cli {
namespace {
pid_t g_child = 0;
void forward(int sig) {
  if (g_child > 0) ::kill(-g_child, sig);
}

std::string resolve_command(const std::string& cmd) {
  if (auto found = find_on_path(cmd)) return *found;
  throw InputError("trace: cannot start '" + cmd + "': not found on PATH; give the command's path");
}
}  // namespace

Run add_trace(CLI::App& app) {
  struct Flags {
    std::string out;
    std::string nccl_log = "light";
    std::vector<std::string> command;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--out", f->out, "Output folder (default coldstart-trace/<time>; must not exist)");
  app.add_option("--nccl-log", f->nccl_log, "NCCL's debug log: off, light or full")->capture_default_str();
  app.add_option("command", f->command, "The command to run, after --")->required();
  app.positionals_at_end();
  return [f]() -> int {
    if (const char* existing = std::getenv("CUDA_INJECTION64_PATH"); existing && *existing)
      throw InputError(std::string("trace: CUDA_INJECTION64_PATH is already set (") + existing +
                       "): another tool injects into CUDA; unset it to trace");
    NcclLog level = parse_nccl_log(f->nccl_log);
    if (f->out.empty()) f->out = format_now("coldstart-trace/%Y%m%d-%H%M%S", false);
    std::string exe = resolve_command(f->command.front());
    make_output_dir(f->out, false);
    std::string out = std::filesystem::canonical(f->out).string();
    auto env = trace::trace_env(out, out + "/nccl.%h.%p.log", level,
                                [](const std::string& k) { return std::getenv(k.c_str()) != nullptr; });
    std::string ray_vars;
    for (const auto& [k, v] : env) ray_vars += (ray_vars.empty() ? "" : ", ") + ("\"" + k + "\": \"" + v + "\"");
    std::cerr << "coldstart trace: recording into " << out << "\n"
              << "  (Ray workers of a cluster that is already running do not inherit this environment: start it with "
                 "ray.init(runtime_env={\"env_vars\": {"
              << ray_vars << "}}))\n";

    SpawnSpec spec;
    spec.argv = f->command;
    spec.argv[0] = exe;
    spec.env = make_env(env, {});
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    try {
      g_child = spawn(spec);
    } catch (const RuntimeError& e) {
      throw InputError(std::string("trace: ") + e.what());
    }
    int status = 0;
    while (::waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    kill_group(g_child, SIGKILL);  // nothing of the command outlives it
    reap_group(g_child);

    auto traces = trace::read_trace_dir(out);
    auto logs = trace::read_nccl_logs(out);
    auto b = trace::budgets(traces, logs);
    write_file_atomic(out + "/trace.json", dump_json(trace::perfetto(traces, logs)) + "\n");
    write_file_atomic(out + "/budget.json", dump_json(trace::budgets_json(b), 1) + "\n");
    std::cout << trace::render_budgets(b);
    std::cout << "command: " << describe_wait_status(status) << "\ntrace: " << out
              << "/trace.json (open in ui.perfetto.dev or chrome://tracing)\nbudget: " << out << "/budget.json\n";
    return code;
  };
}

}  // namespace coldstart::cli
