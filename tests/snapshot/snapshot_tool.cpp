// Test helper for the h5py / h5dump check (tests/snapshot/check_h5py.py) and for poking at files:
//   snapshot_tool write-sample PATH   writes a small snapshot with known values (see below)
//   snapshot_tool inspect PATH        prints the header, or the error
//   snapshot_tool verify PATH         prints every chunk mismatch, or the error
// Exit status: 0 ok, 1 error or mismatch, 2 usage.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "snapshot_test_util.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace ts = tensorhub::snapshot;
using tensorhub::DType;
using tensorhub::Tensor;

namespace {

// The values check_h5py.py expects: keep both in sync.
int write_sample(const std::string& path) {
  std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.0f, 0.001f, 65504.0f};          // f32 [2,3]
  std::vector<float> e = {1.0f, -2.5f, 3.140625f, 1e30f, -0.0078125f, 256.0f};  // bf16 [3,2], exact in bf16
  std::vector<std::uint16_t> e16;
  for (const float f : e) e16.push_back(ts::testing::bf16_bits(f));
  std::vector<std::int32_t> steps = {7, -1, 2147483647};       // i32 [3]
  std::vector<std::uint8_t> mask = {1, 0, 1, 1};               // bool [4]
  std::vector<std::uint16_t> half = {0x3c00, 0xc000, 0x3555};  // f16 [3]: 1, -2, ~0.3333
  std::vector<Tensor> tensors = {
      tensorhub::host_tensor("layers.0.w", DType::kF32, {2, 3}, w.data()),
      tensorhub::host_tensor("embed/weight", DType::kBF16, {3, 2}, e16.data()),
      tensorhub::host_tensor("steps", DType::kI32, {3}, steps.data()),
      tensorhub::host_tensor("mask", DType::kBool, {4}, mask.data()),
      tensorhub::host_tensor("half", DType::kF16, {3}, half.data()),
  };
  const auto m = ts::testing::manifest_of("policy", 3, 4096, {tensors});
  ts::write(path, m, tensors, /*overwrite=*/true);
  return 0;
}

int inspect(const std::string& path) {
  const auto info = ts::inspect(path);
  std::printf("%s: format %u, model %s, version %llu, %zu tensors, %llu bytes of data, %llu bytes on disk\n",
              path.c_str(), info.format_version, info.manifest.model.c_str(),
              static_cast<unsigned long long>(info.manifest.version), info.manifest.tensors.size(),
              static_cast<unsigned long long>(info.manifest.total_bytes()),
              static_cast<unsigned long long>(info.file_bytes));
  std::printf("created by %s at %s\n", info.created_by.c_str(), info.created_at.c_str());
  for (const auto& t : info.manifest.tensors) {
    std::printf("  %-30s %-16s shard %u, %u chunks\n", t.spec.name.c_str(), tensorhub::describe(t.spec).c_str(),
                t.shard, t.num_chunks);
  }
  return 0;
}

int verify(const std::string& path) {
  const auto report = ts::verify(path);
  for (const auto& m : report.mismatches) std::printf("MISMATCH %s\n", m.c_str());
  std::printf("%llu chunks, %llu bytes, %zu mismatches\n", static_cast<unsigned long long>(report.chunks),
              static_cast<unsigned long long>(report.bytes), report.mismatches.size());
  return report.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s write-sample|inspect|verify PATH\n", argv[0]);
    return 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "write-sample") return write_sample(argv[2]);
    if (cmd == "inspect") return inspect(argv[2]);
    if (cmd == "verify") return verify(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown command '%s'\n", cmd.c_str());
  return 2;
}
