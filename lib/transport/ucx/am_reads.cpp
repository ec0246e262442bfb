#include "am_reads.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "status.hpp"

namespace tensorhub::transport::ucx {
AmReads::AmReads(Worker& worker, std::uint64_t piece, std::size_t window)
    : worker_(worker),
      piece_(std::clamp<std::uint64_t>(piece, 1, kAmMaxPiece)),
      window_(std::max<std::size_t>(window, 1)) {
  worker_.set_am_handler(kAmReadReplyId, &AmReads::on_reply, this, "read replies");
}

AmReads::~AmReads() { worker_.clear_am_handler(kAmReadReplyId); }

void AmReads::post(Peer& peer, const ReadOp& op, std::uint64_t address, std::uint64_t hash) {
  const std::uint64_t id = next_op_++;
  const std::size_t pieces = static_cast<std::size_t>((op.length + piece_ - 1) / piece_);
  ops_.emplace(id, Op{op.tag, &peer, pieces, {}, Clock::now()});
  auto& queue = queues_[&peer];
  auto* dst = static_cast<std::byte*>(op.dst);
  for (std::uint64_t at = 0; at < op.length; at += piece_) {
    const std::uint64_t request_id = next_request_++;
    Piece p;
    p.op = id;
    p.peer = &peer;
    p.dst = dst + at;
    p.request = AmRequest{request_id, address + at, std::min(piece_, op.length - at), hash};
    p.header = encode(p.request);
    pieces_.emplace(request_id, std::move(p));
    queue.waiting.push_back(request_id);
  }
  pump();
}

void AmReads::ask(Piece& piece) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // REPLY: the holder answers on the endpoint this request came by (the reader's worker address is
  // not needed there). EAGER: a request is 40 bytes; never a rendezvous.
  p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  piece.send.emplace(ucp_am_send_nbx(piece.peer->ep->get(), kAmReadRequestId, piece.header.data(), piece.header.size(),
                                     nullptr, 0, &p));
  const ucs_status_t s = piece.send->status();
  if (s != UCS_OK && s != UCS_INPROGRESS && piece.peer->ep_error == UCS_OK) piece.peer->ep_error = s;
}

void AmReads::pump() {
  for (auto& [peer, queue] : queues_) {
    if (peer->dead() || !peer->ep || peer->ep_error != UCS_OK) continue;
    while (queue.asked < window_ && !queue.waiting.empty()) {
      const auto it = pieces_.find(queue.waiting.front());
      queue.waiting.pop_front();
      if (it == pieces_.end()) continue;
      ++queue.asked;
      ask(it->second);
    }
  }
}

ucs_status_t AmReads::on_reply(void* arg, const void* header, std::size_t header_length, void* data, std::size_t length,
                               const ucp_am_recv_param_t* param) {
  auto* self = static_cast<AmReads*>(arg);
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  const auto reply = decode_reply(std::span<const std::byte>(static_cast<const std::byte*>(header), header_length));
  if (reply) self->reply(*reply, data, length, rendezvous);
  if (rendezvous) ucp_am_data_release(self->worker_.get(), data);  // never received: see am_server.cpp
  return UCS_OK;                                                   // the data is not kept past this call
}

void AmReads::reply(const AmReply& reply, const void* data, std::size_t length, bool rendezvous) {
  const auto it = pieces_.find(reply.request_id);
  if (it == pieces_.end()) return;  // a read given up already, or not ours: dropped
  Piece& piece = it->second;
  const std::uint64_t want = piece.request.length;
  std::string error;
  if (reply.status != UCS_OK) {
    error = "ucx: peer " + piece.peer->name + " refused a read of " + std::to_string(want) +
            " bytes: " + describe(static_cast<ucs_status_t>(reply.status));
  } else if (rendezvous || reply.length != want || length != want) {
    error = "ucx: peer " + piece.peer->name + " answered a read of " + std::to_string(want) + " bytes with " +
            std::to_string(length) + (rendezvous ? " (rendezvous)" : "") + ": protocol breach";
  } else {
    std::memcpy(piece.dst, data, length);
  }
  piece.peer->last_progress = Clock::now();
  piece_done(it, error);
  pump();
}

void AmReads::piece_done(std::unordered_map<std::uint64_t, Piece>::iterator it, const std::string& error) {
  const Piece& piece = it->second;
  if (auto q = queues_.find(piece.peer); q != queues_.end() && piece.send && q->second.asked > 0) --q->second.asked;
  const auto op = ops_.find(piece.op);
  pieces_.erase(it);
  if (op == ops_.end()) return;
  if (!error.empty() && op->second.error.empty()) op->second.error = error;
  if (--op->second.pieces_left > 0) return;
  done_.push_back(Completion{op->second.tag, op->second.error.empty(), op->second.error});
  ops_.erase(op);
}

void AmReads::fail_peer(const Peer& peer, const std::string& why) {
  for (auto it = pieces_.begin(); it != pieces_.end();) {
    if (it->second.peer != &peer) {
      ++it;
      continue;
    }
    if (const auto op = ops_.find(it->second.op); op != ops_.end()) {
      done_.push_back(Completion{op->second.tag, false, why});
      ops_.erase(op);
    }
    it = pieces_.erase(it);
  }
  queues_.erase(&peer);
}

void AmReads::collect(std::vector<Completion>& out) {
  for (auto& c : done_) out.push_back(std::move(c));
  done_.clear();
}

void AmReads::expired(Clock::time_point now, std::chrono::milliseconds deadline, std::vector<Peer*>& out) const {
  for (const auto& [id, op] : ops_) {
    const auto since = std::max(op.posted, op.peer->last_progress);
    if (now - since > deadline && std::find(out.begin(), out.end(), op.peer) == out.end()) out.push_back(op.peer);
  }
}

}  // namespace tensorhub::transport::ucx
