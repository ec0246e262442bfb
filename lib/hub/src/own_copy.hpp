// A pull's copies from this rank's own memory (private header): a tensor this rank publishes or
// relays, copied into the pull's destination instead of read through a data path (the
// coordinator never assigns a reader its own chunks). Verified against the manifest's checksums,
// which catches memory that changed while it was referenced.
#pragma once

#include <cstdint>

#include "hub_device.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub {

// Copies tensor `d.tensor` of `m` (the whole tensor: d.runs empty) from `src`; with `verify`,
// every chunk's checksum over the copy. Device memory on either side is copied and hashed on the
// device. Returns the bytes copied. ChecksumError for a chunk that does not match.
std::uint64_t copy_own(const Manifest& m, const transfer::Destination& d, const Tensor& src, bool verify,
                       HubDevice& device);

// The same for a box destination (d.runs): copies the runs' pieces and, with `verify`, checks
// every chunk of `src` they touch (in place, on the device for device memory).
std::uint64_t copy_own_runs(const Manifest& m, const transfer::Destination& d, const Tensor& src, bool verify,
                            HubDevice& device);

}  // namespace tensorhub
