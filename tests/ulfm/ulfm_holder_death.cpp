// A holder rank killed (SIGKILL) mid-pull in an MPI job running with ULFM (mpirun --with-ft ulfm),
// over the mpi_rma transport. 5 ranks: one publishes v1, two pull it and relay it, and ranks 3
// and 4 read it slowly while the victim relay kills itself serving them. The survivors must then
// see the failure, reassign its reads, shrink the job communicator and rebuild the window, and go
// on: v2 and v3 are published and pulled over the repaired window. Every pulled word is checked
// against the (version, tensor, index) pattern and every chunk by xxHash64.
//   ulfm_holder_death [--victim 2]  rank 0 runs the coordinator and publishes; relays 1 and 2
//   ulfm_holder_death --victim 0    rank 0 itself dies: the coordinator must be a standalone one
//                                   (TENSORHUB_HUB); rank 1 publishes, relays 0 and 2
//   ulfm_holder_death --hang        the victim hangs (SIGSTOP) instead of dying: it is seen only
//                                   with Open MPI's failure detector (run_holder_death.sh 2 hang)
//   ulfm_holder_death --serve       no MPI: a standalone coordinator on 127.0.0.1, any free port
//                                   ("listening on 127.0.0.1:PORT"), until SIGTERM
// mpirun exits 0 even when a rank was killed: run_holder_death.sh checks the survivors' lines.
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../mpi/pattern.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_server.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/ulfm.hpp"

