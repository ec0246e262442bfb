// Conversions between the Python side's tuples/dicts and the C++ API types (convert.hpp).
#include "convert.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "tensorhub/core/error.hpp"

namespace tensorhub::python {

std::vector<Tensor> to_tensors(const std::vector<TensorTuple>& in) {
  std::vector<Tensor> out;
  out.reserve(in.size());
  for (const auto& [name, dtype, shape, address, bytes] : in) {
    Tensor t;
    t.spec = TensorSpec{name, parse_dtype(dtype), shape};
    t.data = reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr): from Python
    t.bytes = bytes;
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Tensor> to_tensors(const std::vector<TensorTuple>& in, const std::vector<std::optional<BoxTuple>>& boxes) {
  auto out = to_tensors(in);
  if (boxes.empty()) return out;
  if (boxes.size() != out.size()) throw UserError("publish: one box (or None) per tensor");
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!boxes[i]) continue;
    std::tie(out[i].spec.global_name, out[i].spec.global_shape, out[i].spec.box_offset) = *boxes[i];
    if (out[i].spec.global_name.empty()) throw UserError("tensor '" + out[i].spec.name + "': empty global name");
  }
  return out;
}

std::optional<Group> to_group(const std::optional<GroupTuple>& g) {
  if (!g) return std::nullopt;
  return Group{std::get<0>(*g), std::get<1>(*g), std::get<2>(*g)};
}

Version to_version(const std::optional<std::uint64_t>& v) { return v ? Version::exact(*v) : Version::latest(); }

py::dict to_dict(const PullResult& r) {
  py::dict d;
  d["version"] = r.version;
  d["bytes"] = r.bytes;
  d["seconds"] = r.seconds;
  d["origin_bytes"] = r.origin_bytes;
  d["relay_bytes"] = r.relay_bytes;
  d["failed_reads"] = r.failed_reads;
  d["file_bytes"] = r.file_bytes;
  d["local_bytes"] = r.local_bytes;
  d["staged_bytes"] = r.staged_bytes;
  d["scattered_bytes"] = r.scattered_bytes;
  d["digested_bytes"] = r.digested_bytes;
  return d;
}

py::dict to_dict(const PublishResult& r) {
  py::dict d;
  d["committed"] = r.committed;
  d["bytes"] = r.bytes;
  d["hash_threads"] = r.hash_threads;
  d["call_seconds"] = static_cast<double>(r.call.count()) / 1e6;
  d["hashed_seconds"] = static_cast<double>(r.hashed.count()) / 1e6;
  d["commit_seconds"] = static_cast<double>(r.commit.count()) / 1e6;
  return d;
}

py::dict to_dict(const Manifest& m) {
  py::list tensors;
  for (const auto& t : m.tensors) {
    py::dict e;
    e["name"] = t.spec.name;
    e["dtype"] = std::string(dtype_name(t.spec.dtype));
    e["shape"] = t.spec.shape;
    e["bytes"] = t.spec.bytes();
    e["shard"] = t.shard;
    e["num_chunks"] = t.num_chunks;
    e["global_name"] = t.spec.global_name;  // "" for a plain tensor
    e["global_shape"] = t.spec.global_shape;
    e["box_offset"] = t.spec.box_offset;
    tensors.append(e);
  }
  py::dict d;
  d["model"] = m.model;
  d["version"] = m.version;
  d["chunk_bytes"] = m.chunk_bytes;
  d["num_shards"] = m.num_shards;
  d["total_bytes"] = m.total_bytes();
  d["tensors"] = tensors;
  return d;
}

py::list to_list(const std::vector<ModelInfo>& models) {
  py::list out;
  for (const auto& m : models) {
    py::list versions;
    for (const auto& v : m.versions) {
      py::list holders;
      for (const auto& h : v.holder_list) {
        py::dict hd;
        hd["worker"] = h.worker;
        hd["host"] = h.host;
        hd["rank"] = h.rank;
        hd["origin"] = h.origin;
        hd["withdrawn"] = h.withdrawn;
        hd["pins"] = h.pins;
        hd["chunks_held"] = h.chunks_held;
        hd["chunks_total"] = h.chunks_total;
        holders.append(hd);
      }
      py::dict vd;
      vd["version"] = v.version;
      vd["committed"] = v.committed;
      vd["readable"] = v.readable;
      vd["retained"] = v.retained;
      vd["holders"] = v.holders;
      vd["origin_holders"] = v.origin_holders;
      vd["pins"] = v.pins;
      vd["bytes"] = v.bytes;
      vd["snapshot"] = v.snapshot;
      vd["holder_list"] = holders;
      vd["tensors"] = v.tensors;
      py::list globals;
      for (const auto& g : v.global_tensors) {
        py::dict gd;
        gd["name"] = g.name;
        gd["dtype"] = std::string(dtype_name(g.dtype));
        gd["shape"] = py::tuple(py::cast(g.shape));
        gd["boxes"] = g.boxes;
        globals.append(gd);
      }
      vd["global_tensors"] = globals;
      versions.append(vd);
    }
    py::dict md;
    md["model"] = m.model;
    md["versions"] = versions;
    out.append(md);
  }
  return out;
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(std::max(0.0, seconds) * 1e3)));
}

}  // namespace tensorhub::python
