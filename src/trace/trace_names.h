// Which CUDA API calls the tracer records, and how the budget groups them. One list, shared by the injection library
// (what to record) and the merger (what each call means).
#pragma once
#include <string_view>

namespace coldstart::trace {

// The budget's categories, in display order.
enum class Category {
  context,
  kernel_loading,
  mem_create,
  mem_reserve,
  mem_map,
  mem_set_access,
  mem_export,
  mem_import,
  mem_release,
  ipc_get,
  ipc_open,
  peer_query,
  alloc,
  launch,
  sync,
  other
};
const char* category_name(Category c);  // "context", "kernel_loading", "export", ...
Category category_of(std::string_view function);

// Whether a call of this name is recorded at all (start-up work, not the steady-state hot path).
bool recorded_call(const char* function);

}  // namespace coldstart::trace
