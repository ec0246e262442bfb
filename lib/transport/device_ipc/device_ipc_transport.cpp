#include "device_ipc/device_ipc_transport.hpp"

#include <unistd.h>

#include <sstream>
#include <utility>

#include "cma/generation_table.hpp"
#include "cma/identity.hpp"
#include "device_ipc/codec.hpp"
#include "device_ipc/reads.hpp"
#include "src/host_only.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

class DeviceIpcExposure final : public Exposure {
 public:
  DeviceIpcExposure(std::shared_ptr<cma::GenerationTable> table, std::uint32_t slot,
                    std::vector<std::string> descriptors)
      : table_(std::move(table)), slot_(slot), descriptors_(std::move(descriptors)) {}
  ~DeviceIpcExposure() override { table_->release(slot_); }  // readers see the withdrawal from here on
  DeviceIpcExposure(const DeviceIpcExposure&) = delete;
  DeviceIpcExposure& operator=(const DeviceIpcExposure&) = delete;
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  std::shared_ptr<cma::GenerationTable> table_;
  std::uint32_t slot_;
  std::vector<std::string> descriptors_;
};

std::uint64_t address_of(const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); }

std::string where(const void* p, std::uint64_t bytes) {
  std::ostringstream s;
  s << bytes << " bytes at " << p;
  return s.str();
}

// Is [p, p + bytes) inside one device allocation of `info`?
bool inside(const device::PointerInfo& info, const void* p, std::uint64_t bytes) {
  if (!info.is_device) return false;
  const auto begin = address_of(info.base), at = address_of(p);
  return at >= begin && bytes <= info.size && at - begin <= info.size - bytes;
}

}  // namespace

DeviceIpcOptions DeviceIpcOptions::from_env() {
  DeviceIpcOptions o;
  if (const auto b = env::bytes("TENSORHUB_DEVICE_IPC_CHUNK", 4096, 1ull << 40)) o.chunk = *b;
  if (const auto n = env::integer("TENSORHUB_DEVICE_IPC_STREAMS", 1, 64)) o.streams = static_cast<std::uint32_t>(*n);
  return o;
}

DeviceIpcTransport::DeviceIpcTransport(device::Device& device, DeviceIpcOptions options)
    : device_(device), options_(std::move(options)) {
  if (options_.chunk == 0 || options_.streams == 0) throw UserError("device_ipc: need a chunk size and a stream");
  device_ipc::EndpointText self;
  self.backend = device_.kind();
  self.holder.host = cma::local_host();
  self.holder.pid = getpid();
  const auto start = cma::process_start_time(self.holder.pid);
  if (!start) throw TransportError("device_ipc: cannot read this process's start time from /proc/self/stat");
  self.holder.start_time = *start;
  pid_ = self.holder.pid;
  start_time_ = *start;
  table_ = std::make_shared<cma::GenerationTable>(cma::kMaxSlots);
  self.holder.table = table_->address();
  self.holder.slots = table_->slots();
  boot_id_ = self.holder.host.boot_id;
  pid_ns_ = self.holder.host.pid_ns;
  endpoint_ = device_ipc::encode_endpoint(self);
  reads_ = std::make_unique<device_ipc::Reads>(device_, options_.streams, options_.chunk);
}

DeviceIpcTransport::~DeviceIpcTransport() = default;

bool DeviceIpcTransport::reaches(std::string_view endpoint) const {
  if (!device_ipc::looks_like_endpoint(endpoint)) return false;
  try {
    const auto e = device_ipc::decode_endpoint(endpoint);
    return e.backend == device_.kind() && e.holder.host.boot_id == boot_id_ && e.holder.host.pid_ns == pid_ns_;
  } catch (const TransportError&) {
    return false;
  }
}

bool DeviceIpcTransport::can_expose(const MemoryRange& range) const {
  if (range.memory != MemoryKind::kCuda) return false;
  return range.bytes == 0 || inside(device_.query(range.base), range.base, range.bytes);
}

bool DeviceIpcTransport::can_read_into(std::string_view endpoint, std::string_view, MemoryKind dst) const {
  return (dst == MemoryKind::kCuda || dst == MemoryKind::kHost) && reaches(endpoint);
}

