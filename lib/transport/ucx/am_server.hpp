// The holder side of active-message reads: answers a reader's read request with one reply whose
// payload UCX packs from the registered memory as it sends it, from whichever thread
// progresses the worker (the progress thread, or the owner inside post/poll). Every member
// function, and the handlers UCX calls, run with Core::mutex held.
//
// Why: over transports without RDMA (TCP), UCX 1.13 emulates ucp_get_nbx with its own messages;
// when its reply meets a reader that was just killed, ucp_request_try_send ends in ucs_fatal and
// the holder process aborts (src/ucp/core/ucp_request.inl, from ucp_get_req_handler in
// src/ucp/rma/rma_sw.c). A reply sent with ucp_am_send_nbx carries a completion callback: an
// error on the dead reader's endpoint completes that one send with the error instead
// (src/ucp/proto/proto_am.inl, ucp_am_bcopy_handle_status_from_pending). See
// share/doc/transport-ucx.md.
//
// Host memory is sent packed by copy, never zero-copy (am_server.cpp, kCopyOps: a UCX 1.13 TCP bug).
//
// Bounded: at most kMaxReplies replies in flight (their headers are all this holds; UCX packs a
// reply fragment by fragment as the socket takes it, so a reader that stops reading pins no copy;
// requests past it are dropped, and their readers' deadline reports it), and at most
// kMaxRepliesPerReader per reader endpoint (past it, a request is refused: a reader of this
// transport never asks for more, see am_reads.hpp).
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "am_protocol.hpp"
#include "worker.hpp"

namespace tensorhub::transport::ucx {

class AmServer {
 public:
  static constexpr std::size_t kMaxReplies = 16384;
  static constexpr std::size_t kMaxRepliesPerReader = 256;

  // Installs the request handler on `worker` (which must outlive this).
  explicit AmServer(Worker& worker);
  ~AmServer();  // uninstalls the handler; replies still in flight are abandoned
  AmServer(const AmServer&) = delete;
  AmServer& operator=(const AmServer&) = delete;

  // Makes [begin, begin + bytes) readable by requests that carry `hash` (key_hash of the packed
  // remote key handed out for it). Returns its id for remove().
  std::uint64_t add(std::uint64_t begin, std::uint64_t bytes, std::uint64_t hash, ucs_memory_type_t type);
  // Stops serving the regions, then progresses the worker until no reply sent from them is in
  // flight, for at most `limit` (a stopped reader never takes its replies). Returns how many
  // replies were still in flight after the limit (then abandoned: their sends may still read the
  // memory, which the caller must keep mapped until it is sure the reader is gone).
  std::size_t remove(const std::vector<std::uint64_t>& ids, std::chrono::milliseconds limit);

  struct Stats {
    std::uint64_t served = 0;   // replies with data sent
    std::uint64_t refused = 0;  // requests answered with an error status
    std::uint64_t dropped = 0;  // requests not answered (malformed, no reply endpoint, full)
    std::size_t in_flight = 0;
  };
  Stats stats() const;

 private:
  struct Region {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t hash = 0;
    ucs_memory_type_t type = UCS_MEMORY_TYPE_HOST;
    std::size_t in_flight = 0;  // replies sent from it, not yet completed
    bool removed = false;
  };
  struct Reply;  // one reply in flight: its header and what to release when it ends

  static ucs_status_t on_request(void* arg, const void* header, std::size_t header_length, void* data,
                                 std::size_t length, const ucp_am_recv_param_t* param);
  static void on_sent(void* request, ucs_status_t status, void* user_data);
  void handle(const AmRequest& request, ucp_ep_h reply_ep);
  // Sends `reply` (its payload, Reply::bytes, from `payload`); a send that fails at once ends it.
  void send(ucp_ep_h ep, std::unique_ptr<Reply> reply, const void* payload, ucs_memory_type_t type);
  void finished(Reply& reply);

  Worker& worker_;
  ucp_datatype_t copy_ = 0;  // host replies, packed by copy (am_server.cpp)
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Region> regions_;
  std::unordered_map<Reply*, std::unique_ptr<Reply>> replies_;  // in flight
  std::unordered_map<ucp_ep_h, std::size_t> per_reader_;        // replies in flight per reader endpoint
  Stats stats_;
};

}  // namespace tensorhub::transport::ucx
