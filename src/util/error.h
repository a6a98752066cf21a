// Errors that reach the user. InputError is for what the user gave us (exit status 2, one line that names the input
// and the fix); RuntimeError is for what went wrong while running (exit status 1).
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

}  // namespace coldstart
