// A cma holder SIGKILLed while reads of it are in flight (label "fault"): every read ends, those
// not finished before the death with ok=false and "exited"; re-read from a second holder of the
// same bytes (as the pull engine reassigns them), the destination verifies in full.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>
#include <vector>

#include "cma/cma_transport.hpp"
#include "forked_holder.hpp"

namespace tensorhub::transport {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kRead = 4 * kMiB;

TEST(CmaFault, KilledHolderMidReadIsMaskedByAnotherHolder) {
  alarm(60);
  constexpr std::uint32_t kSeed = 11;
  test::ForkedHolder victim(128, 1, kSeed);
  test::ForkedHolder spare(128, 1, kSeed);  // the same bytes: a second holder of the version
  CmaOptions o;
  o.chunk = 64 << 10;  // many liveness checks per read
  o.threads = 2;
  o.deadline = 60s;  // failures below are the pidfd's, not the deadline's
  CmaTransport reader(o);
  std::vector<std::uint64_t> words(128 * kMiB / 8);
  auto* dst = reinterpret_cast<unsigned char*>(words.data());
  const std::uint64_t reads = 128 * kMiB / kRead;
  std::set<std::uint64_t> failed;
  std::uint64_t next = 0, ok = 0, running = 0;
  bool killed = false;
  Clock::time_point killed_at, last_completion;
  std::vector<Completion> done;
  while (next < reads || running > 0) {
    while (running < 8 && next < reads) {
      reader.post({victim.endpoint(), victim.descriptors()[0], next * kRead, dst + next * kRead, kRead, next});
      ++next;
      ++running;
    }
    done.clear();
    reader.poll(done);
    for (const auto& c : done) {
      --running;
      last_completion = Clock::now();
      if (c.ok) {
        ++ok;
      } else {
        EXPECT_NE(c.error.find("exited"), std::string::npos) << c.error;
        failed.insert(c.tag);
      }
    }
    if (!killed && ok >= 4 && running > 0) {  // mid-read: reads in flight
      victim.kill();
      killed = true;
      killed_at = Clock::now();
    }
    if (done.empty()) std::this_thread::sleep_for(20us);
  }
  ASSERT_TRUE(killed);
  EXPECT_GT(failed.size(), 0u);
  const double ms = std::chrono::duration<double, std::milli>(last_completion - killed_at).count();
  std::printf("measured: %zu of %llu reads failed after the kill; the last completed %.2f ms after it\n", failed.size(),
              static_cast<unsigned long long>(reads), ms);
  EXPECT_LT(ms, 5000.0);  // generous: the deadline is 60 s
  EXPECT_EQ(reader.in_flight(), 0u);
  // The reassigned reads, from the other holder.
  for (const auto tag : failed) {
    reader.post({spare.endpoint(), spare.descriptors()[0], tag * kRead, dst + tag * kRead, kRead, tag});
  }
  std::size_t back = 0;
  const auto end = Clock::now() + 30s;
  while (back < failed.size() && Clock::now() < end) {
    done.clear();
    reader.poll(done);
    for (const auto& c : done) ASSERT_TRUE(c.ok) << c.error;
    back += done.size();
    std::this_thread::sleep_for(50us);
  }
  ASSERT_EQ(back, failed.size());
  EXPECT_TRUE(test::check_pattern(dst, 0, 128 * kMiB, kSeed));
  alarm(0);
}

}  // namespace
}  // namespace tensorhub::transport
