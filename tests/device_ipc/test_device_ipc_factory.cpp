// make_transport / transport_paths with a device (factory.hpp): device_ipc is a path name, part of
// "auto" only when a device is given, refused without one; the multi transport it builds exposes
// device memory on device_ipc. No MPI call is made (no mpi_rma path is created here).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"
#include "tensorhub/transport/factory.hpp"

namespace tensorhub::transport {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(DeviceIpcFactory, PathListsAndAuto) {
  EXPECT_FALSE(has(transport_paths("auto"), "device_ipc"));
  EXPECT_TRUE(has(transport_paths("auto", true), "device_ipc"));
  EXPECT_TRUE(has(transport_paths("", true), "device_ipc"));
  // Fixed preference order whatever the list says: same host (cma) before device_ipc.
  EXPECT_EQ(transport_paths("device_ipc,cma"), (std::vector<std::string>{"cma", "device_ipc"}));
  EXPECT_THROW(transport_paths("device_ipc,device_ipc"), UserError);
}

TEST(DeviceIpcFactory, NeedsADevice) {
  EXPECT_THROW(make_transport("device_ipc", MPI_COMM_NULL, "job", 0, 0), UserError);
  const auto device = device::make_device_from_env();
  auto t = make_transport("cma,device_ipc", MPI_COMM_NULL, "job", 0, 0, device.get());
  EXPECT_EQ(t->name(), "cma+device_ipc");
  auto buf = device->allocate(4096);
  EXPECT_TRUE(t->can_expose(MemoryRange{buf.get(), 4096, MemoryKind::kCuda}));
  std::vector<std::uint8_t> host(64);
  EXPECT_TRUE(t->can_expose(MemoryRange{host.data(), host.size(), MemoryKind::kHost}));  // on cma
  // Without device_ipc nothing takes device memory (cma is host-only).
  auto host_only = make_transport("cma", MPI_COMM_NULL, "job", 0, 0, device.get());
  EXPECT_FALSE(host_only->can_expose(MemoryRange{buf.get(), 4096, MemoryKind::kCuda}));
}

}  // namespace
}  // namespace tensorhub::transport
