// Where NVIDIA's pip wheels put their libraries: site-packages of the python3 that PATH would run (a venv's too).
#pragma once
#include <string>
#include <vector>

namespace coldstart::gpu {

// Existing files <prefix>/lib*/python3*/{site,dist}-packages/<relative> for the first python3 on PATH.
std::vector<std::string> python_site_files(const std::string& relative);

}  // namespace coldstart::gpu
