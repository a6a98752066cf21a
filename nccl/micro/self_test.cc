#include "micro/self_test.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <thread>

#include "micro/args.h"
#include "micro/cumem_rank.h"
#include "micro/expected.h"
#include "micro/launch.h"
#include "micro/stats.h"
#include "micro/uds.h"

namespace coldstart::micro {
namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("self-test FAIL: %s\n", what.c_str());
    ++failures;
  }
}

void check_parsing() {
  std::vector<int> list;
  std::string error;
  expect(parse_int_list("0,1", &list, &error) && list == std::vector<int>{0, 1}, "parse_int_list 0,1");
  expect(parse_int_list("2,4,8", &list, &error) && list == std::vector<int>{2, 4, 8}, "parse_int_list 2,4,8");
  expect(!parse_int_list("0,,1", &list, &error) && error.find("0,,1") != std::string::npos, "empty item refused");
  expect(!parse_int_list("-1", &list, &error), "negative refused");
  expect(!parse_int_list("a", &list, &error), "letters refused");
  uint64_t size = 0;
  expect(parse_size("10MiB", &size, &error) && size == 10ull << 20, "10MiB");
  expect(parse_size("10M", &size, &error) && size == 10ull << 20, "10M");
  expect(parse_size("4k", &size, &error) && size == 4096, "4k");
  expect(parse_size("1GiB", &size, &error) && size == 1ull << 30, "1GiB");
  expect(parse_size("4096", &size, &error) && size == 4096, "4096");
  expect(!parse_size("10XB", &size, &error) && error.find("10XB") != std::string::npos, "bad unit refused");
  expect(!parse_size("MiB", &size, &error), "no number refused");
  expect(format_size(10ull << 20) == "10MiB" && format_size(1ull << 30) == "1GiB" && format_size(4) == "4B" &&
             format_size(3ull << 10) == "3KiB",
         "format_size");
  expect(split_list("a,b") == std::vector<std::string>{"a", "b"}, "split_list");
  expect(median({3, 1, 2}) == 2 && median({4, 1, 2, 3}) == 2.5 && median({}) == 0, "median");
}

void check_plan() {
  auto a = interleaved_plan(6, 5, 7), b = interleaved_plan(6, 5, 7), c = interleaved_plan(6, 5, 8);
  expect(a.size() == 30, "plan has configs x trials slots");
  bool same = a.size() == b.size(), differs = false, balanced = true;
  for (size_t i = 0; i < a.size() && same; ++i) same = a[i].config == b[i].config && a[i].trial == b[i].trial;
  for (size_t i = 0; i < a.size(); ++i) differs = differs || a[i].config != c[i].config;
  for (int t = 0; t < 5; ++t) {
    std::set<int> seen;
    for (const auto& s : a)
      if (s.trial == t) seen.insert(s.config);
    balanced = balanced && seen.size() == 6;
  }
  expect(same, "the same seed gives the same order");
  expect(differs, "another seed gives another order");
  expect(balanced, "every trial round holds every configuration once");
}

void check_ring() {
  expect(ring_sources(0, 2, false) == std::vector<int>{1}, "ring 0/2");
  expect(ring_sources(3, 4, false) == std::vector<int>{0}, "ring 3/4 wraps");
  expect(ring_sources(0, 4, true) == std::vector<int>{1, 3}, "both neighbours");
  bool nonzero = true, distinct = true;
  for (int r = 0; r < 8; ++r)
    for (int i = 0; i < 64; ++i) {
      nonzero = nonzero && verify_byte(r, i) != 0;
      distinct = distinct && verify_byte(r, i) != verify_byte(r + 1, i) && verify_byte(r, i) != verify_byte(r, i + 1);
    }
  expect(nonzero, "verification bytes are never 0 (the untouched value)");
  expect(distinct, "neighbouring ranks and buffers write different bytes");
  expect(visible_device_for("", 1) == "1" && visible_device_for("2,3", 1) == "3" &&
             visible_device_for("GPU-a,GPU-b", 0) == "GPU-a",
         "visible_device_for maps through the inherited CUDA_VISIBLE_DEVICES");
}

