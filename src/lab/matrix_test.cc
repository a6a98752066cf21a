#include "lab/matrix.h"

#include <gtest/gtest.h>

#include "lab/flags.h"

#include <map>

#include "util/error.h"

namespace coldstart::lab {

TEST(EnvAxis, EmptyValueMeansUnset) {
  EnvAxis a = parse_env_axis("NCCL_CUMEM_ENABLE=,0,1");
  EXPECT_EQ(a.key, "NCCL_CUMEM_ENABLE");
  ASSERT_EQ(a.values.size(), 3u);
  EXPECT_FALSE(a.values[0]);
  EXPECT_EQ(*a.values[1], "0");
  EXPECT_EQ(*a.values[2], "1");
}

TEST(EnvAxis, BadFormsAreInputErrors) {
  for (const char* bad : {"NCCL_CUMEM_ENABLE", "=1", "1ABC=2", "A-B=1", "CUDA_VISIBLE_DEVICES=0"})
    EXPECT_THROW(parse_env_axis(bad), InputError) << bad;
}

TEST(Matrix, DefaultIsEveryModeTimesCumemUnsetAndOff) {
  BenchSpec spec;
  auto configs = expand(spec);
  ASSERT_EQ(configs.size(), 6u);
  EXPECT_EQ(configs[0].label(), "shared · NCCL_CUMEM_ENABLE=(unset)");
  EXPECT_EQ(configs[1].label(), "shared · NCCL_CUMEM_ENABLE=0");
  EXPECT_EQ(configs[5].label(), "remap · NCCL_CUMEM_ENABLE=0");
}

TEST(Matrix, CartesianProductOfAxesAndLibraries) {
  BenchSpec spec;
  spec.modes = {Mode::isolated};
  spec.env = {parse_env_axis("A=1,2"), parse_env_axis("B=x,y,z")};
  spec.nccl_libs = {"/a/libnccl.so.2", "/b/libnccl.so.2"};
  auto configs = expand(spec);
  ASSERT_EQ(configs.size(), 12u);
  std::map<std::string, int> seen;
  for (const auto& c : configs) seen[c.label()]++;
  EXPECT_EQ(seen.size(), 12u);  // all distinct
  for (size_t i = 0; i < configs.size(); ++i) EXPECT_EQ(configs[i].id, static_cast<int>(i));
}

TEST(Matrix, TiedVariablesTakeTheSameValue) {
  BenchSpec spec;
  spec.modes = {Mode::isolated};
  spec.env = {parse_env_axis("NCCL_MIN_NCHANNELS+NCCL_MAX_NCHANNELS=2,32")};
  auto configs = expand(spec);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(configs[1].env, (std::vector<EnvSetting>{{"NCCL_MIN_NCHANNELS", "32"}, {"NCCL_MAX_NCHANNELS", "32"}}));
  EXPECT_THROW(parse_env_axis("A+=1"), InputError);
  EXPECT_THROW(parse_env_axis("A+CUDA_VISIBLE_DEVICES=1"), InputError);
  spec.env.push_back(parse_env_axis("NCCL_MAX_NCHANNELS=4"));
  EXPECT_THROW(expand(spec), InputError);
}

TEST(Matrix, RepeatedKeyIsAnInputError) {
  BenchSpec spec;
  spec.env = {parse_env_axis("A=1"), parse_env_axis("A=2")};
  EXPECT_THROW(expand(spec), InputError);
}

TEST(Schedule, EveryTrialOnceInterleavedAndReproducible) {
  BenchSpec spec;
  auto configs = expand(spec);
  auto a = schedule(configs, 5, 7), b = schedule(configs, 5, 7), c = schedule(configs, 5, 8);
  ASSERT_EQ(a.size(), 30u);
  std::map<int, int> per_config;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, static_cast<int>(i));
    EXPECT_EQ(a[i].repeat, per_config[a[i].config_id]++);  // repeats numbered in run order
    EXPECT_EQ(a[i].config_id, b[i].config_id);
  }
  for (auto& [id, n] : per_config) EXPECT_EQ(n, 5);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= a[i].config_id != c[i].config_id;
  EXPECT_TRUE(differs);
  // Interleaved: not all of one configuration's trials first.
  bool blocked = true;
  for (size_t i = 1; i < 5; ++i) blocked &= a[i].config_id == a[0].config_id;
  EXPECT_FALSE(blocked);
}

