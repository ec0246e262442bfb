#include "registration.hpp"

#include <string>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

Registration::Registration(HubContext& ctx, coord::WorkerInfo info) : ctx_(ctx), info_(std::move(info)) {
  ctx_.self = ctx_.client.register_worker(info_);
}

Registration::~Registration() { stop_heartbeat(); }

void Registration::start_heartbeat(std::function<bool()> try_rebuild) {
  heartbeat_ = std::make_unique<HeartbeatThread>(
      ctx_.client,
      HeartbeatThread::Hooks{[this] { return ctx_.id(); }, [this] { return pending_restores_.load() > 0; },
                             std::move(try_rebuild)},
      ctx_.log);
}

void Registration::stop_heartbeat() noexcept { heartbeat_.reset(); }

bool Registration::restore(Reference& ref) {
  if (ref.pending) return true;  // its publish job registers it when it commits
  try {
    if (ref.origin) {
      ref.request.worker = ctx_.id();
      ctx_.client.publish(ref.request);
    } else {
      if (ref.held.empty()) return true;  // an unfinished pull: nothing worth serving
      ctx_.client.offer_relay(coord::RelayOffer{ctx_.id(), ref.model, ref.version, ref.relay_regions,
                                                ref.progress ? ref.progress->descriptor() : std::string()});
      ctx_.client.complete(coord::CompleteRequest{ctx_.id(), ref.model, ref.version, {}, ref.held, {}, {}});
    }
    return true;
  } catch (const UnknownWorker&) {
    throw;  // lost again: the caller starts over
  } catch (const NotFoundError&) {
    return false;  // a relay of a version not re-published (yet)
  } catch (const UserError& e) {
    ctx_.log.warn("could not restore " + vname(ref.model, ref.version) + ": " + e.what());
    return true;  // e.g. the coordinator has it already: nothing more to do
  }
}

void Registration::rebuild(ReferenceTable& table, bool force) {
  auto& refs = table.all();
  if (force || lost()) {
    if (heartbeat_) heartbeat_->clear_lost();
    const auto before = ctx_.id();
    ctx_.self = ctx_.client.register_worker(info_);
    for (auto& ref : refs) {
      ref.restored = false;
      ref.restore_attempts = 0;
    }
    ctx_.log.warn("re-registered as worker " + std::to_string(ctx_.id()) + " (was " + std::to_string(before) +
                  "); restoring " + std::to_string(refs.size()) + " reference(s)");
  }
  // Relays of versions whose origins have not re-published yet are retried for a while.
  constexpr std::uint32_t kMaxAttempts = 100;
  std::uint32_t pending = 0;
  for (auto& ref : refs) {
    if (ref.restored) continue;
    ref.restored = restore(ref) || ++ref.restore_attempts >= kMaxAttempts;
    if (!ref.restored) ++pending;
  }
  pending_restores_ = pending;
}

void Registration::deregister() {
  try {
    ctx_.client.deregister_worker(ctx_.id());
  } catch (const NotFoundError&) {
    // the coordinator forgot us already (lease expired or it was replaced): nothing to undo
  } catch (const TransportError& e) {
    ctx_.log.warn(std::string("close: could not deregister: ") + e.what());
  }
}

}  // namespace tensorhub
