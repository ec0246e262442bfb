// HubCore's publishes: publish, publish_async on hub worker threads, and unpublish, which cancels
// a publish still hashing (locking rule: hub_core.hpp; the checksum pass runs without the API
// mutex).
#include <utility>

#include "hub_core.hpp"
#include "tensorhub/core/validate.hpp"

namespace tensorhub {

std::pair<std::shared_ptr<PublishHandle::State>, std::shared_ptr<PublishJob>> HubCore::start_publish(
    const char* method, const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
    const std::optional<Group>& group) {
  return registered(method, [&] {
    validate_name("model name", model);
    validate_tensor_names(tensors);
    group_or_solo(group, "publisher-w", ctx_.id());  // checks the group before anything is sent
    check_not_pulling_locked(ranges_of(tensors), method);
    stop_relaying_locked(ranges_of(tensors), method, true);  // a reader republishing what it pulled
    TraceScope span(trace_.get(), "Hub::publish", "hub",
                    {{"model", model}, {"version", static_cast<std::int64_t>(version)}});
    auto job = std::make_shared<PublishJob>(publisher_.prepare(model, version, tensors, group));
    auto state = std::make_shared<PublishHandle::State>();
    publishing_[{model, version}] = state;
    return std::pair{state, job};
  });
}

void HubCore::run_publish(PublishHandle::State& state, PublishJob& job) noexcept {
  const auto name = vname(job.model, job.version);
  std::exception_ptr error;
  try {
    TraceScope span(trace_.get(), "publish checksums", "hub",
                    {{"model", job.model}, {"version", static_cast<std::int64_t>(job.version)}});
    if (!publisher_.hash(job, &state.cancel)) {
      error = std::make_exception_ptr(Cancelled(name + ": publish cancelled before it reached the coordinator"));
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (!error) {
    try {
      registered("publish", [&] {
        if (state.cancel.load()) throw Cancelled(name + ": publish cancelled before it reached the coordinator");
        publisher_.commit(job);
      });
    } catch (...) {
      error = std::current_exception();
    }
  }
  {
    std::lock_guard lock(api_mu_);
    if (error) publisher_.abort(job);
    publishing_.erase({job.model, job.version});
  }
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const Cancelled& e) {
      ctx_.log.info(e.what());
    } catch (const std::exception& e) {
      ctx_.log.error("publish of " + name + " failed: " + e.what());
    } catch (...) {
      ctx_.log.error("publish of " + name + " failed");
    }
    state.finish(std::nullopt, error);
  } else {
    state.finish(job.result, nullptr);
  }
}

PublishResult HubCore::publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                               const std::optional<Group>& group) {
  auto [state, job] = start_publish("publish", model, version, tensors, group);
  run_publish(*state, *job);  // on this thread
  return state->result();
}

PublishHandle HubCore::publish_async(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                                     const std::optional<Group>& group) {
  auto [state, job] = start_publish("publish_async", model, version, tensors, group);
  publishes_.start(state, [this, state = state, job = job] { run_publish(*state, *job); });
  return PublishHandle(state);
}

void HubCore::unpublish(const std::string& model, std::uint64_t version,
                        std::optional<std::chrono::milliseconds> timeout) {
  if (timeout && timeout->count() < 0) throw UserError("unpublish: timeout must not be negative");
  std::optional<std::chrono::steady_clock::time_point> until;
  if (timeout) until = std::chrono::steady_clock::now() + *timeout;
  std::shared_ptr<PublishHandle::State> pending;
  {
    std::lock_guard lock(api_mu_);
    check_open("unpublish");
    validate_name("model name", model);
    if (const auto it = publishing_.find({model, version}); it != publishing_.end()) pending = it->second;
  }
  if (pending) {
    pending->cancel = true;
    if (pending->error()) return;  // (waits for it) cancelled or failed: nothing was registered
  }
  registered("unpublish", [&] {
    if (!table_.has_origin(model, version)) {
      throw NotFoundError(vname(model, version) + " is not published by this rank");
    }
    TraceScope span(trace_.get(), "Hub::unpublish", "hub",
                    {{"model", model}, {"version", static_cast<std::int64_t>(version)}});
    Withdrawal w{model, version, true, {}};
    for (const auto& r : table_.all()) {
      if (r.origin && r.model == model && r.version == version) w.tensors = r.tensors;
    }
    offloader_.withdraw_or_offload(w, until);
    table_.remove(model, version, true);  // detaches the memory
  });
}

}  // namespace tensorhub