TEST(Schedule, ZeroTrialsIsAnInputError) { EXPECT_THROW(schedule(expand(BenchSpec{}), 0, 1), InputError); }

TEST(Spec, CollectivesAndGroupsParse) {
  EXPECT_EQ(parse_collective("all_to_all"), Collective::all_to_all);
  EXPECT_THROW(parse_collective("allreduce"), InputError);
  EXPECT_EQ(parse_groups("world").kind, Groups::Kind::world);
  EXPECT_EQ(parse_groups("split:4").name(), "split:4");
  EXPECT_EQ(parse_groups("fresh:2").count, 2);
  for (const char* bad : {"split", "split:0", "split:x", "fresh:65", "tree:2"})
    EXPECT_THROW(parse_groups(bad), InputError) << bad;
}

}  // namespace coldstart::lab

namespace coldstart::lab {

TEST(Fixes, NamesRoundTripAndBadOnesAreRefused) {
  for (const char* name : {"none", "cumem-off", "eager-connect", "channels:8", "prewarm", "split-share", "socket-poll"})
    EXPECT_EQ(parse_fix(name).name(), name);
  for (const char* bad : {"cumem", "channels:0", "channels:65", "channels:x", "prewarm:1"})
    EXPECT_THROW(parse_fix(bad), InputError) << bad;
  EXPECT_EQ(parse_fix("cumem-off").env(), (std::vector<EnvSetting>{{"NCCL_CUMEM_ENABLE", "0"}}));
  EXPECT_EQ(parse_fix("eager-connect").env(), (std::vector<EnvSetting>{{"NCCL_RUNTIME_CONNECT", "0"}}));
  EXPECT_EQ(parse_fix("channels:4").env(), (std::vector<EnvSetting>{{"NCCL_MAX_CTAS", "4"}}));
  EXPECT_EQ(parse_fix("socket-poll").env(), (std::vector<EnvSetting>{{"NCCL_SOCKET_POLL_TIMEOUT_MSEC", "1"}}));
  EXPECT_TRUE(parse_fix("prewarm").env().empty());
  for (const char* name : {"cumem-off", "eager-connect", "channels:8", "prewarm", "split-share", "socket-poll"})
    EXPECT_FALSE(parse_fix(name).cost().empty()) << name;  // every fix states what it costs
}

TEST(Startups, NamesRoundTripAndBadOnesAreRefused) {
  for (const char* name : {"none", "cpu:300ms", "cpu:2s", "h2d:32GiB", "h2d:4KiB", "h2d:1000", "h2d-pinned:8GiB",
                           "h2d:2GiB/16MiB", "h2d-pinned:1GiB/1MiB"})
    EXPECT_EQ(parse_startup(name).name(), name);
  EXPECT_DOUBLE_EQ(parse_startup("cpu:300ms").seconds, 0.3);
  EXPECT_EQ(parse_startup("h2d:1GiB").bytes, uint64_t{1} << 30);
  EXPECT_EQ(parse_startup("h2d:1GiB").piece, uint64_t{256} << 20);
  EXPECT_EQ(parse_startup("h2d:1GiB/16MiB").piece, uint64_t{16} << 20);
  EXPECT_EQ(parse_startup("h2d:1GiB/256MiB").name(), "h2d:1GiB");  // the default piece is not spelled
  for (const char* bad : {"cpu", "cpu:0s", "cpu:-1s", "h2d:0", "gpu:1s", "h2d:2TiB", "h2d:1GiB/", "h2d:1GiB/0",
                          "h2d:1GiB/32GiB", "cpu:1s/1MiB", "h2d:/16MiB"})
    EXPECT_THROW(parse_startup(bad), InputError) << bad;
}

TEST(Matrix, FixesAndStartupsAreAxesThatReplaceTheDefaultCumemAxis) {
  BenchSpec spec;
  spec.modes = {Mode::isolated};
  spec.startups = {parse_startup("cpu:300ms"), parse_startup("h2d:1GiB")};
  spec.fixes = {parse_fix("none"), parse_fix("cumem-off"), parse_fix("prewarm")};
  auto configs = expand(spec);
  ASSERT_EQ(configs.size(), 6u);
  EXPECT_EQ(configs[0].label(), "isolated · startup=cpu:300ms");
  EXPECT_EQ(configs[1].label(), "isolated · startup=cpu:300ms · fix=cumem-off");
  EXPECT_EQ(configs[5].label(), "isolated · startup=h2d:1GiB · fix=prewarm");
  EXPECT_NE(configs[0].key(), configs[3].key());
}

// A fix's configuration records the variables its ranks run with; its label and key stay the fix's name alone, as in
// runs recorded before (so --resume and compare match them).
TEST(Matrix, FixConfigurationsRecordTheEnvTheirRanksRunWith) {
  BenchSpec spec;
  spec.modes = {Mode::isolated};
  spec.fixes = {parse_fix("none"), parse_fix("cumem-off"), parse_fix("eager-connect"), parse_fix("channels:8")};
  auto configs = expand(spec);
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_TRUE(configs[0].env.empty());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"NCCL_CUMEM_ENABLE", "0"}, {"NCCL_RUNTIME_CONNECT", "0"}, {"NCCL_MAX_CTAS", "8"}};
  for (size_t i = 0; i < want.size(); ++i) {
    const Config& c = configs[i + 1];
    ASSERT_EQ(c.env.size(), 1u) << c.label();
    EXPECT_EQ(c.env[0].key, want[i].first);
    EXPECT_EQ(c.env[0].value, want[i].second);
  }
  EXPECT_EQ(configs[1].label(), "isolated · fix=cumem-off");
  EXPECT_EQ(configs[1].key(), "isolated|nccl=|log=light|trace=off|fix=cumem-off");
  EXPECT_EQ(configs[3].key(), "isolated|nccl=|log=light|trace=off|fix=channels:8");
  // Beside an --env axis: the axis first, then the fix's variables; the label names the axis and the fix.
  spec.env = {parse_env_axis("NCCL_ALGO=Ring")};
  auto with_axis = expand(spec);
  ASSERT_EQ(with_axis[1].env.size(), 2u);
  EXPECT_EQ(with_axis[1].env[0].key, "NCCL_ALGO");
  EXPECT_EQ(with_axis[1].env[1].key, "NCCL_CUMEM_ENABLE");
  EXPECT_EQ(with_axis[1].label(), "isolated · NCCL_ALGO=Ring · fix=cumem-off");
}

