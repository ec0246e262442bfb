// bench_device: the GPU check's device benchmark (scripts/device/gpu-check.sh), on the cuda
// backend, all ratios within one run:
//   ipc pull      a second process imports the holder's allocation (CUDA IPC) and copies it
//                 device-to-device into its own buffer   vs  cudaMemcpy D2D in the holder
//   staged ring   device->pinned slot->device through two double-buffered 64 MiB slots
//                                                         vs  cudaMemcpy D2H + H2D of the whole
//   device xxh3   XXH3-64 per 4 MiB chunk                 vs  a device copy kernel
// Prints a table and JSON (stdout, and --json FILE). Exit 2 with one line when no GPU exists.
//   bench_device [--bytes 4GiB] [--reps 5] [--chunk 4MiB] [--json FILE]
#include "bench_device.hpp"

#include <cuda_runtime_api.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "tensorhub/core/error.hpp"

extern char** environ;
namespace tb = tensorhub::bench;
namespace td = tensorhub::device;

namespace {

std::size_t parse_size(const std::string& v) {
  std::size_t pos = 0;
  const unsigned long long n = std::stoull(v, &pos);
  const std::string unit = v.substr(pos);
  if (unit.empty()) return n;
  if (unit == "KiB") return n << 10;
  if (unit == "MiB") return n << 20;
  if (unit == "GiB") return n << 30;
  throw tensorhub::UserError("bench_device: bad size '" + v + "' (e.g. 4GiB, 64MiB)");
}

double best(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

std::string json_list(const std::vector<double>& v) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "]";
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw tensorhub::Error("bench_device: readlink /proc/self/exe failed");
  return std::string(buf, static_cast<std::size_t>(n));
}

// Runs this binary as the reader; returns its one line of output ("<gbps...> verified").
std::string run_reader(const tb::Options& o, const td::IpcHandle& h, std::uint64_t digest) {
  int fds[2];
  if (::pipe(fds) != 0) throw tensorhub::Error("bench_device: pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  const std::string exe = self_exe();
  const std::string handle = h.encode();
  const std::string dig = std::to_string(digest);
  const std::string bytes = std::to_string(o.bytes);
  const std::string reps = std::to_string(o.reps);
  const std::string chunk = std::to_string(o.chunk);
  std::vector<char*> argv = {const_cast<char*>(exe.c_str()),    const_cast<char*>("--reader"),
                             const_cast<char*>(handle.c_str()), const_cast<char*>(dig.c_str()),
                             const_cast<char*>(bytes.c_str()),  const_cast<char*>(reps.c_str()),
                             const_cast<char*>(chunk.c_str()),  nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw tensorhub::Error("bench_device: posix_spawn of the reader failed");
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw tensorhub::Error("bench_device: the reader process failed");
  return out;
}

int reader(char** argv) {
  tb::Options o;
  o.bytes = std::stoull(argv[4]);
  o.reps = std::stoi(argv[5]);
  o.chunk = std::stoull(argv[6]);
  bool verified = false;
  const auto gbps = tb::ipc_pull(td::IpcHandle::decode(argv[2]), std::stoull(argv[3]), o, &verified);
  for (double g : gbps) std::printf("%.6f ", g);
  std::printf("%s\n", verified ? "verified" : "MISMATCH");
  return 0;
}

int run(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "--reader") == 0) return reader(argv);
  tb::Options o;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--bytes")
      o.bytes = parse_size(v), ++i;
    else if (a == "--chunk")
      o.chunk = parse_size(v), ++i;
    else if (a == "--reps")
      o.reps = std::stoi(v), ++i;
    else if (a == "--json")
      json_path = v, ++i;
    else
      throw tensorhub::UserError("bench_device: unknown argument '" + a + "' (--bytes, --chunk, --reps, --json)");
  }
  if (o.bytes == 0 || o.chunk == 0 || o.reps < 1)
    throw tensorhub::UserError("bench_device: sizes and --reps must be > 0");
  if (td::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_device: no CUDA device (driver or GPU missing); nothing measured\n");
    return 2;
  }
  auto dev = td::make_device("cuda");
  td::Buffer src = dev->allocate(o.bytes);
  td::Buffer dst = dev->allocate(o.bytes);
  auto stream = dev->create_stream();
  {
    // Random bytes, each 64 MiB slice made distinct by its index in the first word, so a copy
    // that misplaces or drops a slice changes the digest.
    std::vector<std::uint64_t> pattern((std::size_t{64} << 20) / 8);
    std::mt19937_64 rng(42);
    for (auto& w : pattern) w = rng();
    const std::size_t slice = pattern.size() * 8;
    for (std::size_t off = 0, i = 0; off < o.bytes; off += slice, ++i) {
      pattern[0] = i;
      dev->copy_async(static_cast<std::uint8_t*>(src.get()) + off, pattern.data(), std::min(slice, o.bytes - off),
                      td::CopyKind::kHostToDevice, stream);
      stream.synchronize();  // the host pattern changes before the next slice
    }
  }
  const std::uint64_t dig = tb::digest(*dev, src.get(), o);

