// The ucx transport in one process: two UcxTransport objects (two UCX workers, TCP between them),
// one exposing memory, the other reading it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <span>

#include "read_util.hpp"
#include "tensorhub/core/error.hpp"
#include "ucx/ucx_transport.hpp"
#include "ucx_test_util.hpp"

namespace tensorhub::transport {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

UcxOptions named(const char* label) {
  UcxOptions o;
  o.label = label;
  return o;
}

struct Buffer {
  explicit Buffer(Transport& t, std::uint64_t n)
      : transport(t), bytes(n), data(static_cast<unsigned char*>(t.allocate(n))) {}
  ~Buffer() { transport.deallocate(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Transport& transport;
  std::uint64_t bytes;
  unsigned char* data;
};

class UcxTransportTest : public ::testing::Test {
 protected:
  void SetUp() override { alarm(60); }  // a hang fails the test binary instead of CI
  void TearDown() override { alarm(0); }
  UcxTransport holder{named("holder")};
  UcxTransport reader{named("reader")};
};

TEST_F(UcxTransportTest, NameEndpointReaches) {
  EXPECT_EQ(holder.name(), "ucx");
  EXPECT_TRUE(holder.endpoint().starts_with("ucx:holder:"));
  EXPECT_NE(holder.endpoint(), reader.endpoint());
  EXPECT_TRUE(reader.reaches(holder.endpoint()));
  EXPECT_FALSE(reader.reaches("local:x"));
  EXPECT_FALSE(reader.reaches("mpi_rma:job:0"));
  EXPECT_FALSE(reader.reaches("ucx:x:not*base64"));
}

// 64 MiB exposed as four adjacent 16 MiB ranges (one registration), read in 4 MiB chunks with 8
// in flight, every byte checked.
TEST_F(UcxTransportTest, Reads64MiBPatternInChunks) {
  const std::uint64_t total = 64 * kMiB;
  Buffer src(holder, total);
  test::fill_pattern(src.data, total, 11);
  std::vector<MemoryRange> ranges;
  for (int i = 0; i < 4; ++i) ranges.push_back({src.data + i * 16 * kMiB, 16 * kMiB});
  const auto exposure = holder.expose(ranges);
  ASSERT_EQ(exposure->descriptors().size(), 4u);
  std::vector<test::Region> regions;
  for (const auto& d : exposure->descriptors()) regions.push_back({holder.endpoint(), d, 16 * kMiB});

  Buffer dst(reader, total);
  std::memset(dst.data, 0, total);
  const auto done = test::read_regions(reader, regions, dst.data, 4 * kMiB, 8, std::chrono::seconds(30));
  ASSERT_EQ(done.size(), 16u);
  for (const auto& c : done) EXPECT_TRUE(c.ok) << c.error;
  EXPECT_TRUE(test::check_pattern(dst.data, 0, total, 11));
  EXPECT_EQ(reader.in_flight(), 0u);
}

TEST_F(UcxTransportTest, ReadsAtAnOffsetAndZeroBytes) {
  Buffer src(holder, 1 * kMiB);
  test::fill_pattern(src.data, src.bytes, 5);
  const MemoryRange ranges[] = {{src.data, kMiB / 2}, {src.data + kMiB / 2, kMiB / 2}, {src.data, 0}};
  const auto exposure = holder.expose(ranges);
  std::vector<std::uint64_t> got(1024);
  reader.post({holder.endpoint(), exposure->descriptors()[1], 4096, got.data(), 8192, 7});
  reader.post({holder.endpoint(), exposure->descriptors()[2], 0, got.data(), 0, 8});
  std::vector<Completion> done;
  for (int i = 0; i < 100000 && done.size() < 2; ++i) reader.poll(done);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& c : done) EXPECT_TRUE(c.ok) << c.error;
  EXPECT_TRUE(test::check_pattern(got.data(), kMiB / 2 + 4096, 8192, 5));
}

TEST_F(UcxTransportTest, BadDescriptorsAndEndpointsThrowTransportError) {
  Buffer src(holder, kMiB);
  const MemoryRange range{src.data, kMiB};
  const auto exposure = holder.expose(std::span(&range, 1));
  const auto& good = exposure->descriptors()[0];
  unsigned char byte = 0;
  EXPECT_THROW(reader.post({holder.endpoint(), "140000:4096", 0, &byte, 1, 1}), TransportError);
  EXPECT_THROW(reader.post({holder.endpoint(), "ucx:10:20:A", 0, &byte, 1, 1}), TransportError);
  EXPECT_THROW(reader.post({"local:holder", good, 0, &byte, 1, 1}), TransportError);
  EXPECT_THROW(reader.post({"ucx:holder:%%%", good, 0, &byte, 1, 1}), TransportError);
  EXPECT_THROW(reader.post({holder.endpoint(), good, kMiB, &byte, 1, 1}), TransportError);   // past the end
  EXPECT_THROW(reader.post({holder.endpoint(), good, 1, &byte, ~0ull, 1}), TransportError);  // wraps around
  EXPECT_EQ(reader.in_flight(), 0u);
}

TEST_F(UcxTransportTest, CudaMemoryNeedsACudaUcx) {
  Buffer src(holder, kMiB);
  const MemoryRange range{src.data, kMiB, MemoryKind::kCuda};
  try {
    (void)holder.expose(std::span(&range, 1));
    ADD_FAILURE() << "host memory registered as CUDA memory";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA-enabled UCX"), std::string::npos) << e.what();
  } catch (const TransportError&) {
    // A CUDA-enabled UCX: it refuses the host pointer instead.
  }
}

TEST_F(UcxTransportTest, ExposureMayOutliveItsTransport) {
  auto t = std::make_unique<UcxTransport>(named("short-lived"));
  std::vector<unsigned char> mem(4096);
  const MemoryRange range{mem.data(), mem.size()};
  auto exposure = t->expose(std::span(&range, 1));
  t.reset();
  EXPECT_EQ(exposure->descriptors().size(), 1u);
  exposure.reset();
}

TEST(UcxOptions, DeadlineFromEnvironment) {
  ::setenv("TENSORHUB_UCX_DEADLINE_MS", "750", 1);
  EXPECT_EQ(UcxOptions::from_env().deadline, std::chrono::milliseconds(750));
  ::setenv("TENSORHUB_UCX_DEADLINE_MS", "0", 1);
  EXPECT_THROW(UcxOptions::from_env(), UserError);
  ::setenv("TENSORHUB_UCX_DEADLINE_MS", "5s", 1);
  EXPECT_THROW(UcxOptions::from_env(), UserError);
  ::unsetenv("TENSORHUB_UCX_DEADLINE_MS");
  EXPECT_EQ(UcxOptions::from_env().deadline, std::chrono::milliseconds(5000));
}

}  // namespace
}  // namespace tensorhub::transport