// --env replaces the default cuMem axis (the flag's help and docs/bench.md say so); giving it back keeps both.
TEST(Matrix, EnvReplacesTheDefaultCumemAxis) {
  BenchSpec spec;
  spec.modes = {Mode::isolated};
  EXPECT_EQ(expand(spec).size(), 2u);  // NCCL_CUMEM_ENABLE unset and 0
  spec.env = {parse_env_axis("NCCL_ALGO=Ring,Tree")};
  auto replaced = expand(spec);
  ASSERT_EQ(replaced.size(), 2u);
  for (const auto& c : replaced) EXPECT_EQ(c.label().find("NCCL_CUMEM_ENABLE"), std::string::npos) << c.label();
  spec.env.insert(spec.env.begin(), default_env_axis());
  EXPECT_EQ(expand(spec).size(), 4u);
}

TEST(Matrix, ConflictingAndRepeatedSettingsAreRefused) {
  BenchSpec spec;
  spec.fixes = {parse_fix("cumem-off")};
  spec.env = {parse_env_axis("NCCL_CUMEM_ENABLE=,0")};
  EXPECT_THROW(expand(spec), InputError);  // the fix and --env both set the variable
  BenchSpec share;
  share.fixes = {parse_fix("split-share")};
  EXPECT_THROW(expand(share), InputError);  // needs --groups split:K
  share.groups = parse_groups("split:2");
  EXPECT_NO_THROW(expand(share));
  BenchSpec twice;
  twice.modes = {Mode::shared, Mode::shared};
  EXPECT_THROW(expand(twice), InputError);
  BenchSpec env_twice;
  env_twice.env = {parse_env_axis("NCCL_ALGO=Ring,Ring")};
  EXPECT_THROW(expand(env_twice), InputError);
}