std::unique_ptr<Exposure> DeviceIpcTransport::expose(std::span<const MemoryRange> ranges) {
  for (const auto& r : ranges) {
    if (!can_expose(r)) {
      throw UserError("device_ipc: only device memory of " + device_.describe() + " can be exposed, not " +
                      where(r.base, r.bytes) + " of " + std::string(memory_kind_name(r.memory)) + " memory");
    }
  }
  cma::allow_any_reader();  // readers read the generation word with process_vm_readv
  std::vector<device_ipc::DescriptorText> texts;
  texts.reserve(ranges.size());
  for (const auto& r : ranges) {
    device_ipc::DescriptorText d;
    d.address = address_of(r.base);
    d.bytes = r.bytes;
    if (r.bytes > 0) d.ipc = device_.export_ipc(r.base);  // DeviceError when the driver refuses
    texts.push_back(std::move(d));
  }
  const auto entry = table_->acquire();
  std::vector<std::string> descriptors;
  try {
    descriptors.reserve(texts.size());
    for (auto& d : texts) {
      d.slot = entry.slot;
      d.generation = entry.generation;
      descriptors.push_back(device_ipc::encode_descriptor(d));
    }
  } catch (...) {
    table_->release(entry.slot);
    throw;
  }
  return std::make_unique<DeviceIpcExposure>(table_, entry.slot, std::move(descriptors));
}

void DeviceIpcTransport::post(const ReadOp& op) {
  require_contiguous(op, "device_ipc");
  const auto e = device_ipc::decode_endpoint(op.endpoint);
  if (e.holder.host.boot_id != boot_id_ || e.holder.host.pid_ns != pid_ns_) {
    throw TransportError("device_ipc: holder " + cma::label(e.holder) + " is on another host or pid namespace");
  }
  if (e.backend != device_.kind()) {
    throw TransportError("device_ipc: holder " + cma::label(e.holder) + " uses the " +
                         std::string(device::to_string(e.backend)) + " device, this reader " + device_.describe());
  }
  const auto d = device_ipc::decode_descriptor(op.descriptor);
  if (d.slot >= e.holder.slots) throw TransportError("device_ipc: descriptor slot outside the holder's table");
  if (op.offset > d.bytes || op.length > d.bytes - op.offset) {
    throw TransportError("device_ipc: read of " + std::to_string(op.length) + " bytes at " + std::to_string(op.offset) +
                         " past the end of a " + std::to_string(d.bytes) + "-byte region");
  }
  if (d.ipc && d.ipc->backend != device_.kind()) throw TransportError("device_ipc: an IPC handle of another backend");
  if (op.length > 0) {
    if (op.dst == nullptr) throw TransportError("device_ipc: read into a null destination");
    const auto info = device_.query(op.dst);
    if (op.dst_memory == MemoryKind::kCuda && !inside(info, op.dst, op.length)) {
      throw TransportError("device_ipc: destination " + where(op.dst, op.length) + " is not device memory of " +
                           device_.describe());
    }
    if (op.dst_memory == MemoryKind::kHost && info.is_device) {
      throw TransportError("device_ipc: destination " + where(op.dst, op.length) +
                           " is device memory, but the read says host memory");
    }
  }
  // This process is the holder and the range is memory of this very device: no IPC (CUDA cannot
  // open a process's own handle); another device of this process (tests) imports as usual.
  const bool self = e.holder.pid == pid_ && e.holder.start_time == start_time_ && d.bytes > 0 &&
                    inside(device_.query(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(d.address))),
                           reinterpret_cast<const void*>(static_cast<std::uintptr_t>(d.address)), d.bytes);
  reads_->post(op.endpoint, e, d, op, self);
}

void DeviceIpcTransport::poll(std::vector<Completion>& out) { reads_->poll(out); }

std::size_t DeviceIpcTransport::in_flight() const { return reads_->in_flight(); }

std::size_t DeviceIpcTransport::cached_imports() const { return reads_->cached_imports(); }

}  // namespace tensorhub::transport
