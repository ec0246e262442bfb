// The emulated device (CPU only): see device.hpp. Exposed for tests that want their own arena.
#pragma once

#include <cstddef>
#include <memory>

#include "tensorhub/device/device.hpp"

namespace tensorhub::device {

// Address space reserved (PROT_NONE, no memory committed) for one emulated device's allocations
// and imported mappings.
inline constexpr std::size_t kEmulatedDefaultReserve = std::size_t{64} << 30;

std::unique_ptr<Device> make_emulated_device(std::size_t reserve_bytes = kEmulatedDefaultReserve);

}  // namespace tensorhub::device
