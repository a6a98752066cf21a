// Launcher detection on each launcher's variables, Slurm node lists, and the bad forms.
#include "launch/external.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "util/error.h"

namespace coldstart::launch {
namespace {

GetEnv env_of(const std::map<std::string, std::string>& m) {
  return [m](const char* k) -> const char* {
    auto it = m.find(k);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}

TEST(Launcher, Torchrun) {
  auto r = detect_launcher(env_of({{"RANK", "3"},
                                   {"WORLD_SIZE", "8"},
                                   {"LOCAL_RANK", "3"},
                                   {"LOCAL_WORLD_SIZE", "4"},
                                   {"MASTER_ADDR", "node7"},
                                   {"MASTER_PORT", "29500"},
                                   {"TORCHELASTIC_RUN_ID", "job1"}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->launcher, "torchrun");
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->world, 8);
  EXPECT_EQ(r->local_rank, 3);
  EXPECT_EQ(r->local_world, 4);
  EXPECT_EQ(r->coord_host, "node7");
  EXPECT_EQ(r->coord_port, 0);  // torchrun's store has MASTER_PORT: the coordinator's port is derived from the job
  EXPECT_EQ(r->job_id, "job1:node7:29500");
}

TEST(Launcher, RayTrainSetsTorchVariables) {
  auto r = detect_launcher(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"RAY_NODE_ID", "abc"}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->launcher, "ray");
}

TEST(Launcher, SlurmFindsRankZeroOnTheFirstNode) {
  auto r = detect_launcher(env_of({{"SLURM_PROCID", "5"},
                                   {"SLURM_NTASKS", "16"},
                                   {"SLURM_LOCALID", "1"},
                                   {"SLURM_JOB_ID", "4242"},
                                   {"SLURM_STEP_ID", "0"},
                                   {"SLURM_STEP_NODELIST", "gpu[03-05,09]"}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->launcher, "slurm");
  EXPECT_EQ(r->rank, 5);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->coord_host, "gpu03");
  EXPECT_EQ(r->job_id, "4242.0");
  EXPECT_EQ(slurm_first_host("a1,b[1-2]"), "a1");
  EXPECT_EQ(slurm_first_host("node"), "node");
  EXPECT_EQ(slurm_first_host("rack1-n[007,010-012]"), "rack1-n007");
}

TEST(Launcher, OpenMpiAndPmi) {
  auto o = detect_launcher(env_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                   {"OMPI_COMM_WORLD_SIZE", "2"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                   {"OMPI_MCA_ess_base_jobid", "77"}}));
  ASSERT_TRUE(o);
  EXPECT_EQ(o->launcher, "openmpi");
  EXPECT_EQ(o->local_world, 2);
  EXPECT_EQ(o->job_id, "77");
  EXPECT_TRUE(o->coord_host.empty());
  auto p = detect_launcher(
      env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "4"}}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->launcher, "pmi");
  EXPECT_EQ(p->world, 4);
  EXPECT_FALSE(detect_launcher(env_of({{"PATH", "/bin"}})));
}

TEST(Launcher, EveryRankDerivesTheSamePortAndToken) {
  ExternalRank a{"slurm", 0, 4, 0, -1, "4242.0", "gpu03", 0}, b = a;
  b.rank = 3;
  EXPECT_EQ(derived_port("4242.0"), derived_port("4242.0"));
  EXPECT_NE(derived_port("4242.0"), derived_port("4242.1"));
  EXPECT_GE(derived_port("x"), 20000);
  EXPECT_LT(derived_port("x"), 32768);
  auto none = env_of({});
  EXPECT_EQ(external_token(a, none), external_token(b, none));
  EXPECT_EQ(external_token(a, env_of({{"COLDSTART_TOKEN", "s3cret"}})), "s3cret");
}

TEST(Launcher, MalformedVariablesAreNamed) {
  auto bad = [](std::map<std::string, std::string> m, const std::string& needle) {
    try {
      detect_launcher(env_of(m));
      ADD_FAILURE() << "accepted " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad({{"RANK", "one"}, {"WORLD_SIZE", "2"}}, "RANK=one");
  bad({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, "outside WORLD_SIZE=2");
  bad({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}}, "SLURM_NTASKS=0");
  bad({{"OMPI_COMM_WORLD_RANK", "0"}}, "OMPI_COMM_WORLD_SIZE is not set");
  // Half of a pair names the missing half.
  bad({{"RANK", "0"}}, "RANK=0 is set but WORLD_SIZE is not");
  bad({{"WORLD_SIZE", "2"}}, "WORLD_SIZE=2 is set but RANK is not");
  bad({{"PMI_RANK", "1"}}, "but PMI_SIZE is not");
  bad({{"SLURM_PROCID", "0"}}, "but SLURM_NTASKS is not");
}

// The line saying no launcher was found names what detect_launcher reads: each launcher's rank variable, set to 0 with
// its size variable at 1, is found.
TEST(Launcher, TheVariablesNamedWhenNoneIsFoundAreTheOnesRead) {
  const std::string text(kLauncherVariables);
  const std::regex named("[A-Z_]+/[A-Z_]+|[A-Z]+_[A-Z_]+");  // a variable has a "_" or a "/" to its pair
  int launchers = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), named); it != std::sregex_iterator();
       ++it, ++launchers) {
    const std::string vars = it->str();
    const size_t slash = vars.find('/');
    const std::string rank = vars.substr(0, slash);
    const std::string size =
        slash == std::string::npos ? std::regex_replace(rank, std::regex("_RANK$"), "_SIZE") : vars.substr(slash + 1);
    EXPECT_TRUE(detect_launcher(env_of({{rank, "0"}, {size, "1"}}))) << vars;
  }
  EXPECT_EQ(launchers, 4) << text;
}

}  // namespace
}  // namespace coldstart::launch
