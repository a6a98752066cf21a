#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "nccllog/parser.h"
#include "nccllog/render.h"
#include "util/json.h"

namespace coldstart::cli {

Run add_nccllog(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto json_out = std::make_shared<bool>(false);
  app.add_option("files", *files, "NCCL debug logs (NCCL_DEBUG=INFO; NCCL_DEBUG_FILE=dir/nccl.%h.%p.log)")->required();
  app.add_flag("--json", *json_out, "Print JSON (schema coldstart.nccllog/2)");
  return [files, json_out]() {
    nccllog::LogSummary s = nccllog::parse_files(*files);
    if (*json_out)
      std::cout << dump_json(nccllog::to_json(s), 1) << "\n";
    else
      std::cout << nccllog::render_table(s);
    return 0;
  };
}

}  // namespace coldstart::cli
