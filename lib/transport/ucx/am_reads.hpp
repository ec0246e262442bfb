// The reader side of active-message reads (am_server.hpp has the holder side and why): a read is
// split into pieces of at most `piece` bytes, each asked for with one request; the reply handler
// copies each piece into its destination and the read completes when all have. At most `window`
// pieces per peer are asked for at once (the rest wait here, in this process's memory), so a
// holder never holds more than `window` replies for this reader.
//
// Every member function, and the reply handler UCX calls, run with Core::mutex held. A read of a
// failed peer is given up only after its endpoint was force-closed: no reply handler can run for
// it afterwards, so no byte lands in a destination after its read was reported.
#pragma once

#include <ucp/api/ucp.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "am_protocol.hpp"
#include "peer.hpp"
#include "request.hpp"
#include "tensorhub/transport/transport.hpp"
#include "worker.hpp"

namespace tensorhub::transport::ucx {

class AmReads {
 public:
  using Clock = std::chrono::steady_clock;

  // Installs the reply handler on `worker` (which must outlive this).
  AmReads(Worker& worker, std::uint64_t piece, std::size_t window);
  ~AmReads();
  AmReads(const AmReads&) = delete;
  AmReads& operator=(const AmReads&) = delete;

  // Reads op.length bytes at `address` (the op's offset already added) of the region whose key
  // hashes to `hash`, from `peer` (alive, endpoint open, op.length > 0).
  void post(Peer& peer, const ReadOp& op, std::uint64_t address, std::uint64_t hash);
  // Sends queued requests while windows allow; peers whose send failed get ep_error set.
  void pump();
  // Ends every read of `peer` (whose endpoint the caller has just force-closed) with `why`.
  void fail_peer(const Peer& peer, const std::string& why);
  // Appends reads that ended since the last call.
  void collect(std::vector<Completion>& out);
  // Peers with a read unfinished for longer than `deadline` while nothing came from them.
  void expired(Clock::time_point now, std::chrono::milliseconds deadline, std::vector<Peer*>& out) const;
  std::size_t in_flight() const { return ops_.size() + done_.size(); }

 private:
  struct Op {
    std::uint64_t tag = 0;
    Peer* peer = nullptr;
    std::size_t pieces_left = 0;
    std::string error;  // the first piece that failed, if any
    Clock::time_point posted;
  };
  struct Piece {
    std::uint64_t op = 0;
    Peer* peer = nullptr;
    void* dst = nullptr;
    AmRequest request;
    std::array<std::byte, kAmRequestBytes> header{};  // must live while its send is in flight
    std::optional<Request> send;                      // set once asked for
  };
  struct PeerQueue {
    std::deque<std::uint64_t> waiting;  // pieces not yet asked for
    std::size_t asked = 0;              // pieces asked for, no reply yet
  };

  static ucs_status_t on_reply(void* arg, const void* header, std::size_t header_length, void* data, std::size_t length,
                               const ucp_am_recv_param_t* param);
  void reply(const AmReply& reply, const void* data, std::size_t length, bool rendezvous);
  void piece_done(std::unordered_map<std::uint64_t, Piece>::iterator it, const std::string& error);
  void ask(Piece& piece);

  Worker& worker_;
  std::uint64_t piece_;
  std::size_t window_;
  std::uint64_t next_op_ = 1;
  std::uint64_t next_request_ = 1;
  std::unordered_map<std::uint64_t, Op> ops_;
  std::unordered_map<std::uint64_t, Piece> pieces_;  // by request id
  std::unordered_map<const Peer*, PeerQueue> queues_;
  std::vector<Completion> done_;
};

}  // namespace tensorhub::transport::ucx
