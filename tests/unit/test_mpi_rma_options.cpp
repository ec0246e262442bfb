// lib/transport mpi_rma options.hpp: MpiRmaOptions::from_env reads TENSORHUB_MPI_MAX_ATTACH,
// TENSORHUB_MPI_PROGRESS_US, TENSORHUB_MPI_FT and TENSORHUB_MPI_READ through env.hpp: defaults when unset, the
// values when set, and a UserError naming the variable for a bad value (TENSORHUB_MPI_MAX_ATTACH=abc
// used to be read as 0 attachments, TENSORHUB_MPI_FT=off as "on").
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>

#include "mpi_rma/options.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

using namespace std::chrono_literals;

class MpiRmaOptionsEnv : public ::testing::Test {
 protected:
  MpiRmaOptionsEnv() { clear(); }
  ~MpiRmaOptionsEnv() override { clear(); }
  static void clear() {
    for (const char* v :
         {"TENSORHUB_MPI_MAX_ATTACH", "TENSORHUB_MPI_PROGRESS_US", "TENSORHUB_MPI_FT", "TENSORHUB_MPI_READ"})
      ::unsetenv(v);
  }
};

void expect_bad(const char* name, const char* value) {
  ::setenv(name, value, 1);
  try {
    (void)MpiRmaOptions::from_env();
    ADD_FAILURE() << name << "=" << value << " accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(std::string(name) + "='" + value + "'"), std::string::npos) << e.what();
  }
  ::unsetenv(name);
}

TEST_F(MpiRmaOptionsEnv, Defaults) {
  const auto o = MpiRmaOptions::from_env();
  EXPECT_EQ(o.max_attach, 30u);
  EXPECT_EQ(o.progress_period, 1000us);
  EXPECT_TRUE(o.fault_tolerance);
  EXPECT_EQ(o.read_mode, MpiReadMode::kGetFlush);
}

TEST_F(MpiRmaOptionsEnv, Values) {
  ::setenv("TENSORHUB_MPI_MAX_ATTACH", "60", 1);
  ::setenv("TENSORHUB_MPI_PROGRESS_US", "0", 1);
  ::setenv("TENSORHUB_MPI_FT", "off", 1);
  const auto o = MpiRmaOptions::from_env();
  EXPECT_EQ(o.max_attach, 60u);
  EXPECT_EQ(o.progress_period, 0us);
  EXPECT_FALSE(o.fault_tolerance);
  ::setenv("TENSORHUB_MPI_FT", "0", 1);
  EXPECT_FALSE(MpiRmaOptions::from_env().fault_tolerance);
  ::setenv("TENSORHUB_MPI_READ", "rget", 1);
  EXPECT_EQ(MpiRmaOptions::from_env().read_mode, MpiReadMode::kRget);
  ::setenv("TENSORHUB_MPI_READ", "get_flush", 1);
  EXPECT_EQ(MpiRmaOptions::from_env().read_mode, MpiReadMode::kGetFlush);
  EXPECT_STREQ(to_string(MpiReadMode::kRget), "rget");
}

TEST_F(MpiRmaOptionsEnv, BadValuesNameTheVariable) {
  expect_bad("TENSORHUB_MPI_MAX_ATTACH", "abc");
  expect_bad("TENSORHUB_MPI_MAX_ATTACH", "0");
  expect_bad("TENSORHUB_MPI_PROGRESS_US", "-5");
  expect_bad("TENSORHUB_MPI_PROGRESS_US", "1ms");
  expect_bad("TENSORHUB_MPI_FT", "maybe");
  expect_bad("TENSORHUB_MPI_READ", "get");
}

}  // namespace
}  // namespace tensorhub::transport
