// _tensorhub: the pybind11 extension behind `import tensorhub` (lib/python/tensorhub/).
//
// A thin layer over tensorhub::Hub (tensorhub/hub.hpp). Python code (tensorhub/_hub.py) turns
// arrays into (name, dtype, shape, address, bytes) tuples and keeps the published objects alive;
// this file builds tensorhub::Tensor views over those addresses, calls the Hub with the GIL
// released, and maps the C++ error taxonomy (tensorhub/core/error.hpp) onto Python exceptions.
#include <mpi.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tensorhub/config.hpp"
#include "tensorhub/hub.hpp"

namespace py = pybind11;

namespace tensorhub::python {
namespace {

// (name, dtype name, shape, address, bytes) as tensorhub/_arrays.py builds them.
using TensorTuple = std::tuple<std::string, std::string, std::vector<std::int64_t>, std::uintptr_t, std::uint64_t>;
// (name, size, rank)
using GroupTuple = std::tuple<std::string, std::uint32_t, std::uint32_t>;

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

std::optional<Group> to_group(const std::optional<GroupTuple>& g) {
  if (!g) return std::nullopt;
  return Group{std::get<0>(*g), std::get<1>(*g), std::get<2>(*g)};
}

Version to_version(const std::optional<std::uint64_t>& v) { return v ? Version::exact(*v) : Version::latest(); }

// MPI for processes that are not MPI ranks: an Open MPI singleton (MPI_Init without mpirun),
// initialised here unless mpi4py (or the application) already did. Returns true when this call
// initialised it, so that the Python side finalises it at exit.
bool ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return false;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    throw TransportError("MPI_Init_thread failed (a plain process needs Open MPI's singleton mode)");
  }
  return true;
}

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

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
      versions.append(vd);
    }
    py::dict md;
    md["model"] = m.model;
    md["versions"] = versions;
    out.append(md);
  }
  return out;
}

// The progress callback runs on the pulling thread with the GIL released: it takes the GIL for
// the Python call and stores the first exception the callable raises (re-raised after the pull;
// later progress calls are skipped).
struct Progress {
  py::object fn;
  std::shared_ptr<py::error_already_set> error;
  void operator()(std::uint64_t done, std::uint64_t total) {
    py::gil_scoped_acquire gil;
    if (error) return;
    try {
      fn(done, total);
    } catch (py::error_already_set& e) {
      error = std::make_shared<py::error_already_set>(std::move(e));
    }
  }
};

class PyHub {
 public:
  PyHub(std::optional<std::uintptr_t> comm_handle, HubOptions options) {
    // A handle from mpi4py's MPI._handleof(comm): for Open MPI, the MPI_Comm pointer.
    MPI_Comm comm = comm_handle ? reinterpret_cast<MPI_Comm>(*comm_handle)  // NOLINT(performance-no-int-to-ptr)
                                : MPI_COMM_SELF;
    py::gil_scoped_release nogil;
    hub_ = Hub::join(comm, std::move(options));
  }

  void close() {
    py::gil_scoped_release nogil;
    hub_->close();
  }

  void publish(const std::string& model, std::uint64_t version, const std::vector<TensorTuple>& tensors,
               const std::optional<GroupTuple>& group) {
    const auto ts = to_tensors(tensors);
    const auto g = to_group(group);
    py::gil_scoped_release nogil;
    hub_->publish(model, version, ts, g);
  }

  py::dict pull(const std::string& model, const std::optional<std::uint64_t>& version,
                const std::vector<TensorTuple>& into, const std::optional<GroupTuple>& group, bool verify, bool relay,
                const py::object& progress) {
    const auto ts = to_tensors(into);
    PullOptions o;
    o.verify = verify;
    o.relay = relay;
    o.group = to_group(group);
    Progress p{progress, nullptr};
    if (!progress.is_none()) o.progress = [&p](std::uint64_t done, std::uint64_t total) { p(done, total); };
    PullResult r;
    {
      py::gil_scoped_release nogil;
      r = hub_->pull(model, to_version(version), ts, o);
    }
    if (p.error) throw *p.error;
    return to_dict(r);
  }

