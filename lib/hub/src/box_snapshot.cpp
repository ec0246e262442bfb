// Box destinations read from a version's snapshot file (puller.hpp: read_snapshot_boxes): the
// snapshot stores each published tensor (a trainer's box) as its own dataset, so a box read takes
// the chunks its runs touch from the datasets of the boxes it meets, each checked against the
// version's checksum before any of its bytes is copied out.
#include <vector>

#include "hub_device.hpp"
#include "puller.hpp"
#include "tensorhub/snapshot/snapshot.hpp"
#include "tensorhub/transfer/box_runs.hpp"

namespace tensorhub {

std::uint64_t read_snapshot_boxes(const std::string& path, const Manifest& m,
                                  std::span<const transfer::Destination> boxes, bool verify, const std::string& why,
                                  HubDevice& device) {
  if (boxes.empty()) return 0;
  check_snapshot_file(path, m, why);
  std::uint64_t bytes = 0;
  for (const auto& d : boxes) {
    const auto& e = m.tensors.at(d.tensor);
    std::vector<std::uint32_t> chunks;
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const auto& spec = m.chunks[e.first_chunk + c];
      if (transfer::touches(d.runs, spec.offset, spec.offset + spec.length)) chunks.push_back(c);
    }
    auto* out = static_cast<unsigned char*>(d.data);
    bytes += snapshot::read_chunks(path, e.spec.name, chunks, verify, [&](std::uint32_t c, const unsigned char* in) {
      const auto& spec = m.chunks[e.first_chunk + c];
      transfer::for_each_piece(d.runs, spec.offset, spec.offset + spec.length,
                               [&](std::uint64_t src, std::uint64_t dst, std::uint64_t len) {
                                 device.copy(out + dst, d.memory, in + (src - spec.offset), MemoryKind::kHost, len);
                               });
    });
  }
  return bytes;
}

}  // namespace tensorhub
