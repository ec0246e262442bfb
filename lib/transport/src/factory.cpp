#include "tensorhub/transport/factory.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "cma/cma_transport.hpp"
#include "device_ipc/device_ipc_transport.hpp"
#include "local/local_transport.hpp"
#include "mpi_rma/mpi_rma_transport.hpp"
#include "multi/multi_transport.hpp"
#include "staged/staged_transport.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/core/error.hpp"
#if TENSORHUB_HAVE_UCX
#include "ucx/ucx_transport.hpp"
#endif

namespace tensorhub::transport {
namespace {

// Every data path, in preference order (a reader uses the first one that reaches a holder):
// same process, same host, same MPI job, any process. A new backend is one row here and one
// branch in make_path. device_ipc comes after cma: for host memory cma (and local) win; device
// memory is exposed only on device_ipc (and on ucx when it is CUDA-aware), so the multi transport
// routes it there. staged comes last: it serves device memory to readers no other path reaches.
constexpr std::array<std::string_view, 6> kPaths = {"local", "cma", "device_ipc", "mpi_rma", "ucx", "staged"};
// What "auto" (the default) means: every path that can serve another process. The same-host
// `cma` path is not in it yet: it is chosen explicitly (`--transport cma[,...]`) until the fault
// suite has run over it as a default path.
constexpr std::array<std::string_view, 2> kAutoPaths = {"mpi_rma", "ucx"};

constexpr bool have_ucx() { return TENSORHUB_HAVE_UCX != 0; }

// The host paths a staged holder's ring is exposed on and a staged reader reads slots with
// (StagedOptions::via: cma and/or ucx), as one multi transport.
std::unique_ptr<Transport> make_staged_inner(const std::string& via) {
  std::vector<std::unique_ptr<Transport>> paths;
  std::string_view rest = via;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto name = rest.substr(0, comma);
    if (name == "cma") {
      paths.push_back(std::make_unique<CmaTransport>(CmaOptions::from_env()));
#if TENSORHUB_HAVE_UCX
    } else if (name == "ucx") {
      paths.push_back(std::make_unique<UcxTransport>(UcxOptions::from_env()));
#else
    } else if (name == "ucx") {
      // not built: the ring is read over the others
#endif
    } else {
      throw UserError("TENSORHUB_STAGED_VIA='" + via + "': '" + std::string(name) + "' is not cma or ucx");
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (paths.empty()) throw UserError("TENSORHUB_STAGED_VIA='" + via + "': no host path of this build in it");
  return std::make_unique<MultiTransport>(std::move(paths));
}

std::unique_ptr<Transport> make_path(std::string_view name, MPI_Comm comm, const std::string& job_tag, int rank,
                                     std::uint64_t pool_bytes, device::Device* device) {
  if (name == "mpi_rma") return std::make_unique<MpiRmaTransport>(comm, job_tag, pool_bytes);
  if (name == "device_ipc") {
    if (device == nullptr) {
      throw UserError("transport 'device_ipc' needs a device (device memory: --memory cuda, TENSORHUB_DEVICE)");
    }
    return std::make_unique<DeviceIpcTransport>(*device, DeviceIpcOptions::from_env());  // same host only
  }
  if (name == "staged") {
    if (device == nullptr) {
      throw UserError("transport 'staged' needs a device (device memory: --memory cuda, TENSORHUB_DEVICE)");
    }
    auto options = StagedOptions::from_env();
    const auto via = options.via;
    return std::make_unique<StagedTransport>(
        *device, [via] { return make_staged_inner(via); }, std::move(options));
  }
  if (name == "cma") return std::make_unique<CmaTransport>(CmaOptions::from_env());  // same host only
  if (name == "local") return std::make_unique<LocalTransport>(job_tag + "-" + std::to_string(rank));
#if TENSORHUB_HAVE_UCX
  if (name == "ucx") return std::make_unique<UcxTransport>(UcxOptions::from_env());
#else
  if (name == "ucx") {
    throw UserError(
        "transport 'ucx' is not built into this TensorHub (configured without UCX: install libucx-dev "
        "and reconfigure, or -DTENSORHUB_WITH_UCX=ON to require it); use 'mpi_rma' or 'local'");
  }
#endif
  throw UserError("unknown transport '" + std::string(name) +
                  "' (choose auto, or a list of mpi_rma, ucx, cma, device_ipc, staged, local)");
}

}  // namespace

std::vector<std::string> transport_paths(const std::string& names, bool with_device) {
  std::vector<std::string> asked;
  if (names.empty() || names == "auto") {
    if (with_device) asked.emplace_back("device_ipc");  // device memory on this host
    for (const auto n : kAutoPaths) {
      if (n != "ucx" || have_ucx()) asked.emplace_back(n);
    }
    if (with_device) asked.emplace_back("staged");  // device memory to every other reader
    return asked;
  }
  std::string_view rest = names;
  while (true) {
    const auto comma = rest.find(',');
    const auto name = rest.substr(0, comma);
    if (std::find(kPaths.begin(), kPaths.end(), name) == kPaths.end()) {
      throw UserError("unknown transport '" + std::string(name) + "' in '" + names +
                      "' (choose auto, or a comma-separated list of mpi_rma, ucx, cma, device_ipc, staged, local)");
    }
    if (std::find(asked.begin(), asked.end(), name) != asked.end()) {
      throw UserError("transport '" + std::string(name) + "' listed twice in '" + names + "'");
    }
    asked.emplace_back(name);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::vector<std::string> ordered;
  for (const auto n : kPaths) {
    if (std::find(asked.begin(), asked.end(), n) != asked.end()) ordered.emplace_back(n);
  }
  return ordered;
}

std::unique_ptr<Transport> make_transport(const std::string& name, MPI_Comm comm, const std::string& job_tag, int rank,
                                          std::uint64_t pool_bytes, device::Device* device) {
  std::vector<std::unique_ptr<Transport>> paths;
  for (const auto& p : transport_paths(name, device != nullptr))
    paths.push_back(make_path(p, comm, job_tag, rank, pool_bytes, device));
  return std::make_unique<MultiTransport>(std::move(paths));
}

}  // namespace tensorhub::transport