  // The baseline of scripts/bench/python_pull.py: `iterations` C++ Hub::pull calls of `version`
  // into `into` (verify on, relay off, as the Python side is asked), wall seconds of each.
  std::vector<double> cpp_pull_seconds(const std::string& model, std::uint64_t version,
                                       const std::vector<TensorTuple>& into, int iterations) {
    const auto ts = to_tensors(into);
    PullOptions o;
    o.relay = false;
    std::vector<double> out;
    py::gil_scoped_release nogil;
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      hub_->pull(model, Version::exact(version), ts, o);
      out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return out;
  }

  void unpublish(const std::string& model, std::uint64_t version) {
    released([&] { hub_->unpublish(model, version); });
  }
  void retain(const std::string& model, std::uint64_t version) {
    released([&] { hub_->retain(model, version); });
  }
  void release(const std::string& model, std::uint64_t version) {
    released([&] { hub_->release(model, version); });
  }
  void attach_snapshot(const std::string& path) {
    released([&] { hub_->attach_snapshot(path); });
  }

  std::optional<std::uint64_t> latest(const std::string& model) {
    py::gil_scoped_release nogil;
    return hub_->latest(model);
  }

  std::optional<std::uint64_t> wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                        double timeout_s) {
    const auto ms = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000.0));
    py::gil_scoped_release nogil;
    return hub_->wait_for(model, newer_than, ms);
  }

  py::dict manifest(const std::string& model, const std::optional<std::uint64_t>& version) {
    Manifest m;
    {
      py::gil_scoped_release nogil;
      m = hub_->manifest(model, to_version(version));
    }
    return to_dict(m);
  }

  py::list status() {
    std::vector<ModelInfo> s;
    {
      py::gil_scoped_release nogil;
      s = hub_->status();
    }
    return to_list(s);
  }

  std::uintptr_t allocate(std::uint64_t bytes) {
    py::gil_scoped_release nogil;
    return reinterpret_cast<std::uintptr_t>(hub_->allocate(bytes));
  }
  void deallocate(std::uintptr_t p) {
    released([&] { hub_->deallocate(reinterpret_cast<void*>(p)); });  // NOLINT(performance-no-int-to-ptr)
  }
  void stop_relaying(const std::vector<TensorTuple>& tensors) {
    const auto ts = to_tensors(tensors);
    released([&] { hub_->stop_relaying(ts); });
  }

  [[nodiscard]] int rank() const { return hub_->rank(); }
  [[nodiscard]] bool runs_coordinator() const { return hub_->runs_coordinator(); }
  [[nodiscard]] std::string address() const { return hub_->coordinator_address(); }

 private:
  template <class F>
  void released(F&& f) {
    py::gil_scoped_release nogil;
    f();
  }
  std::unique_ptr<Hub> hub_;
};

// NOLINTNEXTLINE(bugprone-easily-swappable-parameters): the Python keyword arguments, by name
HubOptions make_options(const std::string& address, const std::string& transport, std::uint64_t pool,
                        std::uint64_t chunk, std::uint32_t max_readers, std::uint32_t inflight, double rpc_deadline_s,
                        double pull_deadline_s, const std::string& snapshot_dir) {
  HubOptions o;
  o.hub_address = address;
  o.transport = transport;
  o.pool_bytes = pool;
  if (chunk != 0) o.chunk_bytes = chunk;
  if (max_readers != 0) o.max_readers_per_source = max_readers;
  if (inflight != 0) o.inflight = inflight;
  if (rpc_deadline_s > 0) o.rpc_deadline = std::chrono::milliseconds(static_cast<std::int64_t>(rpc_deadline_s * 1e3));
  if (pull_deadline_s > 0) {
    o.pull_deadline = std::chrono::milliseconds(static_cast<std::int64_t>(pull_deadline_s * 1e3));
  }
  o.snapshot_dir = snapshot_dir;
  return o;
}

