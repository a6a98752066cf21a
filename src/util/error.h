// Errors that reach the user. InputError is for what the user gave us (exit status 2, one line that names the input
// and the fix); RuntimeError is for what went wrong while running (exit status 1); Interrupted is Ctrl-C (SIGINT,
// SIGTERM, SIGHUP) noticed where the command cannot simply return (exit status 130, as a shell reports a SIGINT).
#pragma once
#include <stdexcept>
#include <string>

namespace coldstart {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace coldstart