namespace tensorhub {
namespace {

// Who does what, for a given victim (a relay of v1 that dies while serving it).
struct Roles {
  int victim = 2;
  int publisher = 0;
  int relay = 1;         // the relay that survives
  int signal = SIGKILL;  // SIGSTOP (--hang): the victim hangs instead; the runner kills it at the end
  bool reader(int rank) const { return rank >= 3; }
};

Roles roles_for(int victim, bool hang) {
  const int signal = hang ? SIGSTOP : SIGKILL;
  if (victim == 0) return Roles{0, 1, 2, signal};
  if (victim == 2) return Roles{2, 0, 1, signal};
  throw UserError("--victim must be 0 or 2");
}
constexpr std::size_t kTensors = 8;
constexpr std::uint64_t kTensorBytes = 8ull << 20;  // 64 MiB per version

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

void say(int rank, const std::string& line) {
  std::printf("rank %d: %s\n", rank, line.c_str());
  std::fflush(stdout);
}

// The victim: waits until it serves a read of v1, then dies at once (SIGKILL: no cleanup, like
// kill -9) or hangs (SIGSTOP: alive but silent; only a failure detector can tell).
void die_while_serving(Hub& hub, int rank, int signal) {
  const char* name = signal == SIGSTOP ? "SIGSTOP" : "SIGKILL";
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < end) {
    for (const auto& m : hub.status()) {
      for (const auto& v : m.versions) {
        for (const auto& h : v.holder_list) {
          if (v.version == 1 && h.rank == rank && h.pins > 0) {
            say(rank, "serving " + std::to_string(h.pins) + " read(s) of v1: " + name + " at " +
                          std::to_string(unix_now()) + " (pid " + std::to_string(getpid()) + ")");
            raise(signal);
            say(rank, "FAIL: resumed after the signal");
            raise(SIGKILL);
          }
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  say(rank, "FAIL: never saw a read of v1 from this rank");
  raise(SIGKILL);
}

std::string pull_and_check(Hub& hub, test::Buffers& b, std::uint64_t v, bool slow) {
  PullOptions o;
  if (slow) {  // the readers of v1 take a few seconds, so that the kill lands mid-pull
    o.progress = [](std::uint64_t, std::uint64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(40)); };
  }
  const auto r = hub.pull("policy", Version::exact(v), b.tensors, o);
  const auto bad = b.mismatches(v);
  return "v" + std::to_string(r.version) + " " + (bad == 0 ? "verified" : "BAD (" + std::to_string(bad) + " words)") +
         " in " + std::to_string(r.seconds) + " s, failed reads reassigned: " + std::to_string(r.failed_reads) +
         ", at " + std::to_string(unix_now());
}

int run(int rank, int size, const Roles& who) {
  if (size != 5) throw UserError("run with 5 ranks");
  const auto support = mpi::ulfm_support();
  if (!support.enabled) throw UserError(support.detail);
  if (who.victim == 0 && std::getenv("TENSORHUB_HUB") == nullptr)
    throw UserError("--victim 0 needs a standalone coordinator in TENSORHUB_HUB (rank 0 would take it along)");
  HubOptions opt;
  opt.pool_bytes = 4 * kTensors * kTensorBytes;
  opt.chunk_bytes = 1ull << 20;
  opt.max_readers_per_source = 1;
  opt.inflight = 2;
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  // Survivors synchronise on their own communicator with agree (fault-aware); plain MPI
  // collectives on MPI_COMM_WORLD would fail once the victim is gone.
  auto sync = mpi::Comm::duplicate(MPI_COMM_WORLD);
  std::vector<std::unique_ptr<test::Buffers>> versions;
  auto buffers = std::make_unique<test::Buffers>(*hub, kTensors, kTensorBytes);
  if (rank == who.publisher) {
    buffers->fill(1);
    hub->publish("policy", 1, buffers->tensors);
    say(rank, "published v1");
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  // The victim pulls v1 first and alone, the surviving relay after it: the victim is then the
  // shallowest relay of every stripe (depth 1 below the publisher), so the plans of the readers
  // put the first of them under it whatever the order of their worker ids (PlanBook prefers
  // relays, then the shallower).
  if (rank == who.victim) say(rank, "relay: " + pull_and_check(*hub, *buffers, 1, false));
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == who.relay) say(rank, "relay: " + pull_and_check(*hub, *buffers, 1, false));
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == who.victim) die_while_serving(*hub, rank, who.signal);
  if (who.reader(rank)) say(rank, "reader: " + pull_and_check(*hub, *buffers, 1, true));
  mpi::survivors_barrier(sync.get());
  for (std::uint64_t v = 2; v <= 3; ++v) {
    if (rank == who.publisher) {
      versions.push_back(std::move(buffers));
      buffers = std::make_unique<test::Buffers>(*hub, kTensors, kTensorBytes);
      buffers->fill(v);
      hub->publish("policy", v, buffers->tensors);
      hub->unpublish("policy", v - 1);
      say(rank, "published v" + std::to_string(v) + ", unpublished v" + std::to_string(v - 1));
    }
    mpi::survivors_barrier(sync.get());
    if (rank != who.publisher) say(rank, "after the failure: " + pull_and_check(*hub, *buffers, v, false));
    mpi::survivors_barrier(sync.get());
  }
  say(rank, "done");
  hub->close();
  return 0;
}

// --serve: the standalone coordinator that --victim 0 needs (no MPI in this process).
int serve() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // every thread, gRPC's included
  coord::Coordinator coordinator(coord::CoordinatorConfig{});
  coord::GrpcServer server(coordinator, "127.0.0.1:0");
  std::printf("listening on %s\n", server.address_for("127.0.0.1").c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  server.shutdown();
  return 0;
}

}  // namespace
}  // namespace tensorhub

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--serve") == 0) {
    try {
      return tensorhub::serve();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ulfm_holder_death --serve: %s\n", e.what());
      return 1;
    }
  }
  tensorhub::mpi::Environment env(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  try {
    int victim = 2;
    bool hang = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--victim") == 0 && i + 1 < argc) {
        victim = std::atoi(argv[++i]);
      } else if (std::strcmp(argv[i], "--hang") == 0) {
        hang = true;
      } else {
        throw tensorhub::UserError("usage: ulfm_holder_death [--victim 0|2] [--hang] | --serve");
      }
    }
    rc = tensorhub::run(rank, size, tensorhub::roles_for(victim, hang));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, e.what());
    rc = 1;
  }
  env.set_exit_code(rc);
  return rc;
}
