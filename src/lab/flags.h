// Flag values into the model's types: each parser throws InputError naming the flag and the accepted values.
#pragma once
#include <string>
#include <string_view>

#include "model/spec.h"
#include "util/error.h"

namespace coldstart {

// "isolated" -> Mode::isolated, for any named enum; `flag` names the input in the error ("--modes").
template <NamedEnum E>
E parse_enum(std::string_view text, const std::string& flag, const std::string& hint = "") {
  if (auto v = enum_from<E>(text)) return *v;
  throw InputError(flag + " " + std::string(text) + ": unknown; use " + enum_choices<E>() + hint);
}

Mode parse_mode(const std::string& s, const std::string& what = "--modes");
Collective parse_collective(const std::string& s);
// list: the flag takes a list to compare (bench), and the message says so; trace takes one value.
NcclLog parse_nccl_log(const std::string& s, bool list = true);
Groups parse_groups(const std::string& s);
EnvAxis parse_env_axis(const std::string& text);
Startup parse_startup(const std::string& text);  // --startup
Fix parse_fix(const std::string& text);          // --fix

}  // namespace coldstart