// --link's values: latency in us, ms or s, a rate in bits; each name reads back as itself.
TEST(Links, NamesRoundTripAndBadOnesAreRefused) {
  for (const char* name : {"50us/100gbit", "2ms", "1s", "1500us", "0ms/10gbit", "2ms/1500mbit", "10us/9bit"})
    EXPECT_EQ(Link::parse(name)->name(), name) << name;
  EXPECT_DOUBLE_EQ(Link::parse("50us")->latency_s, 50e-6);
  EXPECT_EQ(Link::parse("1ms/100gbit")->rate_bps, 100'000'000'000u);
  EXPECT_EQ(Link::parse("1ms/100Gbit")->name(), "1ms/100gbit");
  EXPECT_EQ(Link::parse("1.5ms")->name(), "1500us");
  for (const char* bad : {"", "0ms", "2", "ms", "-1ms", "11s", "0.5us", "1ms/", "1ms/0gbit", "1ms/100gb", "1ms/x"})
    EXPECT_FALSE(Link::parse(bad).has_value()) << bad;
}

// --nodes is an axis: one configuration per node count, named in the key and label only above one node, so the
// keys of every run on one host stay what they were; --link is in the key of those above one node only.
TEST(Matrix, NodesAreAnAxisNamedOnlyAboveOneNode) {
  BenchSpec one;
  one.modes = {Mode::isolated};
  const std::string before = expand(one)[0].key();
  EXPECT_EQ(before, "isolated|NCCL_CUMEM_ENABLE unset|nccl=|log=light|trace=off");
  BenchSpec spec = one;
  spec.nodes = {1, 2, 4};
  spec.link = *Link::parse("2ms");
  auto configs = expand(spec);
  ASSERT_EQ(configs.size(), 6u);  // cuMem unset and off, times 3 node counts
  EXPECT_EQ(configs[0].key(), before);
  EXPECT_EQ(configs[0].nodes, 1);
  EXPECT_FALSE(configs[0].link.any());
  EXPECT_EQ(configs[1].key(), before + "|nodes=2|link=2ms");
  EXPECT_EQ(configs[2].label(), "isolated · NCCL_CUMEM_ENABLE=(unset) · 4 nodes (link 2ms)");
  BenchSpec twice = one;
  twice.nodes = {2, 2};
  EXPECT_THROW(expand(twice), InputError);
  BenchSpec none = one;
  none.nodes = {};
  EXPECT_THROW(expand(none), InputError);
}

// The flags: node counts 1 to 64, each once; --link needs a count above one; Ray places its own actors.
TEST(Flags, NodesAndLinkAreCheckedEachInOneLine) {
  BenchFlags f;
  f.nodes = "1,2,4";
  f.link = "50us/100gbit";
  BenchSpec s = to_spec(f);
  EXPECT_EQ(s.nodes, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(s.link.name(), "50us/100gbit");
  auto refused = [](BenchFlags g, const std::string& words) {
    try {
      to_spec(g);
      ADD_FAILURE() << "accepted --nodes " << g.nodes << " --link " << g.link;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  for (const char* bad : {"0", "65", "x", "2,", "1,2,2"}) {
    BenchFlags g;
    g.nodes = bad;
    refused(g, "--nodes " + std::string(bad));
  }
  BenchFlags no_nodes;
  no_nodes.link = "2ms";
  refused(no_nodes, "give --nodes with a count above 1");
  BenchFlags bad_link;
  bad_link.nodes = "2";
  bad_link.link = "2";
  refused(bad_link, "--link 2: give LATENCY[/RATE]");
  BenchFlags ray;
  ray.nodes = "2";
  ray.launcher = "ray";
  refused(ray, "--nodes with --launcher ray");
}

}  // namespace coldstart::lab
