// lib/transport mpi_rma on 2 ranks (0 holds, 1 reads), in both read modes (TENSORHUB_MPI_READ):
//  * get_flush (MPI_Get + MPI_Win_flush) and rget (MPI_Rget + MPI_Testsome) read every chunk of
//    a holder's pool correctly, with several reads in flight and a partial last chunk;
//  * a read of a holder whose main thread sleeps outside MPI completes before it wakes: in
//    get_flush mode with no progress thread at all (the holder makes no MPI call), in rget mode
//    through the holder's progress thread. Ordered by CLOCK_MONOTONIC, which the two ranks
//    share on one host (the test's mpiexec runs both locally); not a speed assertion;
//  * reads outside the region, outside the holder's pool or of another job throw
//    TransportError at post() and leave nothing in flight.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mpi_rma/mpi_rma_transport.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/transport/descriptor.hpp"

namespace tensorhub::transport {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kPool = 24ull << 20;
constexpr int kHolder = 0;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

unsigned char byte_at(std::uint64_t i) { return static_cast<unsigned char>((i * 131) ^ (i >> 12) ^ 0x5a); }

MpiRmaOptions options_for(MpiReadMode mode) {
  MpiRmaOptions o;
  o.read_mode = mode;
  o.fault_tolerance = false;
  // get_flush: no progress thread, so a sleeping holder makes no MPI call at all.
  o.progress_period = mode == MpiReadMode::kGetFlush ? 0us : 1000us;
  return o;
}

// The holder's descriptor, sent to every rank.
std::string bcast(std::string s) {
  std::uint64_t n = s.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, kHolder, MPI_COMM_WORLD);
  s.resize(n);
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, kHolder, MPI_COMM_WORLD);
  return s;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The holder's pattern in `bytes` of its pool, exposed; its descriptor on every rank.
struct Published {
  void* base = nullptr;
  std::unique_ptr<Exposure> exposure;
  std::string descriptor;

  Published(MpiRmaTransport& t, std::uint64_t bytes) {
    if (world_rank() == kHolder) {
      base = t.allocate(bytes);
      auto* p = static_cast<unsigned char*>(base);
      for (std::uint64_t i = 0; i < bytes; ++i) p[i] = byte_at(i);
      const MemoryRange r{base, bytes, MemoryKind::kHost};
      exposure = t.expose(std::span<const MemoryRange>(&r, 1));
      descriptor = exposure->descriptors().at(0);
    }
    descriptor = bcast(descriptor);
  }
};

// Reads [0, bytes) of the holder in `chunk` pieces, `inflight` at a time, into `dst`.
void read_all(MpiRmaTransport& t, const std::string& descriptor, unsigned char* dst, std::uint64_t bytes,
              std::uint64_t chunk, std::size_t inflight) {
  const std::string holder = "mpi_rma:test:" + std::to_string(kHolder);
  std::vector<Completion> done;
  std::uint64_t next = 0;
  std::size_t finished = 0;
  const std::size_t reads = (bytes + chunk - 1) / chunk;
  while (finished < reads) {
    while (next < bytes && t.in_flight() < inflight) {
      const std::uint64_t n = std::min(chunk, bytes - next);
      t.post(ReadOp{holder, descriptor, next, dst + next, n, next / chunk});
      next += n;
    }
    done.clear();
    t.poll(done);
    for (const auto& c : done) {
      ASSERT_TRUE(c.ok) << c.error;
      ++finished;
    }
  }
  EXPECT_EQ(t.in_flight(), 0u);
}

void expect_pattern(const unsigned char* p, std::uint64_t bytes) {
  for (std::uint64_t i = 0; i < bytes; ++i) {
    if (p[i] != byte_at(i)) {
      ADD_FAILURE() << "byte " << i << " is " << int(p[i]) << ", expected " << int(byte_at(i));
      return;
    }
  }
}

class MpiRmaRead : public ::testing::TestWithParam<MpiReadMode> {};

