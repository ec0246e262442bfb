#include "hub_core.hpp"

#include <unistd.h>

#include <utility>

#include "tensorhub/core/log.hpp"
#include "tensorhub/core/validate.hpp"
#include "tensorhub/topo/labels.hpp"

namespace tensorhub {
namespace {

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

coord::WorkerInfo worker_info(const transport::Transport& t, int rank) {
  coord::WorkerInfo info;
  info.endpoint = t.endpoint();
  info.transport = std::string(t.name());
  // dc/rack from TENSORHUB_DC / TENSORHUB_RACK or the TENSORHUB_TOPOLOGY file, numa from the
  // CPU binding, gpu from TENSORHUB_GPU (share/doc/topology.md).
  const auto labels = topo::local_labels();
  info.host = labels.host.empty() ? local_hostname() : labels.host;
  info.rack = labels.rack;
  info.dc = labels.dc;
  info.numa = labels.numa;
  info.gpu = labels.gpu;
  info.rank = rank;
  return info;
}

ModelInfo to_public(const coord::ModelStatus& m) {
  ModelInfo mi{m.model, {}};
  for (const auto& v : m.versions) {
    VersionInfo vi;
    vi.version = v.version;
    vi.committed = v.committed;
    vi.readable = v.readable;
    vi.retained = v.retained;
    vi.holders = v.holders;
    vi.origin_holders = v.origin_holders;
    vi.pins = v.pins;
    vi.bytes = v.bytes;
    vi.snapshot = v.snapshot;
    vi.tensors = v.tensors;
    for (const auto& g : v.global_tensors) {
      vi.global_tensors.push_back(GlobalTensorInfo{g.tensor.name, g.tensor.dtype, g.tensor.shape, g.boxes});
    }
    for (const auto& h : v.holder_list) {
      vi.holder_list.push_back(
          HolderInfo{h.worker, h.host, h.rank, h.origin, h.withdrawn, h.pins, h.chunks_held, h.chunks_total});
    }
    mi.versions.push_back(std::move(vi));
  }
  return mi;
}

}  // namespace

HubCore::HubCore(coord::Client& client, std::unique_ptr<transport::Transport> transport, int rank, HubOptions options,
                 std::shared_ptr<device::Device> device)
    : device_(std::move(device), options.device),
      trace_(options.trace_path.empty() ? nullptr
                                        : std::make_unique<TraceRecorder>(rank, "rank " + std::to_string(rank))),
      traced_client_(trace_ ? std::make_unique<TracingClient>(client, *trace_) : nullptr),
      transport_(std::make_unique<SharedTransport>(std::move(transport))),
      ctx_{traced_client_ ? *traced_client_ : client, *transport_, std::move(options), rank,
           Logger("hub r" + std::to_string(rank))},
      table_(ctx_),
      puller_(ctx_, table_, [this](const Withdrawal& w) { offloader_.withdraw_or_offload(w); }),
      publisher_(ctx_, table_),
      offloader_(ctx_, table_, puller_) {
  ctx_.trace = trace_.get();
  ctx_.device = &device_;
  registration_ = std::make_unique<Registration>(ctx_, worker_info(*transport_, rank));
  ctx_.log.info("joined the hub as worker " + std::to_string(ctx_.id()));
  registration_->start_heartbeat([this] { return try_rebuild(); });
}

HubCore::~HubCore() { abandon(); }

void HubCore::check_open(const char* method) const {
  if (closed_.load()) throw HubClosed(std::string("hub is closed: ") + method + " called after Hub::close()");
}

bool HubCore::try_rebuild() {
  std::unique_lock lock(api_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  if (!closed_.load()) registration_->rebuild(table_);
  return true;
}

void HubCore::stop_relaying_locked(const std::vector<ByteRange>& ranges, const std::string& why, bool publishing) {
  for (const auto& w : table_.relays_overlapping(ranges, why, publishing)) {
    try {
      offloader_.withdraw_or_offload(w);  // offloads a retained version we are the last holder of
    } catch (const NotFoundError&) {
      // the coordinator already forgot it
    }
    table_.remove(w.model, w.version, false);
  }
}

void HubCore::retain(const std::string& model, std::uint64_t version) {
  check_open("retain");
  validate_name("model name", model);
  ctx_.client.retain(model, version);
}

void HubCore::release(const std::string& model, std::uint64_t version) {
  check_open("release");
  validate_name("model name", model);
  ctx_.client.release(model, version);
}

void HubCore::attach_snapshot(const std::string& path) {
  registered("attach_snapshot", [&] { offloader_.attach_snapshot(path); });
}

std::optional<std::uint64_t> HubCore::latest(const std::string& model) {
  check_open("latest");
  validate_name("model name", model);
  return ctx_.client.latest(model);
}

std::optional<std::uint64_t> HubCore::wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                               std::chrono::milliseconds timeout) {
  check_open("wait_for");
  validate_name("model name", model);
  return ctx_.client.wait_for(model, newer_than, timeout);
}

Manifest HubCore::manifest(const std::string& model, const Version& version) {
  return registered("manifest", [&] {
    validate_name("model name", model);
    return puller_.manifest(model, version);
  });
}

std::vector<ModelInfo> HubCore::status() {
  check_open("status");
  std::vector<ModelInfo> out;
  for (const auto& m : ctx_.client.status()) out.push_back(to_public(m));
  return out;
}

void* HubCore::allocate(std::uint64_t bytes) {
  std::lock_guard lock(api_mu_);
  check_open("allocate");
  void* p = transport_->allocate(bytes);
  allocations_[p] = bytes;
  return p;
}

void* HubCore::allocate_device(std::uint64_t bytes) {
  std::lock_guard lock(api_mu_);
  check_open("allocate_device");
  return device_.allocate(bytes);
}

void HubCore::copy_memory(void* dst, MemoryKind dst_memory, const void* src, MemoryKind src_memory,
                          std::uint64_t bytes) {
  check_open("copy_memory");
  device_.copy(dst, dst_memory, src, src_memory, bytes);
}

std::string HubCore::device_name() {
  check_open("device_name");
  return device_.describe();
}

void HubCore::deallocate(void* p) {
  registered("deallocate", [&] {
    const auto it = allocations_.find(p);
    const auto device_bytes = device_.allocation_size(p);
    if (it != allocations_.end() || device_bytes) {
      // Whoever reads a relay of this memory would get what the next owner writes into it.
      const auto b = reinterpret_cast<std::uintptr_t>(p);
      const auto n = it != allocations_.end() ? it->second : *device_bytes;
      check_not_pulling_locked({ByteRange{b, b + n}}, "deallocate");
      stop_relaying_locked({ByteRange{b, b + n}}, "deallocate");
    }
    if (device_bytes) {
      device_.free(p);
      return;
    }
    transport_->deallocate(p);  // throws for memory not allocated here
    if (it != allocations_.end()) allocations_.erase(it);
  });
}

void HubCore::stop_relaying(std::span<const Tensor> tensors) {
  registered("stop_relaying", [&] {
    check_not_pulling_locked(ranges_of(tensors), "stop_relaying");
    stop_relaying_locked(ranges_of(tensors), "stop_relaying");
  });
}

void HubCore::close() {
  auto error = leave();
  release_transport();
  if (error) std::rethrow_exception(error);
}

std::exception_ptr HubCore::leave() {
  {
    std::lock_guard lock(api_mu_);
    if (closed_.exchange(true)) return nullptr;  // from now on the heartbeat thread rebuilds nothing
  }
  async_.cancel_all();  // their last phase takes api_mu_: not held here
  publishes_.cancel_all();
  {
    std::unique_lock lock(api_mu_);
    pulls_done_.wait(lock, [&] { return pulling_.empty(); });  // pull() on other threads
  }
  registration_->stop_heartbeat();  // no rebuild may race the teardown
  std::lock_guard lock(api_mu_);
  std::exception_ptr first;     // reported once everything is torn down
  std::vector<Reference> kept;  // still referenced at the coordinator until we deregister
  while (!table_.empty()) {
    const auto w = table_.newest();
    try {
      offloader_.withdraw_or_offload(w);
    } catch (const NotFoundError&) {
      // already gone at the coordinator (e.g. the version was dropped)
    } catch (const std::exception& e) {
      // OffloadRequired without a snapshot dir, an unreachable coordinator...: leaving anyway
      // (the other ranks wait for us); the version loses this holder when we deregister.
      ctx_.log.error(std::string("close: ") + e.what());
      if (!first) first = std::current_exception();
      for (auto& r : table_.take(w.model, w.version, w.origin)) kept.push_back(std::move(r));
      continue;
    }
    table_.remove(w.model, w.version, w.origin);
  }
  registration_->deregister();
  kept.clear();
  allocations_.clear();
  return first;
}

void HubCore::release_transport() {
  std::lock_guard lock(api_mu_);
  closed_ = true;
  if (!transport_) return;
  table_.all().clear();  // exposures end before their transport
  transport_->close();
  transport_.reset();
  write_trace();
}

void HubCore::write_trace() noexcept {
  if (!trace_ || ctx_.options.trace_path.empty()) return;
  try {
    trace_->write(ctx_.options.trace_path);
    ctx_.log.info("wrote the trace " + ctx_.options.trace_path + " (" + std::to_string(trace_->events()) + " events)");
    if (trace_->dropped() > 0) {
      ctx_.log.warn("trace " + ctx_.options.trace_path + ": " + std::to_string(trace_->dropped()) +
                    " events dropped (more than " + std::to_string(TraceRecorder::kDefaultMaxEvents) + ")");
    }
  } catch (const std::exception& e) {
    ctx_.log.error(e.what());
  }
  ctx_.options.trace_path.clear();  // once
}

void HubCore::abandon() noexcept {
  {
    std::lock_guard lock(api_mu_);
    closed_ = true;
  }
  async_.cancel_all();
  publishes_.cancel_all();
  if (registration_) registration_->stop_heartbeat();
  std::lock_guard lock(api_mu_);
  table_.all().clear();
  write_trace();  // what led to the failure is worth seeing
}

transport::Transport& HubCore::transport() {
  require(transport_ != nullptr, "HubCore::transport after release_transport");
  return *transport_;
}

}  // namespace tensorhub
