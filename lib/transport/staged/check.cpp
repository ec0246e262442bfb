#include <exception>

#include "staged/codec.hpp"
#include "staged/staged_transport.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/device/device.hpp"
#include "tensorhub/transport/device_paths_check.hpp"
#if TENSORHUB_HAVE_UCX
#include "ucx/ucx_transport.hpp"
#endif

namespace tensorhub::transport {

DevicePathsCheck check_device_paths() {
  DevicePathsCheck c;
  try {
    const auto device = device::make_device_from_env();
    const auto o = StagedOptions::from_env();
    StagedTransport t(
        *device, [] { return std::unique_ptr<Transport>(); }, o);  // no ring: nothing exposed
    const auto e = staged::decode_endpoint(t.endpoint());
    c.staged_ok = true;
    c.staged = "a staging server starts on " + e.address + " (TENSORHUB_STAGED_ADDRESS), ring " +
               std::to_string(o.slots) + " x " + std::to_string(o.slot_bytes >> 10) + " KiB pinned on " +
               device->describe() + ", slots read over " + o.via;
    if (e.address.starts_with("127.")) {
      c.staged += "; a loopback address: readers on other hosts cannot reach it (set TENSORHUB_STAGED_ADDRESS)";
    }
  } catch (const std::exception& e) {
    c.staged = e.what();
  }
#if TENSORHUB_HAVE_UCX
  c.ucx_built = true;
  try {
    UcxTransport u(UcxOptions::from_env());
    c.ucx_cuda_aware = u.cuda_aware();
    c.ucx = c.ucx_cuda_aware ? "UCS_MEMORY_TYPE_CUDA supported: ucx exposes and reads device memory directly"
                             : "this UCX has no CUDA memory type (Debian's is built without CUDA; PyPI's "
                               "libucx-cu12/-cu13 have it): device memory to other hosts goes over staged";
  } catch (const std::exception& e) {
    c.ucx = std::string("no ucx transport: ") + e.what();
  }
#else
  c.ucx = "this TensorHub is built without UCX";
#endif
  return c;
}

}  // namespace tensorhub::transport
