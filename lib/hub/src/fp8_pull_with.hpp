// pull_fp8 over any hub-like pair of calls (Hub, or a HubCore in the MPI-free tests).
#pragma once

#include <functional>

#include "tensorhub/fp8_pull.hpp"

namespace tensorhub {

using ManifestCall = std::function<Manifest(const std::string&, const Version&)>;
using PullCall =
    std::function<PullResult(const std::string&, const Version&, std::span<const Tensor>, const PullOptions&)>;

Fp8PullResult pull_fp8_with(const ManifestCall& manifest, const PullCall& pull, const std::string& model,
                            const Version& version, std::span<const Fp8Destination> into,
                            const Fp8PullOptions& options);

}  // namespace tensorhub