// Each collective simulated on the host element by element, by its definition, against expected_value.
void check_expected() {
  for (int world : {2, 3, 4, 8})
    for (uint64_t bytes : {4ull, 12ull, 4096ull, 40004ull})
      for (const auto& collective : kCollectives) {
        Shape s = shape_for(collective, bytes, world, 1 % world);
        std::vector<std::vector<float>> in(world), out(world, std::vector<float>(s.recv_count, -1));
        for (int r = 0; r < world; ++r)
          for (size_t i = 0; i < s.send_count; ++i) in[r].push_back(input_value(r, i));
        for (int me = 0; me < world; ++me)
          for (size_t i = 0; i < s.recv_count; ++i) {
            float v = 0;
            if (collective == "all_reduce" || collective == "reduce_scatter") {
              size_t at = collective == "all_reduce" ? i : me * s.chunk + i;
              for (int r = 0; r < world; ++r) v += in[r][at];
            }
            if (collective == "broadcast") v = in[s.root][i];
            if (collective == "sendrecv") v = in[(me + world - 1) % world][i];
            if (collective == "all_gather") v = in[i / s.chunk][i % s.chunk];
            if (collective == "all_to_all") v = in[i / s.chunk][me * s.chunk + i % s.chunk];
            out[me][i] = v;
          }
        bool same = s.recv_count > 0 && s.send_count > 0;
        for (int me = 0; me < world && same; ++me)
          for (size_t i = 0; i < s.recv_count && same; ++i) same = out[me][i] == expected_value(s, world, me, i);
        expect(same, "expected_value matches " + collective + " simulated, " + std::to_string(world) + " ranks, " +
                         std::to_string(bytes) + " bytes");
      }
  Shape gather = shape_for("all_gather", 4, 8, 0);
  expect(gather.send_count == 1 && gather.recv_count == 8, "one element per rank at the smallest size");
  Shape reduce = shape_for("all_reduce", 1ull << 30, 8, 0);
  expect(shape_for("bogus", 4, 2, 0).kind == Kind::unknown && reduce.kind == Kind::all_reduce, "kinds by name");
  expect(reduce.recv_count == (1ull << 28), "1 GiB is 2^28 floats");
  expect(expected_value(reduce, 64, 0, 250) == 64 * 251 + 64 * 63 / 2, "sums stay exact in float32");
  auto sizes = default_sizes(1ull << 30);
  expect(sizes.size() == 15 && sizes.front() == 4 && sizes.back() == (1ull << 30), "4 B to 1 GiB in powers of 4");
  RankView v;
  expect(rank_view("shared", {"0", "1"}, 3, &v) && v.visible == "0,1" && v.device == 1, "shared view");
  expect(rank_view("isolated", {"0", "1"}, 3, &v) && v.visible == "1" && v.device == 0, "isolated view");
  expect(rank_view("remap", {"0", "1", "2"}, 1, &v) && v.visible == "1,0,2" && v.device == 0, "remap view");
  expect(rank_view("isolated", {"0"}, 5, &v) && v.visible == "0" && v.device == 0, "several ranks on one GPU");
  expect(!rank_view("bogus", {"0"}, 0, &v), "unknown mode refused");
}

void check_fd_passing() {
  int pair[2], pipefd[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0 || pipe(pipefd) != 0) return expect(false, "socketpair/pipe");
  uint64_t sent = 42, got = 0;
  int received = -1;
  expect(send_with_fd(pair[0], &sent, sizeof sent, pipefd[1]), "send_with_fd");
  expect(recv_with_fd(pair[1], &got, sizeof got, &received) && got == 42 && received >= 0, "recv_with_fd");
  if (received >= 0) {
    expect(write(received, "z", 1) == 1, "write through the passed fd");
    char c = 0;
    expect(read(pipefd[0], &c, 1) == 1 && c == 'z', "the passed fd is the pipe's");
    close(received);
  }
  expect(send_with_fd(pair[0], &sent, sizeof sent, -1) && recv_with_fd(pair[1], &got, sizeof got, &received) &&
             received == -1,
         "no fd when none is sent");
  char type = 0;
  std::string payload;
  expect(send_message(pair[0], 'D', "hello") && recv_message(pair[1], &type, &payload) && type == 'D' &&
             payload == "hello",
         "framed message");
  close(pair[0]);
  expect(!recv_message(pair[1], &type, &payload), "EOF ends recv_message");
  for (int fd : {pair[1], pipefd[0], pipefd[1]}) close(fd);
}

std::vector<RankSpec> specs(const std::string& role, int world) {
  std::vector<RankSpec> out(world);
  for (int i = 0; i < world; ++i) out[i].args = {"--self-test-rank", role, "--rank", std::to_string(i)};
  return out;
}

void check_launcher(const std::string& program) {
  RunOutcome ok = run_ranks(program, specs("ok", 3), 30);
  expect(ok.ok(), "three ranks meet twice and report: " + ok.failure());
  for (int i = 0; i < 3 && ok.ok(); ++i) expect(ok.ranks[i].result == "rank " + std::to_string(i), "rank's result");
  RunOutcome failed = run_ranks(program, specs("fail", 3), 30);
  expect(!failed.ok() && failed.failure().find("rank 1: planned failure") != std::string::npos,
         "a failing rank is named with its reason: " + failed.failure());
  auto t0 = std::chrono::steady_clock::now();
  RunOutcome hung = run_ranks(program, specs("hang", 2), 2);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect(!hung.ok() && hung.timed_out && s < 10, "a hanging rank ends the run at the timeout: " + hung.failure());
}

}  // namespace

int micro_self_test_rank(const std::string& role, int rank) {
  RankLink link(rank);
  link.barrier();
  if (rank == 1 && role == "fail") {
    link.fail("planned failure");
    return 1;
  }
  if (rank == 1 && role == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
  auto all = link.exchange(std::string(rank, 'x'));
  bool ok = all.size() >= 2 && all[0].empty() && all[1] == "x";
  link.report(ok ? "rank " + std::to_string(rank) : "exchange gave the wrong strings");
  return 0;
}

int micro_self_test(const std::string& program) {
  check_parsing();
  check_plan();
  check_ring();
  check_expected();
  check_fd_passing();
  check_launcher(program);
  std::printf("self-test: %s (%d failure%s)\n", failures ? "FAILED" : "passed", failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}

}  // namespace coldstart::micro
