// The reader side of UcxTransport: one-sided gets from peers, their completions, and failure
// handling. Every member function must be called with Core::mutex held (the progress thread
// drives the same worker); UCX calls back (endpoint errors) only from inside those calls.
// Gets carry no completion callback: each pending read owns its request (Request) and poll()
// checks ucp_request_check_status, so no callback ever touches the read table. Reads of a peer
// served by active messages (Peer::am) go through AmReads instead, with the same deadline and
// failure handling.
//
// Failure handling (share/doc/transport-ucx.md):
//  * endpoint error callback, or a get that ends in error: the peer is dead;
//  * deadline: a read pending for longer than `deadline` while no read from that peer completed
//    either (so a slow but live peer is not cut off) marks the peer dead too — the only way to
//    notice a hung (e.g. SIGSTOPped) peer, which UCX never reports;
//  * a dead peer's endpoint is force-closed (its running gets end with UCS_ERR_CANCELED, so no
//    byte lands in a buffer after its read was reported), its reads complete with ok=false and a
//    message naming the peer and the cause, and later reads of it fail at once, without exception.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "am_reads.hpp"
#include "peer.hpp"
#include "request.hpp"
#include "tensorhub/transport/transport.hpp"
#include "ucx/ucx_transport.hpp"
#include "worker.hpp"

namespace tensorhub::transport::ucx {

class Reads {
 public:
  Reads(Worker& worker, const UcxOptions& options);
  ~Reads();  // force-closes every endpoint
  Reads(const Reads&) = delete;
  Reads& operator=(const Reads&) = delete;

  // Throws TransportError for a malformed endpoint or descriptor, a read past the end of the
  // region, or an endpoint UCX cannot create; failures of the peer itself end as completions.
  void post(const ReadOp& op);
  // Progresses the worker, applies the deadline, appends finished reads.
  void poll(std::vector<Completion>& out);
  std::uint64_t gets_posted() const { return gets_posted_; }
  std::uint64_t am_posted() const { return am_posted_; }
  std::size_t in_flight() const { return pending_.size() + done_.size() + am_.in_flight(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    std::uint64_t tag = 0;
    Peer* peer = nullptr;
    Request request;
    Clock::time_point posted;
  };

  Peer& peer_for(const std::string& endpoint);
  const RemoteKey& rkey_for(Peer& peer, std::string_view packed_text);
  std::uint64_t key_hash_for(Peer& peer, std::string_view packed_text);
  // Marks `peer` dead with `why`, force-closes its endpoint and completes its pending reads.
  void fail_peer(Peer& peer, const std::string& why);
  // Completes reads whose request ended; returns the peers whose reads ended in error.
  std::vector<std::pair<Peer*, ucs_status_t>> reap();
  std::vector<Peer*> expired(Clock::time_point now) const;

  Worker& worker_;
  std::chrono::milliseconds deadline_;
  UcxRead mode_;
  AmReads am_;
  std::unordered_map<std::string, std::unique_ptr<Peer>> peers_;  // by endpoint text
  std::vector<Pending> pending_;
  std::vector<Completion> done_;
  std::uint64_t gets_posted_ = 0;
  std::uint64_t am_posted_ = 0;
};

}  // namespace tensorhub::transport::ucx
