#include "bench/p2p_raw.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void read_both_ways(const RawRun& r, mpi::Window& w, const std::string& suffix, MPI_Aint base) {
  r.timed("raw_get_flush" + suffix,
          [&] { raw_read(w, RawRead::kGetFlush, r.dst, r.bytes, r.chunk, base, r.inflight); });
  r.timed("raw_rget" + suffix, [&] { raw_read(w, RawRead::kRget, r.dst, r.bytes, r.chunk, base, r.inflight); });
}

}  // namespace

void raw_read(mpi::Window& w, RawRead mode, unsigned char* dst, std::uint64_t bytes, std::uint64_t chunk, MPI_Aint base,
              std::uint32_t inflight) {
  std::vector<MPI_Request> reqs;
  std::uint32_t batch = 0;
  const auto finish = [&] {
    if (mode == RawRead::kGetFlush) {
      mpi::check(w.flush(0), "MPI_Win_flush");
    } else {
      mpi::check(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
      reqs.clear();
    }
    batch = 0;
  };
  for (std::uint64_t off = 0; off < bytes; off += chunk) {
    if (batch >= inflight) finish();
    const auto n = std::min(chunk, bytes - off);
    const auto disp = base + static_cast<MPI_Aint>(off);
    if (mode == RawRead::kGetFlush) {
      w.get(dst + off, n, 0, disp);
    } else {
      reqs.push_back(w.rget(dst + off, n, 0, disp));
    }
    ++batch;
  }
  finish();
}

void run_raw_baselines(const RawRun& r) {
  {  // the hub's pool window: MPI allocates the holder's memory; the holder fills it (first touch)
    void* mem = nullptr;
    const auto t = Clock::now();
    mpi::Window w = mpi::Window::allocate(MPI_COMM_WORLD, r.reader ? 0 : r.bytes, &mem);
    r.setup("MPI_Win_allocate", seconds_since(t));
    if (!r.reader) std::memcpy(mem, r.src, r.bytes);
    w.lock_all();
    read_both_ways(r, w, "", 0);
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    w.free();
  }
  {  // a window over the holder's own memory (one per publish, collective)
    const auto t = Clock::now();
    mpi::Window w = mpi::Window::create(MPI_COMM_WORLD, r.reader ? nullptr : r.src, r.reader ? 0 : r.bytes);
    r.setup("MPI_Win_create", seconds_since(t));
    w.lock_all();
    read_both_ways(r, w, "_win_create", 0);
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    w.free();
  }
  if (r.dynamic) {
    mpi::Window w = mpi::Window::create_dynamic(MPI_COMM_WORLD);
    const auto t = Clock::now();
    std::optional<mpi::Attachment> att;
    if (!r.reader) att.emplace(w, r.src, r.bytes);
    r.setup("MPI_Win_attach", seconds_since(t));
    MPI_Aint base = att ? att->address() : 0;
    mpi::check(MPI_Bcast(&base, 1, MPI_AINT, 0, MPI_COMM_WORLD), "MPI_Bcast(address)");
    w.lock_all();
    r.timed("raw_rget_dynamic", [&] { raw_read(w, RawRead::kRget, r.dst, r.bytes, r.chunk, base, r.inflight); });
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    w.unlock_all();
    att.reset();
    w.free();
  }
}

}  // namespace tensorhub::cli::bench