  // The reader runs first, alone on the GPU; then the holder's baselines.
  // A failed IPC step (e.g. a runtime without CUDA IPC) is reported, and the rest still runs.
  std::vector<double> ipc;
  bool verified = false;
  std::string ipc_error;
  try {
    std::istringstream reader_out(run_reader(o, dev->export_ipc(src.get()), dig));
    std::string word;
    while (reader_out >> word) {
      if (word == "verified") {
        verified = true;
      } else if (word != "MISMATCH") {
        ipc.push_back(std::stod(word));
      }
    }
  } catch (const std::exception& e) {
    ipc_error = e.what();
    std::fprintf(stderr, "bench_device: ipc pull not measured: %s\n", e.what());
  }
  const auto d2d = tb::d2d_memcpy(*dev, src.get(), dst.get(), o);
  const auto staged = tb::staged_ring(*dev, src.get(), dst.get(), o);
  const bool staged_ok = tb::digest(*dev, dst.get(), o) == dig;
  const auto d2h_h2d = tb::d2h_h2d_memcpy(*dev, src.get(), dst.get(), o);
  const auto hash = tb::xxh3(*dev, src.get(), o);
  const auto kernel = tb::copy_kernel(*dev, src.get(), dst.get(), o);

  std::ostringstream j;
  j << "{\"benchmark\": \"bench_device\", \"device\": \"" << dev->describe() << "\", \"bytes\": " << o.bytes
    << ", \"chunk\": " << o.chunk << ", \"slot\": " << o.slot << ", \"reps\": " << o.reps
    << ", \"gbps_unit\": \"1e9 bytes/s of the buffer, best of reps\",\n"
    << " \"ipc_pull\": " << json_list(ipc) << ", \"ipc_pull_verified\": " << (verified ? "true" : "false")
    << ", \"ipc_pull_failed\": " << (ipc_error.empty() ? "false" : "true") << ",\n \"memcpy_d2d\": " << json_list(d2d)
    << ",\n \"staged_ring\": " << json_list(staged) << ", \"staged_ring_verified\": " << (staged_ok ? "true" : "false")
    << ",\n \"memcpy_d2h_h2d\": " << json_list(d2h_h2d) << ",\n \"xxh3_chunks\": " << json_list(hash)
    << ",\n \"copy_kernel\": " << json_list(kernel) << ",\n \"ratio_ipc_vs_d2d\": " << best(ipc) / best(d2d)
    << ", \"ratio_staged_vs_d2h_h2d\": " << best(staged) / best(d2h_h2d)
    << ", \"ratio_xxh3_vs_copy_kernel\": " << best(hash) / best(kernel)
    << ",\n \"goals\": {\"ipc_vs_d2d\": 0.9, \"staged_vs_d2h_h2d\": 0.8, \"xxh3_vs_copy_kernel\": 0.5}}\n";
  std::printf("%-34s %10s %10s %7s\n", "measure", "GB/s", "baseline", "ratio");
  std::printf("%-34s %10.1f %10.1f %7.2f\n", "ipc pull vs cudaMemcpy D2D", best(ipc), best(d2d), best(ipc) / best(d2d));
  std::printf("%-34s %10.1f %10.1f %7.2f\n", "staged ring vs cudaMemcpy D2H+H2D", best(staged), best(d2h_h2d),
              best(staged) / best(d2h_h2d));
  std::printf("%-34s %10.1f %10.1f %7.2f\n", "device xxh3 vs copy kernel", best(hash), best(kernel),
              best(hash) / best(kernel));
  std::printf("%s", j.str().c_str());
  if (!json_path.empty()) std::ofstream(json_path) << j.str();
  return verified && staged_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_device: %s\n", e.what());
    return 1;
  }
}
