// This process's environment, read once into a map (the variables `keep` accepts).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace coldstart {

std::map<std::string, std::string> environment(const std::function<bool(std::string_view key)>& keep);

}  // namespace coldstart
