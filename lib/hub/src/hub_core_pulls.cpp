// HubCore's pulls: reserving destinations, the synchronous pull, and pull_async on hub worker
// threads (locking rule: hub_core.hpp; the transfer phase runs without the API mutex).
#include <utility>

#include "hub_core.hpp"
#include "tensorhub/core/validate.hpp"

namespace tensorhub {

std::uint64_t HubCore::reserve_locked(const char* method, const std::string& model, std::span<const Tensor> into,
                                      const PullOptions& options) {
  check_open(method);
  validate_name("model name", model);
  validate_tensor_names(into);
  if (into.empty()) throw UserError(std::string(method) + ": no destination tensors");
  if (options.deadline && options.deadline->count() <= 0) {
    throw UserError(std::string(method) + ": deadline must be positive");
  }
  group_or_solo(options.group, "reader-w", ctx_.id());  // checks the group before anything is sent
  auto ranges = ranges_of(into);
  check_not_pulling_locked(ranges, method);
  pulling_[++next_pull_] = std::move(ranges);
  return next_pull_;
}

void HubCore::check_not_pulling_locked(const std::vector<ByteRange>& ranges, const std::string& why,
                                       std::uint64_t except) const {
  for (const auto& [id, theirs] : pulling_) {
    if (id == except) continue;
    for (const auto& a : theirs) {
      for (const auto& b : ranges) {
        if (a.overlaps(b)) {
          throw UserError(why +
                          ": buffer overlaps the destination of a pull in flight; wait for it or cancel it first");
        }
      }
    }
  }
}

void HubCore::release_locked(std::uint64_t id) {
  if (pulling_.erase(id) > 0) pulls_done_.notify_all();
}

PullResult HubCore::run_pull(std::uint64_t id, const std::string& model, const Version& version,
                             std::span<const Tensor> into, const PullOptions& options,
                             const std::atomic<bool>* cancel) {
  const auto ranges = ranges_of(into);
  TraceScope span(trace_.get(), "Hub::pull", "hub", {{"model", model}});
  auto job = registered("pull", [&] {
    // We are about to overwrite these buffers: stop serving whatever we relayed from them.
    stop_relaying_locked(ranges, "pull");
    return puller_.prepare(model, version, into, options);
  });
  std::exception_ptr error;
  try {
    const auto lane = transport_->lane();
    puller_.transfer(*job, *lane, cancel);
  } catch (...) {
    error = std::current_exception();
  }
  std::lock_guard lock(api_mu_);
  release_locked(id);
  try {
    return puller_.finish(*job, error);
  } catch (const Cancelled&) {
    // The caller may reuse the buffers at once: nobody may read them as this rank's relay.
    try {
      stop_relaying_locked(ranges, "cancel");
    } catch (const std::exception& e) {
      ctx_.log.warn(std::string("withdrawing a cancelled pull's relay failed: ") + e.what());
    }
    throw;
  }
}

PullResult HubCore::pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                         const PullOptions& options) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(api_mu_);
    id = reserve_locked("pull", model, into, options);
  }
  try {
    return run_pull(id, model, version, into, options, nullptr);
  } catch (...) {
    std::lock_guard lock(api_mu_);
    release_locked(id);
    throw;
  }
}

PullHandle HubCore::pull_async(const std::string& model, const Version& version, std::span<const Tensor> into,
                               const PullOptions& options) {
  auto state = std::make_shared<PullHandle::State>();
  PullOptions o = options;
  o.progress = [state, user = options.progress](std::uint64_t done, std::uint64_t total) {
    state->total = total;
    state->done = done;
    if (user) user(done, total);
  };
  std::uint64_t id = 0;
  {
    std::lock_guard lock(api_mu_);
    id = reserve_locked("pull_async", model, into, options);
  }
  std::vector<Tensor> dests(into.begin(), into.end());
  try {
    async_.start(state, [this, state, id, model, version, dests = std::move(dests), o = std::move(o)] {
      std::optional<PullResult> result;
      std::exception_ptr error;
      try {
        result = run_pull(id, model, version, dests, o, &state->cancel);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(api_mu_);
        release_locked(id);
      }
      state->finish(std::move(result), error);
    });
  } catch (...) {
    std::lock_guard lock(api_mu_);
    release_locked(id);
    throw;
  }
  return PullHandle(state);
}

}  // namespace tensorhub
