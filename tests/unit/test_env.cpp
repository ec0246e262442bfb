// lib/core env.hpp, the typed reader of TENSORHUB_* variables (set and unset here with
// setenv/unsetenv): unset and empty values, every type's parsing and range, and that a bad
// value is a UserError naming the variable and the value; and TENSORHUB_LOG, read through it
// (an unknown level used to be read as warn without a word).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>

#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub {
namespace {

using namespace std::chrono_literals;

constexpr const char* kVar = "TENSORHUB_TEST_ENV_VARIABLE";

// Sets kVar (or unsets it for nullptr) for one test.
class Env : public ::testing::Test {
 protected:
  ~Env() override { ::unsetenv(kVar); }
  static void set(const char* value) {
    if (value == nullptr) {
      ::unsetenv(kVar);
    } else {
      ::setenv(kVar, value, 1);
    }
  }
};

template <class Fn>
void expect_bad(Fn&& fn, const std::string& value) {
  try {
    fn();
    ADD_FAILURE() << "expected UserError for '" << value << "'";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::string(kVar) + "='" + value + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("expected"), std::string::npos) << what;
  }
}

TEST_F(Env, UnsetAndEmptyAreNotSet) {
  set(nullptr);
  EXPECT_FALSE(env::text(kVar));
  EXPECT_FALSE(env::raw(kVar));
  EXPECT_FALSE(env::integer(kVar));
  EXPECT_FALSE(env::flag(kVar));
  set("");
  EXPECT_FALSE(env::text(kVar));
  EXPECT_FALSE(env::integer(kVar));
  EXPECT_FALSE(env::millis(kVar));
  ASSERT_TRUE(env::raw(kVar));  // raw tells "set but empty" apart
  EXPECT_EQ(*env::raw(kVar), "");
  set("x y");
  EXPECT_EQ(env::text(kVar), "x y");
}

TEST_F(Env, Integer) {
  set("42");
  EXPECT_EQ(env::integer(kVar), 42u);
  EXPECT_EQ(env::integer(kVar, 42, 42), 42u);
  for (const char* bad : {"abc", "12abc", "-1", " 4", "1.5", "99999999999999999999"}) {
    set(bad);
    expect_bad([] { (void)env::integer(kVar); }, bad);
  }
  set("7");
  expect_bad([] { (void)env::integer(kVar, 8, 10); }, "7");
}

TEST_F(Env, Bytes) {
  set("64KiB");
  EXPECT_EQ(env::bytes(kVar), 64u * 1024);
  set("4096");
  EXPECT_EQ(env::bytes(kVar), 4096u);
  set("lots");
  expect_bad([] { (void)env::bytes(kVar); }, "lots");
  set("1GiB");
  expect_bad([] { (void)env::bytes(kVar, 0, 1 << 20); }, "1GiB");
}

TEST_F(Env, Flag) {
  for (const char* yes : {"1", "true", "YES", "On"}) {
    set(yes);
    EXPECT_EQ(env::flag(kVar), true) << yes;
  }
  for (const char* no : {"0", "false", "no", "OFF"}) {
    set(no);
    EXPECT_EQ(env::flag(kVar), false) << no;
  }
  set("2");
  expect_bad([] { (void)env::flag(kVar); }, "2");
}

TEST_F(Env, Durations) {
  set("750");
  EXPECT_EQ(env::millis(kVar), 750ms);
  EXPECT_EQ(env::micros(kVar), 750us);
  EXPECT_EQ(env::seconds(kVar), 750s);
  set("5s");
  expect_bad([] { (void)env::millis(kVar); }, "5s");
  set("0");
  expect_bad([] { (void)env::millis(kVar, 1); }, "0");
  set("-3");
  expect_bad([] { (void)env::seconds(kVar); }, "-3");
  EXPECT_EQ(env::seconds(kVar, -5, 5), -3s);
}

TEST_F(Env, Choice) {
  set("b");
  EXPECT_EQ(env::choice(kVar, {"a", "b"}), "b");
  set("B");
  expect_bad([] { (void)env::choice(kVar, {"a", "b"}); }, "B");
}

// TENSORHUB_LOG goes through env::choice.
class LogLevelEnv : public ::testing::Test {
 protected:
  ~LogLevelEnv() override { ::unsetenv("TENSORHUB_LOG"); }
};

TEST_F(LogLevelEnv, KnownLevels) {
  ::unsetenv("TENSORHUB_LOG");
  EXPECT_EQ(log_level_from_env(), LogLevel::kWarn);
  ::setenv("TENSORHUB_LOG", "debug", 1);
  EXPECT_EQ(log_level_from_env(), LogLevel::kDebug);
  ::setenv("TENSORHUB_LOG", "error", 1);
  EXPECT_EQ(log_level_from_env(), LogLevel::kError);
}

TEST_F(LogLevelEnv, AnUnknownLevelIsAUserErrorNamingTheVariable) {
  ::setenv("TENSORHUB_LOG", "verbose", 1);
  try {
    (void)log_level_from_env();
    ADD_FAILURE() << "TENSORHUB_LOG=verbose accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("TENSORHUB_LOG='verbose'"), std::string::npos) << e.what();
  }
  // A Logger never throws (it is made on error paths too): it logs at warn.
  EXPECT_TRUE(Logger("test").enabled(LogLevel::kWarn));
  EXPECT_FALSE(Logger("test").enabled(LogLevel::kInfo));
}

}  // namespace
}  // namespace tensorhub
