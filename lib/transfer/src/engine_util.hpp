// Small pieces both modes of the chunk engine share (private header): chunk names for errors,
// the text of the exception being handled, this reader's progress bytes, chunk runs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/coord/types.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer {

// "tensor 'w' chunk 3 (bytes 12288..16384)".
std::string chunk_name(const Manifest& m, std::uint32_t chunk);
// The text of the exception being handled (call inside a catch block).
std::string current_error_text();
// Marks `chunk` verified in this reader's progress bytes (may be null), with a release store:
// a follower that reads the byte and then the chunk's bytes sees the bytes.
void mark_held(unsigned char* progress_bytes, std::uint32_t chunk) noexcept;
// Runs of `chunks` (sorted, no duplicates needed: duplicates are merged).
std::vector<coord::ChunkRange> to_ranges(std::vector<std::uint32_t> chunks);
// The chunks the destinations need (sorted, each once): every chunk of a whole-tensor
// destination, the chunks a box destination's runs touch. Checks the tensor indices.
std::vector<std::uint32_t> wanted_chunks(const Manifest& m, std::span<const Destination> dests);
// Bytes the destinations ask for.
std::uint64_t wanted_bytes(const Manifest& m, std::span<const Destination> dests);

}  // namespace tensorhub::transfer
