#include "multi/multi_transport.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <sstream>
#include <utility>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::transport {
namespace multi {

// One range exposed on every path that could: what its descriptor names stays registered while
// any Exposure of the range lives.
struct SharedRegion {
  std::vector<std::shared_ptr<Exposure>> holds;
  std::string descriptor;
};

}  // namespace multi

namespace {

constexpr std::size_t kMaxCachedPeers = 4096;

class MultiExposure final : public Exposure {
 public:
  explicit MultiExposure(std::vector<std::shared_ptr<multi::SharedRegion>> regions) : regions_(std::move(regions)) {
    for (const auto& r : regions_) descriptors_.push_back(r->descriptor);
  }
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  std::vector<std::shared_ptr<multi::SharedRegion>> regions_;
  std::vector<std::string> descriptors_;
};

std::string describe(const MemoryRange& r) {
  std::ostringstream s;
  s << r.bytes << " bytes of " << memory_kind_name(r.memory) << " memory at " << r.base;
  return s.str();
}

}  // namespace

MultiTransport::MultiTransport(std::vector<std::unique_ptr<Transport>> paths) : paths_(std::move(paths)) {
  if (paths_.empty() || paths_.size() > multi::kMaxPaths) {
    throw UserError("a transport needs 1 to " + std::to_string(multi::kMaxPaths) + " data paths");
  }
  multi::PathList list;
  for (const auto& p : paths_) {
    if (!p) throw UserError("multi transport: a null data path");
    list.push_back(multi::PathEntry{std::string(p->name()), p->endpoint()});
    name_ += (name_.empty() ? "" : "+") + std::string(p->name());
  }
  try {
    endpoint_ = multi::encode_path_list(list, limits::kMaxEndpointBytes);
  } catch (const TransportError& e) {
    throw UserError(std::string("transport paths: ") + e.what());
  }
}

MultiTransport::~MultiTransport() = default;

std::string MultiTransport::names() const {
  std::string out;
  for (const auto& p : paths_) out += (out.empty() ? "" : ", ") + std::string(p->name());
  return out;
}

const MultiTransport::Routes& MultiTransport::routes_to(const std::string& endpoint) const {
  if (const auto it = routes_.find(endpoint); it != routes_.end()) return it->second;
  Routes r;
  if (multi::is_path_list(endpoint)) {
    const auto list = multi::decode_path_list(endpoint, limits::kMaxEndpointBytes, "endpoint");
    r.offered = multi::path_names(list);
    for (std::size_t i = 0; i < paths_.size(); ++i) {
      for (const auto& e : list) {
        if (e.name == paths_[i]->name() && paths_[i]->reaches(e.value)) r.usable.push_back(Route{i, e.value});
      }
    }
  } else {
    // A single backend's endpoint (a peer that is not a multi transport).
    r.offered = std::string(endpoint.substr(0, endpoint.find(':')));
    for (std::size_t i = 0; i < paths_.size(); ++i) {
      if (paths_[i]->reaches(endpoint)) r.usable.push_back(Route{i, endpoint});
    }
  }
  if (routes_.size() >= kMaxCachedPeers) routes_.clear();
  return routes_.emplace(endpoint, std::move(r)).first->second;
}

bool MultiTransport::reaches(std::string_view endpoint) const {
  try {
    return !routes_to(std::string(endpoint)).usable.empty();
  } catch (const TransportError&) {
    return false;
  }
}

bool MultiTransport::can_expose(const MemoryRange& range) const {
  return std::any_of(paths_.begin(), paths_.end(), [&](const auto& p) { return p->can_expose(range); });
}

std::unique_ptr<Exposure> MultiTransport::expose(std::span<const MemoryRange> ranges) {
  const std::lock_guard lock(exposed_mu_);
  std::erase_if(exposed_, [](const auto& kv) { return kv.second.expired(); });
  const auto key = [](const MemoryRange& r) {
    return std::make_tuple(reinterpret_cast<std::uintptr_t>(r.base), r.bytes, static_cast<int>(r.memory));
  };
  std::vector<std::shared_ptr<multi::SharedRegion>> out(ranges.size());
  std::vector<std::size_t> fresh;  // indices of ranges exposed by this call
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (const auto it = exposed_.find(key(ranges[i])); it != exposed_.end()) out[i] = it->second.lock();
    if (out[i]) continue;
    if (!can_expose(ranges[i])) {
      throw UserError("no data path of this process (" + names() + ") can expose " + describe(ranges[i]) +
                      (name_.find("mpi_rma") != std::string::npos
                           ? " (mpi_rma exposes only memory from Hub::allocate; add a path that takes any memory, "
                             "e.g. ucx)"
                           : ""));
    }
    fresh.push_back(i);
  }
  std::vector<multi::PathList> pieces(ranges.size());
  std::vector<std::vector<std::shared_ptr<Exposure>>> holds(ranges.size());
  for (const auto& p : paths_) {
    std::vector<std::size_t> mine;
    std::vector<MemoryRange> subset;
    for (const auto i : fresh) {
      if (p->can_expose(ranges[i])) {
        mine.push_back(i);
        subset.push_back(ranges[i]);
      }
    }
    if (subset.empty()) continue;
    std::shared_ptr<Exposure> e = p->expose(subset);
    require(e->descriptors().size() == subset.size(), "a data path returned one descriptor per range");
    for (std::size_t k = 0; k < mine.size(); ++k) {
      pieces[mine[k]].push_back(multi::PathEntry{std::string(p->name()), e->descriptors()[k]});
      holds[mine[k]].push_back(e);
    }
  }
  for (const auto i : fresh) {
    auto region = std::make_shared<multi::SharedRegion>();
    region->holds = std::move(holds[i]);
    region->descriptor = multi::encode_path_list(pieces[i], limits::kMaxRegionDescriptorBytes);
    exposed_[key(ranges[i])] = region;
    out[i] = std::move(region);
  }
  return std::make_unique<MultiExposure>(std::move(out));
}

