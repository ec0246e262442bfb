#include "own_copy.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "hub_context.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"
#include "tensorhub/transfer/box_runs.hpp"

namespace tensorhub {
namespace {

device::CopyKind kind_of(MemoryKind from, MemoryKind to) {
  if (from == MemoryKind::kHost) return device::CopyKind::kHostToDevice;
  return to == MemoryKind::kCuda ? device::CopyKind::kDeviceToDevice : device::CopyKind::kDeviceToHost;
}

ChecksumError changed(const Manifest& m, const TensorEntry& e, std::uint32_t c) {
  return ChecksumError(vname(m.model, m.version) + ": tensor '" + e.spec.name + "' chunk " + std::to_string(c) +
                       " copied from this rank's own reference does not match its checksum (that memory "
                       "changed while it was referenced)");
}

}  // namespace

std::uint64_t copy_own(const Manifest& m, const transfer::Destination& d, const Tensor& src, bool verify,
                       HubDevice& device) {
  const auto& e = m.tensors[d.tensor];
  const auto n = e.spec.bytes();
  const bool on_device = d.memory == MemoryKind::kCuda;
  if (src.memory == MemoryKind::kHost && !on_device) {
    if (src.data != d.data) std::memcpy(d.data, src.data, n);
  } else if (src.data != d.data) {
    auto& dev = device.get();
    auto stream = dev.create_stream();
    dev.copy_async(d.data, src.data, n, kind_of(src.memory, d.memory), stream);
    stream.synchronize();
  }
  std::vector<std::uint64_t> device_sums;
  if (verify && on_device) {
    auto& dev = device.get();
    auto stream = dev.create_stream();
    device_sums = dev.xxh3_64_chunks(d.data, n, m.chunk_bytes, stream);
    require(device_sums.size() == e.num_chunks, "one device checksum per chunk");
  }
  for (std::uint32_t c = 0; verify && c < e.num_chunks; ++c) {
    const auto& ch = m.chunks[e.first_chunk + c];
    const auto sum =
        on_device ? device_sums[c]
                  : checksum64(m.checksum_algorithm, static_cast<const std::byte*>(d.data) + ch.offset, ch.length);
    if (sum != ch.checksum) throw changed(m, e, c);
  }
  return n;
}

std::uint64_t copy_own_runs(const Manifest& m, const transfer::Destination& d, const Tensor& src, bool verify,
                            HubDevice& device) {
  const auto& e = m.tensors[d.tensor];
  const auto n = e.spec.bytes();
  auto* to = static_cast<unsigned char*>(d.data);
  const auto* from = static_cast<const unsigned char*>(src.data);
  const bool host = src.memory == MemoryKind::kHost && d.memory == MemoryKind::kHost;
  std::uint64_t copied = 0;
  if (host) {
    transfer::for_each_piece(d.runs, 0, n, [&](std::uint64_t s, std::uint64_t t, std::uint64_t len) {
      std::memcpy(to + t, from + s, len);
      copied += len;
    });
  } else {
    auto& dev = device.get();
    auto stream = dev.create_stream();
    transfer::for_each_piece(d.runs, 0, n, [&](std::uint64_t s, std::uint64_t t, std::uint64_t len) {
      dev.copy_async(to + t, from + s, len, kind_of(src.memory, d.memory), stream);
      copied += len;
    });
    stream.synchronize();
  }
  for (std::uint32_t c = 0; verify && c < e.num_chunks; ++c) {
    const auto& ch = m.chunks[e.first_chunk + c];
    if (!transfer::touches(d.runs, ch.offset, ch.offset + ch.length)) continue;
    std::uint64_t sum = 0;
    if (src.memory == MemoryKind::kCuda) {
      auto& dev = device.get();
      auto stream = dev.create_stream();
      const auto sums = dev.xxh3_64_chunks(from + ch.offset, ch.length, ch.length, stream);
      require(sums.size() == 1, "one device checksum per chunk");
      sum = sums.front();
    } else {
      sum = checksum64(m.checksum_algorithm, from + ch.offset, ch.length);
    }
    if (sum != ch.checksum) throw changed(m, e, c);
  }
  return copied;
}

}  // namespace tensorhub
