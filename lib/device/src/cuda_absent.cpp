// The cuda backend in a build without the CUDA toolkit (TENSORHUB_CUDA=OFF, or AUTO without one).
#include "cuda_device.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::device::detail {

bool cuda_built() noexcept { return false; }
int cuda_count() noexcept { return 0; }
std::unique_ptr<Device> make_cuda_device(int /*ordinal*/) {
  throw DeviceError("device 'cuda': this build has no cuda backend (configured without the CUDA toolkit)");
}

}  // namespace tensorhub::device::detail