std::optional<MultiTransport::Chosen> MultiTransport::first_path(std::string_view endpoint, std::string_view descriptor,
                                                                 MemoryKind dst) const {
  try {
    const auto& routes = routes_to(std::string(endpoint));
    const bool listed = multi::is_path_list(descriptor);
    const auto regions =
        listed ? multi::decode_path_list(descriptor, limits::kMaxRegionDescriptorBytes, "region descriptor")
               : multi::PathList{};
    for (const auto& route : routes.usable) {
      const auto& path = *paths_[route.path];
      const auto d = region_on(path, listed, descriptor, regions);
      if (d && path.can_read_into(route.endpoint, *d, dst)) return Chosen{&path, route.endpoint, std::string(*d)};
    }
  } catch (const TransportError&) {
  }
  return std::nullopt;
}

bool MultiTransport::can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const {
  return first_path(endpoint, descriptor, dst).has_value();
}

bool MultiTransport::can_scatter(std::string_view endpoint, std::string_view descriptor) const {
  const auto chosen = first_path(endpoint, descriptor, MemoryKind::kHost);
  return chosen && chosen->path->can_scatter(chosen->endpoint, chosen->descriptor);
}

std::optional<std::string_view> MultiTransport::region_on(const Transport& path, bool listed,
                                                          std::string_view descriptor, const multi::PathList& regions) {
  if (!listed) return descriptor;
  const auto it =
      std::find_if(regions.begin(), regions.end(), [&](const multi::PathEntry& e) { return e.name == path.name(); });
  if (it == regions.end()) return std::nullopt;
  return std::string_view(it->value);
}

void MultiTransport::post(const ReadOp& op) {
  // Every exposed region has a descriptor: an empty one is the caller's bug (a source record
  // that lost its regions), never input for a backend to parse and fail the holder on.
  if (op.descriptor.empty()) {
    throw ContractViolation("read of " + std::to_string(op.length) + " bytes posted with an empty region descriptor" +
                            (op.endpoint.empty() ? std::string(" and no endpoint") : std::string()));
  }
  const auto& routes = routes_to(op.endpoint);
  const bool listed = multi::is_path_list(op.descriptor);
  const auto regions =
      listed ? multi::decode_path_list(op.descriptor, limits::kMaxRegionDescriptorBytes, "region descriptor")
             : multi::PathList{};
  std::string errors;
  for (const auto& route : routes.usable) {
    auto& path = *paths_[route.path];
    const auto found = region_on(path, listed, op.descriptor, regions);
    if (!found) continue;
    const std::string_view descriptor = *found;
    if (!path.can_read_into(route.endpoint, descriptor, op.dst_memory)) {
      errors += std::string("; ") + std::string(path.name()) + ": cannot write " +
                std::string(memory_kind_name(op.dst_memory)) + " memory";
      continue;
    }
    ReadOp sub = op;
    sub.endpoint = route.endpoint;
    sub.descriptor = std::string(descriptor);
    try {
      path.post(sub);
      return;
    } catch (const TransportError& e) {
      errors += std::string("; ") + std::string(path.name()) + ": " + e.what();
    }
  }
  throw TransportError("no data path to this holder for the region: the holder offers " + routes.offered +
                       " (this region on " + (listed ? multi::path_names(regions) : routes.offered) +
                       "), this reader has " + names() + ", of which " +
                       (routes.usable.empty() ? std::string("none reaches the holder")
                                              : std::to_string(routes.usable.size()) + " reach it") +
                       " (mpi_rma reaches only its own MPI job)" + errors);
}

void MultiTransport::poll(std::vector<Completion>& out) {
  for (const auto& p : paths_) p->poll(out);
}

std::size_t MultiTransport::in_flight() const {
  std::size_t n = 0;
  for (const auto& p : paths_) n += p->in_flight();
  return n;
}

void* MultiTransport::allocate(std::uint64_t bytes) {
  std::string why;
  for (std::size_t i = 0; i < paths_.size(); ++i) {
    try {
      void* p = paths_[i]->allocate(bytes);
      allocated_[p] = i;
      return p;
    } catch (const UserError& e) {
      why += std::string(why.empty() ? "" : "; ") + e.what();
    }
  }
  throw UserError("no data path could allocate " + std::to_string(bytes) + " bytes: " + why);
}

void MultiTransport::deallocate(void* p) {
  const auto it = allocated_.find(p);
  if (it == allocated_.end()) throw UserError("deallocate of memory this transport did not allocate");
  paths_[it->second]->deallocate(p);
  allocated_.erase(it);
}

void MultiTransport::close() {
  std::exception_ptr first;
  for (const auto& p : paths_) {
    try {
      p->close();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

bool MultiTransport::job_barrier() {
  return std::any_of(paths_.begin(), paths_.end(), [](const auto& p) { return p->job_barrier(); });
}

}  // namespace tensorhub::transport
