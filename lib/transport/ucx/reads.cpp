#include "reads.hpp"

#include <algorithm>
#include <utility>

#include "am_protocol.hpp"
#include "codec.hpp"
#include "lanes.hpp"
#include "status.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::ucx {
namespace {

// Progress calls per poll(): enough to drain a burst of replies, bounded so poll() never blocks.
constexpr int kProgressPerPoll = 16;

// Runs inside ucp_worker_progress (under Core::mutex): only records the status; poll() acts on it.
void on_endpoint_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  if (peer->ep_error == UCS_OK) peer->ep_error = status;
}

}  // namespace

Reads::Reads(Worker& worker, const UcxOptions& options)
    : worker_(worker),
      deadline_(options.deadline),
      mode_(options.read),
      am_(worker, options.am_piece, options.am_window) {}

Reads::~Reads() {
  for (auto& [endpoint, peer] : peers_) {
    if (!peer->dead()) fail_peer(*peer, "transport closed");
  }
  pending_.clear();
}

Peer& Reads::peer_for(const std::string& endpoint) {
  if (const auto it = peers_.find(endpoint); it != peers_.end()) return *it->second;
  const EndpointText text = decode_endpoint(endpoint);
  auto peer = std::make_unique<Peer>(text.label);
  peer->address = text.worker_address;
  peer->ep.emplace(worker_, text.worker_address, peer->name, &on_endpoint_error, peer.get());
  peer->am = mode_ == UcxRead::kAm || (mode_ == UcxRead::kAuto && !rma_in_hardware(peer->ep->get()));
  peer->last_progress = Clock::now();
  return *peers_.emplace(endpoint, std::move(peer)).first->second;
}

const RemoteKey& Reads::rkey_for(Peer& peer, std::string_view packed_text) {
  std::string key(packed_text);
  if (const auto it = peer.rkeys.find(key); it != peer.rkeys.end()) return *it->second;
  const auto packed = decode_rkey(packed_text, peer.address);
  auto rkey = std::make_unique<RemoteKey>(peer.ep->get(), packed, peer.name);
  return *peer.rkeys.emplace(std::move(key), std::move(rkey)).first->second;
}

std::uint64_t Reads::key_hash_for(Peer& peer, std::string_view packed_text) {
  std::string key(packed_text);
  if (const auto it = peer.key_hashes.find(key); it != peer.key_hashes.end()) return it->second;
  const std::uint64_t hash = key_hash(decode_rkey(packed_text, peer.address));  // checks the frame
  return peer.key_hashes.emplace(std::move(key), hash).first->second;
}

void Reads::post(const ReadOp& op) {
  const DescriptorText region = decode_descriptor(op.descriptor);
  if (op.offset > region.bytes || op.length > region.bytes - op.offset) {
    throw TransportError("ucx: read of bytes [" + std::to_string(op.offset) + ", " +
                         std::to_string(op.offset + op.length) + ") past the end of a region of " +
                         std::to_string(region.bytes) + " bytes");
  }
  Peer& peer = peer_for(op.endpoint);
  if (peer.dead()) {
    done_.push_back(Completion{op.tag, false, peer.failure});
    return;
  }
  if (op.length == 0) {
    done_.push_back(Completion{op.tag, true, {}});
    return;
  }
  // Active messages land bytes with memcpy: a device destination is read with a get.
  if (peer.am && op.dst_memory == MemoryKind::kHost) {
    am_.post(peer, op, region.address + op.offset, key_hash_for(peer, region.rkey));
    ++am_posted_;
    return;
  }
  const RemoteKey& rkey = rkey_for(peer, region.rkey);
  ucp_request_param_t params{};
  ++gets_posted_;
  Request request(ucp_get_nbx(peer.ep->get(), op.dst, op.length, region.address + op.offset, rkey.get(), &params));
  const ucs_status_t status = request.status();
  if (status == UCS_INPROGRESS) {
    pending_.push_back(Pending{op.tag, &peer, std::move(request), Clock::now()});
  } else if (status == UCS_OK) {
    done_.push_back(Completion{op.tag, true, {}});
  } else {
    done_.push_back(
        Completion{op.tag, false, "ucx: ucp_get_nbx from peer " + peer.name + " failed: " + describe(status)});
    fail_peer(peer, "failed: ucp_get_nbx returned " + describe(status));
  }
}

void Reads::fail_peer(Peer& peer, const std::string& why) {
  if (peer.dead()) return;
  peer.failure = "ucx: peer " + peer.name + " " + why + "; it is marked dead, its reads fail";
  // Cancels the peer's running gets (UCS_ERR_CANCELED); after this no reply can land in a buffer.
  if (peer.ep) peer.ep->close(Endpoint::kCloseLimit);
  std::erase_if(pending_, [&](Pending& p) {
    if (p.peer != &peer) return false;
    const ucs_status_t s = p.request.status();
    // A read that finished before the close is good; one still running after a forced close (a
    // UCX bug) is abandoned: its request is freed, the endpoint it would reply on is gone.
    done_.push_back(s == UCS_OK ? Completion{p.tag, true, {}} : Completion{p.tag, false, peer.failure});
    return true;
  });
  am_.fail_peer(peer, peer.failure);  // after the close: no reply handler runs for it any more
  peer.ep.reset();
  peer.rkeys.clear();
}

std::vector<std::pair<Peer*, ucs_status_t>> Reads::reap() {
  std::vector<std::pair<Peer*, ucs_status_t>> failed;
  const auto now = Clock::now();
  std::erase_if(pending_, [&](Pending& p) {
    const ucs_status_t s = p.request.status();
    if (s == UCS_INPROGRESS) return false;
    if (s == UCS_OK) {
      p.peer->last_progress = now;
      done_.push_back(Completion{p.tag, true, {}});
    } else {
      done_.push_back(Completion{p.tag, false, "ucx: read from peer " + p.peer->name + " failed: " + describe(s)});
      const auto same = [&](const auto& f) { return f.first == p.peer; };
      if (std::none_of(failed.begin(), failed.end(), same)) failed.emplace_back(p.peer, s);
    }
    return true;
  });
  return failed;
}

std::vector<Peer*> Reads::expired(Clock::time_point now) const {
  std::vector<Peer*> out;
  am_.expired(now, deadline_, out);
  for (const auto& p : pending_) {
    const auto since = std::max(p.posted, p.peer->last_progress);
    if (now - since > deadline_ && std::find(out.begin(), out.end(), p.peer) == out.end()) out.push_back(p.peer);
  }
  return out;
}

void Reads::poll(std::vector<Completion>& out) {
  for (int i = 0; i < kProgressPerPoll && worker_.progress() != 0; ++i) {
  }
  am_.pump();
  for (auto& [endpoint, peer] : peers_) {
    if (peer->ep_error != UCS_OK && !peer->dead()) {
      fail_peer(*peer, "failed: the endpoint reported " + describe(peer->ep_error));
    }
  }
  for (const auto& [peer, status] : reap()) fail_peer(*peer, "failed: a read from it ended with " + describe(status));
  for (Peer* peer : expired(Clock::now())) {
    fail_peer(*peer, "did not complete any read within the " + std::to_string(deadline_.count()) +
                         " ms deadline (hung, stopped or overloaded); its endpoint was force-closed");
  }
  am_.collect(done_);
  for (auto& c : done_) out.push_back(std::move(c));
  done_.clear();
}

}  // namespace tensorhub::transport::ucx
