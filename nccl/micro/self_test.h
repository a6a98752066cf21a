// The rank programs' checks that need no GPU (run by ctest as `<program> --self-test`): parsing, the interleaved
// order, the ring and the verification bytes, fd passing over a Unix socket, and the launcher itself (ranks that
// meet at barriers and report, a rank that fails, a rank that hangs past the timeout).
#pragma once
#include <string>

namespace coldstart::micro {

int micro_self_test(const std::string& program);  // 0 when every check passes; prints each failure
// The body of a rank the launcher test starts: role "ok", "fail" (rank 1 fails) or "hang" (rank 1 never reports).
int micro_self_test_rank(const std::string& role, int rank);

}  // namespace coldstart::micro
