// Subcommands of the one binary. Each registers its flags on the app and returns what runs it after parsing.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace coldstart::cli {

using Run = std::function<int()>;

Run add_bench(CLI::App& app, int argc, char** argv);
Run add_worker(CLI::App& app, int argc, char** argv, int64_t main_entry_ns);
Run add_nccllog(CLI::App& app);
Run add_trace(CLI::App& app);
Run add_doctor(CLI::App& app);
Run add_doctor_net(CLI::App& app);  // doctor's subcommand: doctor net
Run add_report(CLI::App& app);
Run add_nccl(CLI::App& app);  // nccl build, nccl env, nccl list

}  // namespace coldstart::cli
