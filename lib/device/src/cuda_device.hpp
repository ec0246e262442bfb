// The cuda backend's entry points (cuda_device.cpp when the toolkit was found, cuda_absent.cpp
// otherwise), used by the factory in device.cpp.
#pragma once

#include <memory>

#include "tensorhub/device/device.hpp"

namespace tensorhub::device::detail {

bool cuda_built() noexcept;
int cuda_count() noexcept;
std::unique_ptr<Device> make_cuda_device(int ordinal);

}  // namespace tensorhub::device::detail
