// Snapshot throughput: write, read (verified) and verify of bf16 tensors, serial or parallel.
//   bench_snapshot --serial [--mib 256] [--dir /tmp]           write(path, ...) on one process
//   mpiexec -n 3 bench_snapshot [--mib 256] [--collective]      write(comm, ...), TOTAL MiB over ranks
// Other flags: --tensor-mib 64 (tensor size), --chunk-mib 4, --piece-mib 64, --keep.
// Buffers are touched before timing. Reads right after the write come from the page cache.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/snapshot/snapshot.hpp"
#include "write_options.hpp"

namespace ts = tensorhub::snapshot;
using tensorhub::DType;
using tensorhub::Tensor;

namespace {

struct Args {
  bool serial = false;
  bool collective = false;
  bool keep = false;
  std::uint64_t mib = 256;
  std::uint64_t tensor_mib = 64;
  std::uint64_t chunk_mib = 4;
  std::uint64_t piece_mib = 64;
  std::string dir = "/tmp";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--serial")
      a.serial = true;
    else if (s == "--collective")
      a.collective = true;
    else if (s == "--keep")
      a.keep = true;
    else if (s == "--mib")
      a.mib = std::stoull(next());
    else if (s == "--tensor-mib")
      a.tensor_mib = std::stoull(next());
    else if (s == "--chunk-mib")
      a.chunk_mib = std::stoull(next());
    else if (s == "--piece-mib")
      a.piece_mib = std::stoull(next());
    else if (s == "--dir")
      a.dir = next();
    else {
      std::fprintf(stderr, "unknown flag %s\n", s.c_str());
      std::exit(2);
    }
  }
  return a;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  tensorhub::mpi::Environment env(&argc, &argv);
  const Args a = parse(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (a.serial && size != 1) {
    if (rank == 0) std::fprintf(stderr, "--serial runs on one process\n");
    return 2;
  }
  const std::uint64_t chunk = a.chunk_mib << 20;
  const std::uint64_t tensor_bytes = a.tensor_mib << 20;
  const std::uint64_t per_rank = (a.mib << 20) / static_cast<std::uint64_t>(size);
  const std::uint64_t n_local = std::max<std::uint64_t>(1, per_rank / tensor_bytes);
  const std::int64_t cols = 4096;
  const std::int64_t rows = static_cast<std::int64_t>(tensor_bytes / 2 / cols);

  // Local tensors: bf16 [rows, 4096], contents differ per rank and tensor; touched now.
  std::vector<std::vector<unsigned char>> bufs(n_local, std::vector<unsigned char>(tensor_bytes));
  std::vector<Tensor> local;
  for (std::uint64_t i = 0; i < n_local; ++i) {
    for (std::size_t b = 0; b < tensor_bytes; b += 4096) bufs[i][b] = static_cast<unsigned char>(rank * 31 + i + b);
    local.push_back(tensorhub::host_tensor("r" + std::to_string(rank) + ".t" + std::to_string(i), DType::kBF16,
                                           {rows, cols}, bufs[i].data()));
  }
  // The manifest: every rank's shard, checksums gathered from their owners.
  const auto mine = tensorhub::describe_shard(static_cast<std::uint32_t>(rank), local, chunk);
  std::vector<std::uint64_t> sums;
  for (const auto& s : mine.checksums) sums.insert(sums.end(), s.begin(), s.end());
  std::vector<std::uint64_t> all(sums.size() * static_cast<std::size_t>(size));
  MPI_Allgather(sums.data(), static_cast<int>(sums.size()), MPI_UINT64_T, all.data(), static_cast<int>(sums.size()),
                MPI_UINT64_T, MPI_COMM_WORLD);
  std::vector<tensorhub::ShardManifest> shards(static_cast<std::size_t>(size));
  const std::size_t per_tensor = mine.checksums.front().size();
  for (int r = 0; r < size; ++r) {
    shards[r].shard = static_cast<std::uint32_t>(r);
    for (std::uint64_t i = 0; i < n_local; ++i) {
      shards[r].tensors.push_back({"r" + std::to_string(r) + ".t" + std::to_string(i), DType::kBF16, {rows, cols}});
      const auto* p = all.data() + (static_cast<std::size_t>(r) * n_local + i) * per_tensor;
      shards[r].checksums.emplace_back(p, p + per_tensor);
    }
  }
  const auto manifest = tensorhub::assemble_manifest("bench", 1, chunk, shards);
  const std::string path = a.dir + "/tensorhub-bench-" + std::to_string(::getpid()) + ".h5";
  const std::string file = tensorhub::mpi::bcast_string(MPI_COMM_WORLD, 0, path);
  const double total = static_cast<double>(manifest.total_bytes());

  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  if (a.serial) {
    ts::write(file, manifest, local, true);
  } else {
    ts::detail::WriteOptions opt;
    opt.transfer = a.collective ? ts::detail::Transfer::kCollective : ts::detail::Transfer::kIndependent;
    opt.piece_bytes = a.piece_mib << 20;
    ts::detail::write_parallel(MPI_COMM_WORLD, file, manifest, local, true, {}, opt);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_write = now() - t0;

  std::vector<std::vector<unsigned char>> into(n_local, std::vector<unsigned char>(tensor_bytes, 1));
  std::vector<Tensor> dst = local;
  for (std::uint64_t i = 0; i < n_local; ++i) dst[i].data = into[i].data();
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = now();
  ts::read(file, dst, /*verify=*/true);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_read = now() - t0;
  for (std::uint64_t i = 0; i < n_local; ++i) {
    if (std::memcmp(into[i].data(), bufs[i].data(), tensor_bytes) != 0) std::fprintf(stderr, "read back differs\n");
  }

  double t_verify = 0;
  if (rank == 0) {
    t0 = now();
    const auto report = ts::verify(file);
    t_verify = now() - t0;
    if (!report.ok()) std::fprintf(stderr, "verify found %zu mismatches\n", report.mismatches.size());
    std::printf(
        "{\"mode\": \"%s\", \"ranks\": %d, \"mib\": %.0f, \"chunk_mib\": %llu, \"piece_mib\": %llu, "
        "\"write_s\": %.3f, \"write_gbps\": %.3f, \"read_verified_gbps\": %.3f, \"verify_gbps\": %.3f}\n",
        a.serial ? "serial" : (a.collective ? "collective" : "independent"), size, total / (1 << 20),
        static_cast<unsigned long long>(a.chunk_mib), static_cast<unsigned long long>(a.piece_mib), t_write,
        total / t_write / 1e9, total / t_read / 1e9, total / t_verify / 1e9);
    if (!a.keep) std::filesystem::remove(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}
