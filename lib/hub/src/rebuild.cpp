// Hub::Impl: re-registering after the coordinator lost this worker (its lease expired while the
// process was stopped or cut off, or a standby took over from a dead primary). The coordinator's
// state is soft: this worker registers again and re-creates every reference it still serves
// (origins re-publish their shard, so versions re-commit once every shard is back; relays
// re-offer what they hold once the version exists again).
#include <string>

#include "hub_impl.hpp"

namespace tensorhub {

bool Hub::Impl::restore_pending() const { return pending_restores_.load() > 0; }

bool Hub::Impl::restore(Reference& ref) {
  try {
    if (ref.origin) {
      ref.request.worker = self_;
      client_->publish(ref.request);
    } else {
      if (ref.held.empty()) return true;  // an unfinished pull: nothing worth serving
      client_->offer_relay(coord::RelayOffer{self_, ref.model, ref.version, ref.relay_regions});
      client_->complete(coord::CompleteRequest{self_, ref.model, ref.version, {}, ref.held});
    }
    return true;
  } catch (const UnknownWorker&) {
    throw;  // lost again: the caller starts over
  } catch (const NotFoundError&) {
    return false;  // a relay of a version not re-published (yet)
  } catch (const UserError& e) {
    log_.warn("could not restore '" + ref.model + "' v" + std::to_string(ref.version) + ": " + e.what());
    return true;  // e.g. the coordinator has it already: nothing more to do
  }
}

void Hub::Impl::rebuild_locked(bool force) {
  if (closed_) return;
  if (force || (heartbeat_ && heartbeat_->lost())) {
    if (heartbeat_) heartbeat_->clear_lost();
    const auto before = self_.load();
    self_ = client_->register_worker(info_);
    for (auto& ref : references_) {
      ref.restored = false;
      ref.restore_attempts = 0;
    }
    log_.warn("re-registered at " + address_ + " as worker " + std::to_string(self_.load()) + " (was " +
              std::to_string(before) + "); restoring " + std::to_string(references_.size()) + " reference(s)");
  }
  // Relays of versions whose origins have not re-published yet are retried for a while.
  constexpr std::uint32_t kMaxAttempts = 100;
  std::uint32_t pending = 0;
  for (auto& ref : references_) {
    if (ref.restored) continue;
    ref.restored = restore(ref) || ++ref.restore_attempts >= kMaxAttempts;
    if (!ref.restored) ++pending;
  }
  pending_restores_ = pending;
}

bool Hub::Impl::try_rebuild() {
  std::unique_lock lock(api_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  rebuild_locked();
  return true;
}

}  // namespace tensorhub
