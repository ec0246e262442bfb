// make_device / make_device_from_env (TENSORHUB_DEVICE): names, the cuda backend's answer on
// this machine (a device or a clear DeviceError), and bad values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"

namespace td = tensorhub::device;

namespace {

class EnvGuard {
 public:
  explicit EnvGuard(const char* value) {
    if (const char* old = std::getenv("TENSORHUB_DEVICE")) old_ = old;
    ::setenv("TENSORHUB_DEVICE", value, 1);
  }
  ~EnvGuard() {
    if (old_.empty()) {
      ::unsetenv("TENSORHUB_DEVICE");
    } else {
      ::setenv("TENSORHUB_DEVICE", old_.c_str(), 1);
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::string old_;
};

}  // namespace

TEST(DeviceFactory, EmulatedByName) {
  auto dev = td::make_device("emulated");
  EXPECT_EQ(dev->kind(), td::BackendKind::kEmulated);
  EXPECT_EQ(td::to_string(dev->kind()), "emulated");
  EXPECT_NE(dev->describe().find("emulated"), std::string::npos);
}

TEST(DeviceFactory, CudaIsADeviceOrAClearError) {
  if (td::cuda_device_count() > 0) {
    EXPECT_TRUE(td::cuda_backend_built());
    EXPECT_EQ(td::make_device("cuda")->kind(), td::BackendKind::kCuda);
    EXPECT_EQ(td::make_device("auto")->kind(), td::BackendKind::kCuda);
  } else {
    try {
      (void)td::make_device("cuda");
      ADD_FAILURE() << "make_device(cuda) without a CUDA device";
    } catch (const tensorhub::DeviceError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("no CUDA device") != std::string::npos || what.find("no cuda backend") != std::string::npos)
          << what;
    }
    EXPECT_EQ(td::make_device("auto")->kind(), td::BackendKind::kEmulated);
  }
  EXPECT_THROW((void)td::make_device("cuda", -1), tensorhub::DeviceError);
}

TEST(DeviceFactory, UnknownNamesAreRefused) {
  EXPECT_THROW((void)td::make_device("gpu"), tensorhub::UserError);
  EXPECT_THROW((void)td::make_device(""), tensorhub::UserError);
}

TEST(DeviceFactory, EnvironmentSelectsTheBackend) {
  {
    EnvGuard g("emulated");
    EXPECT_EQ(td::make_device_from_env()->kind(), td::BackendKind::kEmulated);
  }
  {
    EnvGuard g("tpu");
    try {
      (void)td::make_device_from_env();
      ADD_FAILURE() << "TENSORHUB_DEVICE=tpu accepted";
    } catch (const tensorhub::UserError& e) {
      EXPECT_NE(std::string(e.what()).find("TENSORHUB_DEVICE='tpu'"), std::string::npos) << e.what();
    }
  }
}
