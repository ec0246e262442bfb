// Conversions between the Python side's tuples/dicts and the C++ API types (module.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tensorhub/hub.hpp"

namespace tensorhub::python {

namespace py = pybind11;

// (name, dtype name, shape, address, bytes) as tensorhub/_arrays.py builds them.
using TensorTuple = std::tuple<std::string, std::string, std::vector<std::int64_t>, std::uintptr_t, std::uint64_t>;
// (global name, global shape, box offset) of a tensor that holds a box of a global tensor.
using BoxTuple = std::tuple<std::string, std::vector<std::int64_t>, std::vector<std::int64_t>>;
// An FP8 destination of pull_fp8: name, data address and bytes, scale address and count, format,
// block rows, block cols.
using Fp8Tuple = std::tuple<std::string, std::uintptr_t, std::uint64_t, std::uintptr_t, std::uint64_t, std::string,
                            std::int64_t, std::int64_t>;
// (name, size, rank)
using GroupTuple = std::tuple<std::string, std::uint32_t, std::uint32_t>;

std::vector<Tensor> to_tensors(const std::vector<TensorTuple>& in);
// With `boxes` (empty, or one entry per tensor: None for a plain tensor) applied.
std::vector<Tensor> to_tensors(const std::vector<TensorTuple>& in, const std::vector<std::optional<BoxTuple>>& boxes);
std::optional<Group> to_group(const std::optional<GroupTuple>& g);
Version to_version(const std::optional<std::uint64_t>& v);
py::dict to_dict(const PullResult& r);
py::dict to_dict(const PublishResult& r);
py::dict to_dict(const Manifest& m);
py::list to_list(const std::vector<ModelInfo>& models);
// Seconds (Python float) -> milliseconds, rounded up (a positive deadline stays positive);
// negative values were rejected by the Python layer.
std::chrono::milliseconds to_ms(double seconds);

}  // namespace tensorhub::python
