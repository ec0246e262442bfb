// _tensorhub: the pybind11 extension behind `import tensorhub` (lib/python/tensorhub/).
//
// A thin layer over tensorhub::Hub (tensorhub/hub.hpp). Python code (tensorhub/_hub.py) turns
// arrays into (name, dtype, shape, address, bytes) tuples and keeps the published objects alive;
// convert.hpp builds tensorhub::Tensor views over those addresses, this file calls the Hub with
// the GIL released (pull_handle.hpp: asynchronous pulls and the progress callback;
// publish_handle.hpp: asynchronous publishes), and maps the C++ error taxonomy
// (tensorhub/core/error.hpp) onto Python exceptions.
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

#include "convert.hpp"
#include "publish_handle.hpp"
#include "pull_handle.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/fp8_pull.hpp"
#include "tensorhub/hub.hpp"

namespace py = pybind11;

namespace tensorhub::python {
namespace {

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

  py::dict publish(const std::string& model, std::uint64_t version, const std::vector<TensorTuple>& tensors,
                   const std::optional<GroupTuple>& group, const std::vector<std::optional<BoxTuple>>& boxes) {
    const auto ts = to_tensors(tensors, boxes);
    const auto g = to_group(group);
    PublishResult r;
    {
      py::gil_scoped_release nogil;
      r = hub_->publish(model, version, ts, g);
    }
    return to_dict(r);
  }

  // Returns after validate + expose; the Python layer keeps the arrays alive until unpublish.
  std::unique_ptr<PyPublishHandle> publish_async(const std::string& model, std::uint64_t version,
                                                 const std::vector<TensorTuple>& tensors,
                                                 const std::optional<GroupTuple>& group,
                                                 const std::vector<std::optional<BoxTuple>>& boxes) {
    const auto ts = to_tensors(tensors, boxes);
    const auto g = to_group(group);
    PublishHandle h;
    {
      py::gil_scoped_release nogil;  // starting joins ended workers
      h = hub_->publish_async(model, version, ts, g);
    }
    return std::make_unique<PyPublishHandle>(std::move(h));
  }

  py::dict pull(const std::string& model, const std::optional<std::uint64_t>& version,
                const std::vector<TensorTuple>& into, const std::optional<GroupTuple>& group, bool verify, bool relay,
                const py::object& progress, const std::optional<double>& deadline_s,
                const std::vector<std::optional<BoxTuple>>& boxes) {
    const auto ts = to_tensors(into, boxes);
    auto p = progress.is_none() ? nullptr : std::make_shared<Progress>(progress);
    const auto o = make_pull_options(group, verify, relay, p, deadline_s);
    PullResult r;
    {
      py::gil_scoped_release nogil;
      r = hub_->pull(model, to_version(version), ts, o);
    }
    if (p) p->rethrow();
    return to_dict(r);
  }

  // Starts the pull on a hub worker thread; the Python layer keeps `into`'s arrays alive.
  std::unique_ptr<PyPullHandle> pull_async(const std::string& model, const std::optional<std::uint64_t>& version,
                                           const std::vector<TensorTuple>& into, const std::optional<GroupTuple>& group,
                                           bool verify, bool relay, const py::object& progress,
                                           const std::optional<double>& deadline_s,
                                           const std::vector<std::optional<BoxTuple>>& boxes) {
    const auto ts = to_tensors(into, boxes);
    auto p = progress.is_none() ? nullptr : std::make_shared<Progress>(progress);
    const auto o = make_pull_options(group, verify, relay, p, deadline_s);
    PullHandle h;
    {
      py::gil_scoped_release nogil;  // starting joins ended workers, which may drop a Progress
      h = hub_->pull_async(model, to_version(version), ts, o);
    }
    return std::make_unique<PyPullHandle>(std::move(h), std::move(p));
  }

  // pull_fp8 (tensorhub/fp8_pull.hpp); `into`: (name, data address, data bytes, scale address,
  // scales, format, block rows, block cols) each, the Python layer keeps the arrays alive.
  py::dict pull_fp8(const std::string& model, const std::optional<std::uint64_t>& version,
                    const std::vector<Fp8Tuple>& into, bool verify, std::uint64_t staging_bytes) {
    std::vector<Fp8Destination> ds;
    for (const auto& [name, data, data_bytes, scale, scales, format, rows, cols] : into) {
      Fp8Destination d;
      d.name = name;
      d.data = reinterpret_cast<std::uint8_t*>(data);  // NOLINT(performance-no-int-to-ptr)
      d.data_bytes = data_bytes;
      d.scale_inv = reinterpret_cast<float*>(scale);  // NOLINT(performance-no-int-to-ptr)
      d.scales = scales;
      if (format != "e4m3fn" && format != "e5m2") throw UserError("fp8 format '" + format + "' is not e4m3fn or e5m2");
      d.format = format == "e4m3fn" ? Fp8Format::kE4M3FN : Fp8Format::kE5M2;
      d.block_rows = rows;
      d.block_cols = cols;
      ds.push_back(std::move(d));
    }
    Fp8PullOptions o;
    o.pull.verify = verify;
    o.staging_bytes = staging_bytes;
    Fp8PullResult r;
    {
      py::gil_scoped_release nogil;
      r = tensorhub::pull_fp8(*hub_, model, to_version(version), ds, o);
    }
    py::dict d;
    d["pull"] = to_dict(r.pull);
    d["batches"] = r.batches;
    d["converted_bytes"] = r.converted_bytes;
    d["convert_seconds"] = r.convert_seconds;
    d["staging_bytes"] = r.staging_bytes;
    return d;
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

  void unpublish(const std::string& model, std::uint64_t version, const std::optional<double>& timeout_s) {
    released([&] {
      if (timeout_s) {
        hub_->unpublish(model, version, to_ms(*timeout_s));
      } else {
        hub_->unpublish(model, version);
      }
    });
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
  py::register_exception<Cancelled>(m, "Cancelled", error.ptr());
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
  py::class_<th::PyPullHandle>(m, "PullHandle")
      .def("ready", &th::PyPullHandle::ready)
      .def("wait", &th::PyPullHandle::wait, py::arg("timeout_s"))
      .def_property_readonly("progress", &th::PyPullHandle::progress)
      .def("result", &th::PyPullHandle::result)
      .def("cancel", &th::PyPullHandle::cancel);
  py::class_<th::PyPublishHandle>(m, "PublishHandle")
      .def("ready", &th::PyPublishHandle::ready)
      .def("wait", &th::PyPublishHandle::wait, py::arg("timeout_s"))
      .def("result", &th::PyPublishHandle::result)
      .def("cancel", &th::PyPublishHandle::cancel);
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
      .def("publish", &th::PyHub::publish, py::arg("model"), py::arg("version"), py::arg("tensors"), py::arg("group"),
           py::arg("boxes") = std::vector<std::optional<th::BoxTuple>>{})
      .def("publish_async", &th::PyHub::publish_async, py::arg("model"), py::arg("version"), py::arg("tensors"),
           py::arg("group"), py::arg("boxes") = std::vector<std::optional<th::BoxTuple>>{})
      .def("pull", &th::PyHub::pull)
      .def("pull_fp8", &th::PyHub::pull_fp8)
      .def("pull_async", &th::PyHub::pull_async)
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
