// A toy MPI "trainer" built against an installed TensorHub (see README.md next to this file).
//
//   mpirun -n 3 --oversubscribe --mca osc ucx ./trainer [steps=5] [trainers=1]
//
// Ranks 0..T-1 form the trainer group. Each owns a shard of a tiny fp32 model (tensor t belongs
// to trainer t % T). Every step the trainers "train" (write new values into their weights),
// publish them as version = step and unpublish the previous version. The other ranks are
// rollouts: each pulls the latest version into its own buffers, checks every value against
// expected() below and prints one line per pull. Exit status 0 only if every value matched.
//
// publish() copies nothing: the hub records where the weights are, and rollouts read them
// straight from the trainers' memory, or from a rollout that already pulled them (relay).
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <tensorhub/hub.hpp>
#include <thread>
#include <utility>
#include <vector>

namespace th = tensorhub;

namespace {

// The model: a few fp32 matrices with transformer-like names.
struct Spec {
  const char* name;
  std::int64_t rows, cols;
};
constexpr Spec kModel[] = {{"embed", 512, 64},
                           {"layers.0.attn.qkv", 64, 192},
                           {"layers.0.mlp.up", 64, 256},
                           {"layers.0.mlp.down", 256, 64},
                           {"lm_head", 64, 512}};
constexpr int kTensors = sizeof(kModel) / sizeof(kModel[0]);

// Element i of tensor t in version `step`. Integers below 2^24 are exact in fp32 (steps <= 1000).
float expected(std::uint64_t step, int t, std::int64_t i) {
  return static_cast<float>(step * 10000 + static_cast<std::uint64_t>(t) * 1000 + static_cast<std::uint64_t>(i % 1000));
}

// Some of the model's tensors, in memory from the hub's registered pool (Hub::allocate): the
// memory the mpi_rma transport lets other ranks read (publish) or write into (pull).
struct Weights {
  std::vector<int> ids;             // index into kModel of each tensor
  std::vector<th::Tensor> tensors;  // named, typed, shaped views over pool memory
  Weights(th::Hub& hub, std::vector<int> which) : ids(std::move(which)) {
    for (int t : ids) {
      const Spec& s = kModel[t];
      void* p = hub.allocate(static_cast<std::uint64_t>(s.rows * s.cols) * sizeof(float));
      tensors.push_back(th::host_tensor(s.name, th::DType::kF32, {s.rows, s.cols}, p));
    }
  }
  float* data(std::size_t k) const { return static_cast<float*>(tensors[k].data); }
  std::int64_t numel(std::size_t k) const { return static_cast<std::int64_t>(tensors[k].spec.numel()); }
};

void run_trainer(th::Hub& hub, MPI_Comm trainers, int steps) {
  int me = 0, n = 0;
  MPI_Comm_rank(trainers, &me);
  MPI_Comm_size(trainers, &n);
  std::vector<int> shard;
  for (int t = 0; t < kTensors; ++t)
    if (t % n == me) shard.push_back(t);
  // Two copies of the shard used in turn: version `step` must stay untouched until it is
  // unpublished, while version step+1 is being written into the other copy.
  Weights buf[2] = {Weights(hub, shard), Weights(hub, shard)};
  const th::Group group = th::Group::of(trainers, "trainer");  // all shards of one version
  for (int step = 1; step <= steps; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the "training step"
    Weights& w = buf[step % 2];
    for (std::size_t k = 0; k < w.tensors.size(); ++k)
      for (std::int64_t i = 0; i < w.numel(k); ++i) w.data(k)[i] = expected(step, w.ids[k], i);
    // Visible to rollouts once every trainer of the group has published its shard.
    hub.publish("policy", step, w.tensors, group);
    // Blocks until no rollout reads step-1 any more; then its memory is ours to overwrite.
    if (step > 1) hub.unpublish("policy", step - 1);
  }
}

// Returns the number of wrong values seen.
long run_rollout(th::Hub& hub, int rank, int steps) {
  std::vector<int> all;
  for (int t = 0; t < kTensors; ++t) all.push_back(t);
  Weights w(hub, all);  // this rollout's copy of the whole model
  std::optional<std::uint64_t> seen;
  long bad_total = 0;
  while (!seen || *seen < static_cast<std::uint64_t>(steps)) {
    // Wait for a version newer than the one we hold, then pull the newest (maybe newer still).
    if (!hub.wait_for("policy", seen, std::chrono::seconds(60))) throw th::TimeoutError("no new version in 60 s");
    const th::PullResult r = hub.pull("policy", th::Version::latest(), w.tensors);  // checksummed
    long bad = 0;
    for (std::size_t k = 0; k < w.tensors.size(); ++k)
      for (std::int64_t i = 0; i < w.numel(k); ++i) bad += w.data(k)[i] != expected(r.version, w.ids[k], i);
    std::printf("rollout rank %d: pulled version %llu, %llu bytes in %.3f s (%llu relayed by a rollout): %s\n", rank,
                static_cast<unsigned long long>(r.version), static_cast<unsigned long long>(r.bytes), r.seconds,
                static_cast<unsigned long long>(r.relay_bytes), bad == 0 ? "values ok" : "MISMATCH");
    std::fflush(stdout);
    bad_total += bad;
    seen = r.version;
  }
  return bad_total;
}

}  // namespace

int main(int argc, char** argv) {
  // TensorHub's progress thread calls MPI concurrently with the application.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int trainers = argc > 2 ? std::atoi(argv[2]) : 1;
  if (steps < 1 || steps > 1000 || trainers < 1 || size <= trainers) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -n N trainer [steps 1-1000] [trainers < N]\n");
    MPI_Finalize();
    return 2;
  }
  const bool is_trainer = rank < trainers;
  MPI_Comm trainer_comm = MPI_COMM_NULL;  // the trainer group; MPI_COMM_NULL on rollouts
  MPI_Comm_split(MPI_COMM_WORLD, is_trainer ? 0 : MPI_UNDEFINED, rank, &trainer_comm);

  long bad = 0;
  try {
    th::HubOptions opt;
    // Registered memory per rank: two copies of the model, plus 4 KiB alignment per tensor.
    opt.pool_bytes = 2 * kTensors * 4096;
    for (const Spec& s : kModel) opt.pool_bytes += 2 * static_cast<std::uint64_t>(s.rows * s.cols) * sizeof(float);
    auto hub = th::Hub::join(MPI_COMM_WORLD, opt);  // collective; rank 0 also runs the coordinator
    if (is_trainer)
      run_trainer(*hub, trainer_comm, steps);
    else
      bad = run_rollout(*hub, rank, steps);
    // Every rollout has read the last version: the trainers withdraw it, then all close.
    MPI_Barrier(MPI_COMM_WORLD);
    if (is_trainer) hub->unpublish("policy", steps);
    hub->close();  // collective
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainer example [rank %d]: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);  // never leave the other ranks waiting in a collective
  }
  long total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("trainer example: %d versions, %ld wrong values\n", steps, total);
  if (trainer_comm != MPI_COMM_NULL) MPI_Comm_free(&trainer_comm);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
