// Every size limit on input that crosses a process boundary, in one place (README "Limits").
// The hub checks them before it sends anything and the coordinator on what it receives, so
// that a bad or hostile request gets one clear UserError (INVALID_ARGUMENT over gRPC) instead
// of memory growth, an allocation a reader cannot hold, or a pull that waits for ever.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorhub::limits {

// Model, tensor and group names (bytes of UTF-8).
inline constexpr std::size_t kMaxNameBytes = 1024;
// A worker's host name (RFC 1035: 253 characters; some margin).
inline constexpr std::size_t kMaxHostNameBytes = 255;
// A worker's transport endpoint (a UCX worker address is a few hundred bytes).
inline constexpr std::size_t kMaxEndpointBytes = 64 * 1024;
// One region descriptor of a reference (every data path's, multi transport included).
inline constexpr std::size_t kMaxRegionDescriptorBytes = 64 * 1024;
// Dimensions of one tensor (HDF5's H5S_MAX_RANK).
inline constexpr std::size_t kMaxDims = 32;
// Bytes of one tensor (1 TiB) and of one version (16 TiB).
inline constexpr std::uint64_t kMaxTensorBytes = 1ull << 40;
inline constexpr std::uint64_t kMaxVersionBytes = 1ull << 44;
// Tensors and chunks of one version. 2^19 chunks are 2 TiB in the default 4 MiB chunks; the
// manifest of so many chunks is about 12 MiB on the wire.
inline constexpr std::uint32_t kMaxTensorsPerVersion = 1u << 17;
// Boxes of one global tensor (resharding: box.hpp). The tiling check compares boxes pairwise where
// their first dimensions meet, so this bounds the work a manifest from the wire can ask for
// (at most 4096^2 / 2 box pairs); far above real layouts (FSDP over 1024 ranks).
inline constexpr std::uint32_t kMaxBoxesPerGlobalTensor = 4096;
inline constexpr std::uint32_t kMaxChunksPerVersion = 1u << 19;
// Members of a publishing or reading group; a reading group is also bounded by the workers
// registered when it resolves (a group nobody can complete would pin its version for ever).
inline constexpr std::uint32_t kMaxGroupSize = 65536;
// Departed workers kept for `status` (dead or left).
inline constexpr std::size_t kMaxDepartedWorkers = 64;
// One log line (longer lines are cut and marked).
inline constexpr std::size_t kMaxLogLineBytes = 4096;

}  // namespace tensorhub::limits