TEST_P(MpiRmaRead, ReadsEveryChunkOfTheHoldersPool) {
  MpiRmaTransport t(MPI_COMM_WORLD, "test", kPool, options_for(GetParam()));
  EXPECT_EQ(t.read_mode(), GetParam());
  constexpr std::uint64_t kBytes = (4ull << 20) + 3 * 4096 + 17;  // a partial last chunk
  {
    Published pub(t, kBytes);
    if (world_rank() != kHolder) {
      auto* dst = static_cast<unsigned char*>(t.allocate(kBytes));
      std::memset(dst, 0, kBytes);
      read_all(t, pub.descriptor, dst, kBytes, 256 << 10, 8);
      expect_pattern(dst, kBytes);
      // One read of a middle piece at an odd offset.
      std::memset(dst, 0, 1000);
      read_all(t, pub.descriptor, dst, 1000, 1000, 1);
      expect_pattern(dst, 1000);
      t.deallocate(dst);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  t.close();
}

// Scattered reads (ReadOp::pieces): equal pieces equally spaced (an hvector origin datatype),
// and unequal ones (hindexed), each landing only where its pieces say.
TEST_P(MpiRmaRead, ScattersAReadIntoPieces) {
  MpiRmaTransport t(MPI_COMM_WORLD, "test", kPool, options_for(GetParam()));
  constexpr std::uint64_t kBytes = 1ull << 20;
  {
    Published pub(t, kBytes);
    if (world_rank() != kHolder) {
      EXPECT_TRUE(t.can_scatter("mpi_rma:test:0", pub.descriptor));
      std::vector<std::vector<Piece>> layouts(2);
      for (std::uint64_t at = 0; at < kBytes; at += 1024) layouts[0].push_back(Piece{100 + at * 4, 1024});
      for (std::uint64_t at = 0, k = 0; at < kBytes; ++k) {
        const std::uint64_t n = std::min<std::uint64_t>(kBytes - at, 512 + (k * 97) % 3000);
        layouts[1].push_back(Piece{7 + at * 2 + k, n});
        at += n;
      }
      for (const auto& pieces : layouts) {
        std::vector<unsigned char> dst(4 * kBytes + 4096, 0xee);
        ReadOp op{"mpi_rma:test:0", pub.descriptor, 0, dst.data(), kBytes, 1};
        op.pieces = pieces;
        t.post(op);
        std::vector<Completion> done;
        while (done.empty()) t.poll(done);
        ASSERT_TRUE(done[0].ok) << done[0].error;
        std::vector<unsigned char> back;
        std::vector<bool> inside(dst.size(), false);
        for (const auto& p : pieces) {
          back.insert(back.end(), dst.begin() + static_cast<std::ptrdiff_t>(p.offset),
                      dst.begin() + static_cast<std::ptrdiff_t>(p.offset + p.length));
          std::fill_n(inside.begin() + static_cast<std::ptrdiff_t>(p.offset), p.length, true);
        }
        expect_pattern(back.data(), kBytes);
        std::uint64_t outside_written = 0;
        for (std::size_t i = 0; i < dst.size(); ++i) outside_written += !inside[i] && dst[i] != 0xee ? 1 : 0;
        EXPECT_EQ(outside_written, 0u) << "bytes outside the pieces were written";
      }
      ReadOp short_pieces{"mpi_rma:test:0", pub.descriptor, 0, nullptr, kBytes, 2};
      short_pieces.pieces = {Piece{0, 10}};
      std::vector<unsigned char> dst(16);
      short_pieces.dst = dst.data();
      EXPECT_THROW(t.post(short_pieces), ContractViolation);
      EXPECT_EQ(t.in_flight(), 0u);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  t.close();
}

TEST_P(MpiRmaRead, AReadOfASleepingHolderCompletesBeforeItWakes) {
  MpiRmaTransport t(MPI_COMM_WORLD, "test", kPool, options_for(GetParam()));
  constexpr std::uint64_t kBytes = 16ull << 20;
  std::int64_t holder_woke = 0;
  std::int64_t reader_done = 0;
  {
    Published pub(t, kBytes);
    unsigned char* dst = nullptr;
    if (world_rank() != kHolder) {
      dst = static_cast<unsigned char*>(t.allocate(kBytes));
      std::memset(dst, 0, kBytes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == kHolder) {
      std::this_thread::sleep_for(3s);  // no MPI call from this thread (nor any other, in get_flush mode)
      holder_woke = now_ns();
    } else {
      std::this_thread::sleep_for(200ms);  // the holder is asleep by now
      read_all(t, pub.descriptor, dst, kBytes, 4 << 20, 4);
      reader_done = now_ns();
      expect_pattern(dst, kBytes);
    }
    MPI_Bcast(&holder_woke, 1, MPI_INT64_T, kHolder, MPI_COMM_WORLD);
    if (world_rank() != kHolder) {
      EXPECT_LT(reader_done, holder_woke) << "the read completed " << (reader_done - holder_woke) / 1e6
                                          << " ms after the holder woke: it waited for the holder's MPI calls";
      t.deallocate(dst);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  t.close();
}

TEST_P(MpiRmaRead, BadReadsThrowTransportErrorAndLeaveNothingInFlight) {
  MpiRmaTransport t(MPI_COMM_WORLD, "test", kPool, options_for(GetParam()));
  {
    Published pub(t, 8192);
    if (world_rank() != kHolder) {
      std::vector<unsigned char> dst(8192);
      const std::string holder = "mpi_rma:test:0";
      EXPECT_THROW(t.post(ReadOp{holder, pub.descriptor, 4096, dst.data(), 8192, 1}), TransportError);
      EXPECT_THROW(t.post(ReadOp{holder, encode_region(kPool, 4096), 0, dst.data(), 4096, 2}), TransportError);
      EXPECT_THROW(t.post(ReadOp{"mpi_rma:test:7", pub.descriptor, 0, dst.data(), 4096, 3}), TransportError);
      EXPECT_THROW(t.post(ReadOp{"mpi_rma:other:0", pub.descriptor, 0, dst.data(), 4096, 4}), TransportError);
      EXPECT_EQ(t.in_flight(), 0u);
      std::vector<Completion> out;
      t.poll(out);
      EXPECT_TRUE(out.empty());
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  t.close();
}

INSTANTIATE_TEST_SUITE_P(BothModes, MpiRmaRead, ::testing::Values(MpiReadMode::kGetFlush, MpiReadMode::kRget),
                         [](const ::testing::TestParamInfo<MpiReadMode>& p) {
                           return std::string(to_string(p.param));
                         });

}  // namespace
}  // namespace tensorhub::transport
