// Pull bf16 tensors of a version as FP8 (issue 45; README "FP8"): each destination is an FP8
// data buffer and a float32 scale buffer in the checkpoint convention (`weight_scale_inv`, one
// per block: dequantised = q x scale_inv), filled by tensorhub/core/fp8.hpp's quantize_bf16.
//
// How: the destinations are pulled in batches of at most `staging_bytes` of bf16 (a tensor
// larger than that alone) into a staging buffer of this rank, each chunk verified against the
// publisher's checksum as in any pull, then quantized on a thread of its own while the next batch
// is pulled into a second staging buffer; so this rank holds at most two batches of bf16, not a
// bf16 copy of the model. The staging buffers are not relayed (they are reused):
// a converted tensor is never served as its source dtype, and FP8 readers do not serve each
// other (each pulls its bf16 from the holders). Not yet: converting chunk by chunk as they arrive,
// device destinations, reading groups.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tensorhub/core/fp8.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

struct Fp8Destination {
  // A bf16 tensor of the version, by its name or by its global tensor's name (resharding: the
  // whole global tensor). A matrix of rows x cols: the last dimension is the columns, the others
  // multiply into rows (a 1-D tensor is one row).
  std::string name;
  std::uint8_t* data = nullptr;  // rows x cols FP8 values, row-major
  std::size_t data_bytes = 0;    // its capacity: must be rows x cols
  float* scale_inv = nullptr;    // one float32 per block, block-row-major
  std::size_t scales = 0;        // its capacity: must be ceil(rows / block_rows) x ceil(cols / block_cols)
  Fp8Format format = Fp8Format::kE4M3FN;
  std::int64_t block_rows = 128;
  std::int64_t block_cols = 128;
};

struct Fp8PullOptions {
  PullOptions pull;  // verify, deadline, progress; relay is ignored (never relayed), group must stay empty
  std::uint64_t staging_bytes = 256ull << 20;  // bf16 staged per batch (at least the largest tensor)
};

struct Fp8PullResult {
  PullResult pull;                    // the bf16 pulls, summed (seconds: the transfers)
  std::uint32_t batches = 0;          // pulls made
  std::uint64_t converted_bytes = 0;  // bf16 bytes quantized
  double convert_seconds = 0;         // on the converting thread, overlapped with the next batch's pull
  std::uint64_t staging_bytes = 0;    // the two staging buffers' size (batches alternate between them)
};

// Throws UserError, before anything is pulled, for a name the version lacks, a tensor that is
// not bf16, buffers whose sizes do not match, a name given twice, or a group; UserError naming the element for a NaN or
// infinite input (that tensor's block and the ones after it are not written); what Hub::pull throws otherwise.
Fp8PullResult pull_fp8(Hub& hub, const std::string& model, const Version& version, std::span<const Fp8Destination> into,
                       const Fp8PullOptions& options = {});

}  // namespace tensorhub
