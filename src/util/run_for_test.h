// Tests that run commands: the command's exit status and its stdout and stderr together.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace coldstart::test_cli {

struct Output {
  int status = -1;   // the exit status, -1 when it did not exit normally
  std::string text;  // stdout and stderr
};

inline Output run_shell(const std::string& cmd) {
  Output o;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.text.append(buf.data(), n);
  int st = ::pclose(p);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

// The coldstart binary under test with `args`, `env` (e.g. "env -u X") before it.
inline Output run(const std::string& args, const std::string& env = "") {
  return run_shell(env + " " + std::string(COLDSTART_BIN) + " " + args);
}

}  // namespace coldstart::test_cli