void register_errors(py::module_& m) {
  // Registered base first: pybind11 tries the most recently registered translator first, so a
  // derived C++ type is always matched by its own Python class.
  auto& error = py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  auto& user = py::register_exception<UserError>(m, "UserError", error.ptr());
  auto& not_found = py::register_exception<NotFoundError>(m, "NotFoundError", user.ptr());
  py::register_exception<OffloadRequired>(m, "OffloadRequired", user.ptr());
  py::register_exception<UnknownWorker>(m, "UnknownWorker", not_found.ptr());
  py::register_exception<HubClosed>(m, "HubClosed", user.ptr());
  auto& transport = py::register_exception<TransportError>(m, "TransportError", error.ptr());
  py::register_exception<TimeoutError>(m, "TimeoutError", transport.ptr());
  py::register_exception<ChecksumError>(m, "ChecksumError", error.ptr());
  py::register_exception<ContractViolation>(m, "ContractViolation", error.ptr());
}

}  // namespace
}  // namespace tensorhub::python

PYBIND11_MODULE(_tensorhub, m) {
  namespace th = tensorhub::python;
  m.doc() = "TensorHub C++ binding (use the tensorhub package, not this module)";
  th::register_errors(m);
  m.def("ensure_mpi", &th::ensure_mpi, "Initialises MPI (singleton) unless it is; True if this call did.");
  m.def("finalize_mpi", &th::finalize_mpi, "MPI_Finalize unless finalised already.");
  m.def("dtype_size", [](const std::string& name) { return tensorhub::dtype_size(tensorhub::parse_dtype(name)); });
  m.def("dtype_name",
        [](const std::string& name) { return std::string(tensorhub::dtype_name(tensorhub::parse_dtype(name))); });
  m.attr("DEFAULT_CHUNK_BYTES") = tensorhub::kDefaultChunkBytes;
  m.attr("HAVE_UCX") = TENSORHUB_HAVE_UCX != 0;
  m.attr("VERSION") = TENSORHUB_VERSION;
  py::class_<th::PyHub>(m, "Hub")
      .def(py::init([](std::optional<std::uintptr_t> comm, const std::string& address, const std::string& transport,
                       std::uint64_t pool, std::uint64_t chunk, std::uint32_t max_readers, std::uint32_t inflight,
                       double rpc_deadline, double pull_deadline, const std::string& snapshot_dir) {
             return std::make_unique<th::PyHub>(
                 comm, th::make_options(address, transport, pool, chunk, max_readers, inflight, rpc_deadline,
                                        pull_deadline, snapshot_dir));
           }),
           py::arg("comm"), py::arg("address"), py::arg("transport"), py::arg("pool"), py::arg("chunk"),
           py::arg("max_readers"), py::arg("inflight"), py::arg("rpc_deadline"), py::arg("pull_deadline"),
           py::arg("snapshot_dir"))
      .def("close", &th::PyHub::close)
      .def("publish", &th::PyHub::publish)
      .def("pull", &th::PyHub::pull)
      .def("cpp_pull_seconds", &th::PyHub::cpp_pull_seconds)
      .def("unpublish", &th::PyHub::unpublish)
      .def("retain", &th::PyHub::retain)
      .def("release", &th::PyHub::release)
      .def("attach_snapshot", &th::PyHub::attach_snapshot)
      .def("latest", &th::PyHub::latest)
      .def("wait_for", &th::PyHub::wait_for)
      .def("manifest", &th::PyHub::manifest)
      .def("status", &th::PyHub::status)
      .def("allocate", &th::PyHub::allocate)
      .def("deallocate", &th::PyHub::deallocate)
      .def("stop_relaying", &th::PyHub::stop_relaying)
      .def_property_readonly("rank", &th::PyHub::rank)
      .def_property_readonly("runs_coordinator", &th::PyHub::runs_coordinator)
      .def_property_readonly("address", &th::PyHub::address);
}
