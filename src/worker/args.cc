#include "worker/args.h"

#include <type_traits>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "util/error.h"

namespace coldstart::worker {

std::vector<std::string> WorkerArgs::to_argv() const {
  // The defaults as text, in each_flag's order: each_flag visits both objects alike, so the n-th is this n-th flag's.
  const WorkerArgs defaults_of;
  std::vector<std::string> defaults;
  each_flag(defaults_of, [&](const WorkerFlag&, const auto& value) { defaults.push_back(fmt::format("{}", value)); });
  std::vector<std::string> argv;
  size_t i = 0;
  each_flag(*this, [&](const WorkerFlag& flag, const auto& value) {
    std::string text = fmt::format("{}", value);
    if (text == defaults[i++]) return;
    argv.emplace_back(flag.name);
    if constexpr (!std::is_same_v<std::decay_t<decltype(value)>, bool>) argv.push_back(std::move(text));
  });
  return argv;
}

void add_worker_flags(CLI::App& app, WorkerArgs& args) {
  WorkerArgs::each_flag(args, [&](const WorkerFlag& flag, auto& value) {
    using T = std::decay_t<decltype(value)>;
    const std::string name(flag.name), help(flag.help);
    if constexpr (std::is_same_v<T, bool>) {
      app.add_flag(name, value, help);
    } else {
      CLI::Option* option = app.add_option(name, value, help);
      if (flag.show_default) option->capture_default_str();
    }
  });
}

WorkerArgs WorkerArgs::from_argv(const std::vector<std::string>& argv) {
  WorkerArgs args;
  CLI::App app("coldstart worker");
  add_worker_flags(app, args);
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 takes a vector from its end
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError(std::string("worker: ") + e.what());
  }
  return args;
}

}  // namespace coldstart::worker
