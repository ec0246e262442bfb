// lib/core units.hpp: parse_bytes (plain numbers, SI and IEC suffixes, case, bad input and
// out-of-range sizes -> UserError) and format_bytes (unit selection and rounding).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub {
namespace {

TEST(ParseBytes, PlainNumbersAreBytes) {
  EXPECT_EQ(parse_bytes("0"), 0u);
  EXPECT_EQ(parse_bytes("17"), 17u);
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("17B"), 17u);
}

TEST(ParseBytes, IecSuffixesArePowersOf1024) {
  EXPECT_EQ(parse_bytes("64KiB"), 64u * 1024);
  EXPECT_EQ(parse_bytes("4MiB"), 4u * 1024 * 1024);
  EXPECT_EQ(parse_bytes("1GiB"), 1024ull * 1024 * 1024);
  EXPECT_EQ(parse_bytes("512MiB"), 536870912u);
  // Short forms are IEC too.
  EXPECT_EQ(parse_bytes("2k"), 2048u);
  EXPECT_EQ(parse_bytes("3M"), 3u * 1024 * 1024);
  EXPECT_EQ(parse_bytes("1G"), 1024ull * 1024 * 1024);
}

TEST(ParseBytes, SiSuffixesArePowersOf1000) {
  EXPECT_EQ(parse_bytes("1KB"), 1000u);
  EXPECT_EQ(parse_bytes("5MB"), 5000000u);
  EXPECT_EQ(parse_bytes("1.5GB"), 1500000000u);
}

TEST(ParseBytes, SuffixesAreCaseInsensitive) {
  EXPECT_EQ(parse_bytes("4mib"), 4u * 1024 * 1024);
  EXPECT_EQ(parse_bytes("4MIB"), 4u * 1024 * 1024);
  EXPECT_EQ(parse_bytes("2gb"), 2000000000u);
  EXPECT_EQ(parse_bytes("7b"), 7u);
}

TEST(ParseBytes, FractionsRoundToTheNearestByte) {
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536u);
  EXPECT_EQ(parse_bytes("0.5MiB"), 512u * 1024);
  EXPECT_EQ(parse_bytes("2.5"), 3u);  // llround: halves away from zero
}

TEST(ParseBytes, BadInputThrowsUserError) {
  for (const char* bad : {"", "abc", "MiB", "-5", " 5", "5 MiB", "12XB", "1e3", ".", "1TiB", "4MiBs"}) {
    EXPECT_THROW(parse_bytes(bad), UserError) << "input: '" << bad << "'";
  }
}

// Regression test for a fixed bug (lib/core/src/units.cpp, parse_bytes): std::stod is not required to consume the
// whole digit run, so "1.2.3" parses as 1.2 bytes and "1.2.3MiB" as 1.2 MiB.
TEST(ParseBytes, MoreThanOneDecimalPointThrowsUserError) {
  EXPECT_THROW(parse_bytes("1.2.3"), UserError);
  EXPECT_THROW(parse_bytes("1.2.3MiB"), UserError);
  EXPECT_THROW(parse_bytes("1..5KiB"), UserError);
}

TEST(ParseBytes, ErrorMessageQuotesTheInput) {
  try {
    parse_bytes("12XB");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("12XB"), std::string::npos) << e.what();
  }
}

TEST(ParseBytes, OutOfRangeThrowsUserError) {
  EXPECT_THROW(parse_bytes("2000000000GB"), UserError);             // 2e18 > limit
  EXPECT_THROW(parse_bytes("99999999999999999999999"), UserError);  // 1e23
  EXPECT_EQ(parse_bytes("1000000000GB"), 1000000000000000000ull);   // exactly the limit
}

TEST(FormatBytes, SmallValuesArePlainBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(17), "17 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
}

TEST(FormatBytes, LargerValuesUseTheLargestFittingIecUnit) {
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(536870912), "512.00 MiB");
  EXPECT_EQ(format_bytes(1ull << 30), "1.00 GiB");
  EXPECT_EQ(format_bytes(3ull << 40), "3.00 TiB");
}

TEST(FormatBytes, TebibytesIsTheLargestUnit) {
  EXPECT_EQ(format_bytes(1024ull << 40), "1024.00 TiB");
  const auto s = format_bytes(std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(s.ends_with(" TiB")) << s;
}

}  // namespace
}  // namespace tensorhub
