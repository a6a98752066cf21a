#include <iostream>

#include "cli/commands.h"
#include "lab/flags.h"
#include "trace/run.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/process.h"
#include "util/strings.h"

namespace coldstart::cli {

Run add_trace(CLI::App& app) {
  struct Flags {
    std::string out;
    std::string nccl_log{name_of(NcclLog::light)};
    std::vector<std::string> command;
    std::string grace = "5s";
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--out", f->out, "Output folder (default coldstart-trace/<time>; must not exist)");
  app.add_option("--nccl-log", f->nccl_log, "NCCL's debug log: off, light or full")->capture_default_str();
  app.add_option("--grace", f->grace,
                 "After forwarding Ctrl-C or SIGTERM, how long the command may take to end before it gets SIGKILL")
      ->capture_default_str();
  app.add_option("command", f->command, "The command to run, after --")->required();
  app.positionals_at_end();
  return [f]() -> int {
    trace::TraceRequest req;
    req.nccl_log = lab::parse_nccl_log(f->nccl_log, false);
    req.out_dir = f->out.empty() ? format_now("coldstart-trace/%Y%m%d-%H%M%S", false) : f->out;
    req.out_is_default = f->out.empty();
    req.command = f->command;
    auto grace = parse_duration(f->grace);
    if (!grace || *grace < 0 || *grace > 3600)
      throw InputError("--grace " + f->grace + ": give a duration up to 1h, e.g. 5s");
    req.grace_s = *grace;
    trace::TraceOutcome o = trace::run_traced(req, std::cerr);
    std::cout << trace::render_budgets(o.budgets);
    std::cout << "command: " << describe_wait_status(o.wait_status) << "\ntrace: " << o.dir
              << "/trace.json (open in ui.perfetto.dev or chrome://tracing)\nbudget: " << o.dir << "/budget.json\n";
    return o.exit_code;
  };
}

}  // namespace coldstart::cli
