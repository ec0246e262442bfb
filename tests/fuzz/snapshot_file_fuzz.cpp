// Whole-file fuzzing of snapshot files (issue 16: random metadata mutations crashed or hung
// `snapshot verify` / `inspect` inside HDF5 1.10.8's variable-length string reader). A
// deterministic mutation loop, no libFuzzer needed: each input is a real snapshot file (seeds
// written here in the current format, plus any files given) with a few random byte mutations;
// each one is opened by inspect, verify and read in a child process with a time limit, so that a
// crash (signal) or a hang (the limit) is counted and its file kept, and the loop goes on.
//   snapshot_file_fuzz fuzz SECONDS SEED WORKDIR [EXTRA_SEED_FILE...]   (prints counts; exit 1 on any crash/hang;
//                                                                        WORKDIR/sample: inputs for the corpus)
//   snapshot_file_fuzz replay DIR_OR_FILE...                          (the corpus in CI; exit 1 on any crash/hang)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace fs = std::filesystem;
using namespace tensorhub;

namespace {

constexpr unsigned kChildSeconds = 20;  // a hang: far beyond the few ms a small file takes

std::vector<char> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Everything a reader of an untrusted file does: inspect, verify, read with verification.
void exercise(const std::string& path) {
  try {
    const auto info = snapshot::inspect(path);
    (void)snapshot::verify(path);
    std::uint64_t total = 0;
    for (const auto& t : info.manifest.tensors) total += t.spec.bytes();
    if (total > (64u << 20)) return;  // a valid header may claim more than a test should allocate
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<Tensor> into;
    for (const auto& t : info.manifest.tensors) {
      bufs.emplace_back(t.spec.bytes());
      into.push_back(host_tensor(t.spec.name, t.spec.dtype, t.spec.shape, bufs.back().data()));
    }
    snapshot::read(path, into, /*verify=*/true);
  } catch (const std::exception&) {
    // A clear error is the expected outcome for a damaged file.
  }
}

enum class Outcome { kClean, kCrash, kHang };

Outcome run_child(const std::string& path) {
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(2);
  }
  if (pid == 0) {
    alarm(kChildSeconds);
    exercise(path);
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGALRM ? Outcome::kHang : Outcome::kCrash;
  return WEXITSTATUS(status) == 0 ? Outcome::kClean : Outcome::kCrash;
}

// Small snapshots in the current format: several dtypes and shapes, a bf16 committed type, a
// multi-chunk tensor, a scalar.
std::vector<fs::path> write_seeds(const fs::path& dir) {
  std::vector<fs::path> out;
  std::vector<unsigned char> a(9000), b(64), c(8), d(4);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<unsigned char>(i * 13);
  const std::vector<Tensor> t{host_tensor("layers.0.q_proj", DType::kU8, {9000}, a.data()),
                              host_tensor("embed/weight", DType::kBF16, {4, 8}, b.data()),
                              host_tensor("steps", DType::kI64, {1}, c.data()),
                              host_tensor("scale", DType::kF32, {}, d.data())};
  const auto m = assemble_manifest("policy", 3, 4096, {describe_shard(0, t, 4096)});
  out.push_back(dir / "seed_multi.h5");
  fs::remove(out.back());
  snapshot::write(out.back().string(), m, t);
  const std::vector<Tensor> one{t[0]};
  out.push_back(dir / "seed_one.h5");
  fs::remove(out.back());
  snapshot::write(out.back().string(), assemble_manifest("m", 1, 4096, {describe_shard(0, one, 4096)}), one);
  return out;
}

void mutate(std::vector<char>& f, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  const int n = 1 + static_cast<int>(rng() % 8);
  for (int k = 0; k < n && !f.empty(); ++k) {
    // Half the mutations hit the first 4 KiB, where the superblock and root metadata live.
    const std::size_t at = rng() % 2 ? pick(std::min<std::size_t>(f.size(), 4096)) : pick(f.size());
    switch (rng() % 6) {
      case 0:
        f[at] = static_cast<char>(f[at] ^ (1 << (rng() % 8)));
        break;
      case 1:
        f[at] = static_cast<char>(rng());
        break;
      case 2:
        f[at] = static_cast<char>(std::vector<unsigned char>{0, 0xff, 0x7f, 0x80, 1}[pick(5)]);
        break;
      case 3: {  // an 8-byte field set to an interesting value (lengths, addresses)
        const std::uint64_t v = std::vector<std::uint64_t>{0, ~0ull, 1ull << 32, 0x7fffffff, f.size()}[pick(5)];
        for (std::size_t i = 0; i < 8 && at + i < f.size(); ++i) f[at + i] = static_cast<char>(v >> (8 * i));
        break;
      }
      case 4:
        f.resize(std::max<std::size_t>(at, 1));
        break;    // truncate
      default: {  // copy a block over another
        const std::size_t from = pick(f.size()), len = 1 + pick(64);
        for (std::size_t i = 0; i < len && from + i < f.size() && at + i < f.size(); ++i) f[at + i] = f[from + i];
      }
    }
  }
}

int fuzz(double seconds, std::uint64_t seed, const fs::path& work, const std::vector<fs::path>& extra) {
  fs::create_directories(work / "crashes");
  auto seeds = write_seeds(work);
  seeds.insert(seeds.end(), extra.begin(), extra.end());
  std::vector<std::vector<char>> originals;
  for (const auto& s : seeds) originals.push_back(slurp(s));
  std::mt19937_64 rng(seed);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t runs = 0, crashes = 0, hangs = 0;
  const fs::path cur = work / "current.h5";
  while (std::chrono::steady_clock::now() < end) {
    auto bytes = originals[rng() % originals.size()];
    mutate(bytes, rng);
    spit(cur, bytes);
    const auto o = run_child(cur.string());
    ++runs;
    // A sample of inputs (every 97th, up to 16) for the replayed corpus (tests/fuzz/snapshot_files).
    if (runs % 97 == 0 && runs / 97 <= 16) {
      fs::create_directories(work / "sample");
      fs::copy_file(cur, work / "sample" / ("mutated_" + std::to_string(runs) + ".h5"),
                    fs::copy_options::overwrite_existing);
    }
    if (o != Outcome::kClean) {
      (o == Outcome::kCrash ? crashes : hangs)++;
      const auto keep = work / "crashes" / ((o == Outcome::kCrash ? "crash_" : "hang_") + std::to_string(runs) + ".h5");
      fs::copy_file(cur, keep, fs::copy_options::overwrite_existing);
      std::printf("%s: %s\n", o == Outcome::kCrash ? "CRASH" : "HANG", keep.c_str());
      std::fflush(stdout);
    }
  }
  std::printf("snapshot_file_fuzz: %llu mutated files in %.0f s (seed %llu): %llu crashes, %llu hangs\n",
              static_cast<unsigned long long>(runs), seconds, static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(crashes), static_cast<unsigned long long>(hangs));
  return crashes + hangs == 0 ? 0 : 1;
}

int replay(const std::vector<fs::path>& args) {
  std::vector<fs::path> inputs;
  for (const auto& a : args) {
    if (fs::is_directory(a)) {
      for (const auto& e : fs::directory_iterator(a)) {
        if (e.is_regular_file()) inputs.push_back(e.path());
      }
    } else {
      inputs.push_back(a);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  int bad = 0;
  for (const auto& p : inputs) {
    const auto o = run_child(p.string());
    std::printf("%s: %s\n", p.filename().c_str(),
                o == Outcome::kClean   ? "ok"
                : o == Outcome::kCrash ? "CRASH"
                                       : "HANG");
    bad += o != Outcome::kClean;
  }
  std::printf("%zu snapshot files replayed, %d crashed or hung\n", inputs.size(), bad);
  return inputs.empty() || bad > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 4 && a[0] == "fuzz") {
    return fuzz(std::stod(a[1]), std::stoull(a[2]), a[3], std::vector<fs::path>(a.begin() + 4, a.end()));
  }
  if (a.size() >= 2 && a[0] == "replay") return replay(std::vector<fs::path>(a.begin() + 1, a.end()));
  std::fprintf(stderr,
               "usage: snapshot_file_fuzz fuzz SECONDS SEED WORKDIR [SEED_FILE...]\n"
               "       snapshot_file_fuzz replay DIR_OR_FILE...\n");
  return 2;
}
