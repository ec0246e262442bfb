#include "am_server.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "status.hpp"

namespace tensorhub::transport::ucx {

struct AmServer::Reply {
  AmServer* server = nullptr;  // null once the server is gone (the callback then only frees)
  std::array<std::byte, kAmReplyBytes> header{};
  std::uint64_t region = 0;  // 0: a refusal, sent from no region
  std::uint64_t bytes = 0;   // payload bytes (0 on a refusal)
  ucp_ep_h ep = nullptr;
};

namespace {

// Host replies are sent as a generic datatype: UCX packs them with these callbacks into its own
// buffers (bcopy) and never sends them zero-copy. Over TCP, UCX 1.13 completes an interrupted
// zero-copy send twice when the reader's endpoint fails ("uct_iface.h:884 Assertion
// `comp->count > 0' failed ... status=-80", from uct_tcp_ep_purge: 1 run in 2 of the 50-kill test
// before this), which aborts the holder just like the emulated get did. Emulated gets reply with
// bcopy too, so this costs no copy that they did not make.
struct PackState {
  const std::byte* src = nullptr;
  std::size_t length = 0;
};

void* start_pack(void* /*context*/, const void* buffer, std::size_t count) {
  return new PackState{static_cast<const std::byte*>(buffer), count};  // NOLINT(cppcoreguidelines-owning-memory)
}
void* start_unpack(void* /*context*/, void* /*buffer*/, std::size_t /*count*/) { return nullptr; }  // never received
std::size_t packed_size(void* state) { return static_cast<PackState*>(state)->length; }
std::size_t pack(void* state, std::size_t offset, void* dest, std::size_t max_length) {
  const auto* s = static_cast<PackState*>(state);
  const std::size_t n = offset < s->length ? std::min(max_length, s->length - offset) : 0;
  std::memcpy(dest, s->src + offset, n);
  return n;
}
ucs_status_t unpack(void* /*state*/, std::size_t /*offset*/, const void* /*src*/, std::size_t /*length*/) {
  return UCS_ERR_UNSUPPORTED;
}
void finish(void* state) { delete static_cast<PackState*>(state); }  // NOLINT(cppcoreguidelines-owning-memory)

constexpr ucp_generic_dt_ops_t kCopyOps{&start_pack, &start_unpack, &packed_size, &pack, &unpack, &finish};

}  // namespace

AmServer::AmServer(Worker& worker) : worker_(worker) {
  check(ucp_dt_create_generic(&kCopyOps, nullptr, &copy_), "ucp_dt_create_generic", "read replies");
  worker_.set_am_handler(kAmReadRequestId, &AmServer::on_request, this, "read requests");
}

AmServer::~AmServer() {
  worker_.clear_am_handler(kAmReadRequestId);
  // Replies still in flight keep their Reply (the send callback frees it); they no longer point here.
  for (auto& [reply, owned] : replies_) {
    owned->server = nullptr;
    (void)owned.release();
  }
  if (replies_.empty()) ucp_dt_destroy(copy_);  // else a send in flight still packs with it
}

std::uint64_t AmServer::add(std::uint64_t begin, std::uint64_t bytes, std::uint64_t hash, ucs_memory_type_t type) {
  const std::uint64_t id = next_id_++;
  regions_.emplace(id, Region{begin, begin + bytes, hash, type, 0, false});
  return id;
}

std::size_t AmServer::remove(const std::vector<std::uint64_t>& ids, std::chrono::milliseconds limit) {
  const auto busy = [&] {
    std::size_t n = 0;
    for (const auto id : ids) {
      if (const auto it = regions_.find(id); it != regions_.end()) n += it->second.in_flight;
    }
    return n;
  };
  for (const auto id : ids) {
    if (const auto it = regions_.find(id); it != regions_.end()) it->second.removed = true;
  }
  const auto end = std::chrono::steady_clock::now() + limit;
  while (busy() > 0 && std::chrono::steady_clock::now() < end) worker_.progress();
  const std::size_t left = busy();
  for (const auto id : ids) regions_.erase(id);
  return left;
}

AmServer::Stats AmServer::stats() const {
  Stats s = stats_;
  s.in_flight = replies_.size();
  return s;
}

ucs_status_t AmServer::on_request(void* arg, const void* header, std::size_t header_length, void* data,
                                  std::size_t /*length*/, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<AmServer*>(arg);
  // A request carries no payload; one that came as a rendezvous is released unread.
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) ucp_am_data_release(self->worker_.get(), data);
  const auto request = decode_request(std::span<const std::byte>(static_cast<const std::byte*>(header), header_length));
  if (!request || (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0 || param->reply_ep == nullptr) {
    ++self->stats_.dropped;
    return UCS_OK;
  }
  self->handle(*request, param->reply_ep);
  return UCS_OK;
}

void AmServer::handle(const AmRequest& request, ucp_ep_h reply_ep) {
  if (replies_.size() >= kMaxReplies) {
    ++stats_.dropped;
    return;
  }
  auto reply = std::make_unique<Reply>();
  reply->server = this;
  reply->ep = reply_ep;
  AmReply head{UCS_OK, request.request_id, 0};
  const auto found = std::find_if(regions_.begin(), regions_.end(), [&](const auto& entry) {
    const Region& r = entry.second;
    return !r.removed && r.hash == request.key_hash && r.begin <= request.address &&
           request.address + request.length <= r.end;
  });
  const auto reader = per_reader_.find(reply_ep);
  if (reader != per_reader_.end() && reader->second >= kMaxRepliesPerReader) {
    head.status = UCS_ERR_EXCEEDS_LIMIT;
  } else if (found == regions_.end()) {
    head.status = UCS_ERR_INVALID_PARAM;  // not a region this holder serves (or no longer)
  } else {
    head.length = request.length;
    reply->region = found->first;
    reply->bytes = request.length;
  }
  reply->header = encode(head);
  if (head.status != UCS_OK) {
    ++stats_.refused;
    send(reply_ep, std::move(reply), nullptr, UCS_MEMORY_TYPE_HOST);
    return;
  }
  ++stats_.served;
  send(reply_ep, std::move(reply), reinterpret_cast<const void*>(static_cast<std::uintptr_t>(request.address)),
       found->second.type);
}

void AmServer::send(ucp_ep_h ep, std::unique_ptr<Reply> reply, const void* payload, ucs_memory_type_t type) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  // Eager only: the reader copies the payload out inside its handler, so no byte of a reply can
  // land in its buffer after it gave the read up (a rendezvous would receive asynchronously).
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  p.cb.send = &AmServer::on_sent;
  p.user_data = reply.get();
  if (payload != nullptr && type != UCS_MEMORY_TYPE_HOST) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.memory_type = type;  // contiguous: UCX stages device memory itself
  } else {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = copy_;  // never zero-copy (see kCopyOps)
  }
  // Counted before the call: UCX may complete the send (and run on_sent) only later, never inside.
  Reply* raw = reply.get();
  ++per_reader_[ep];
  if (raw->region != 0) ++regions_.at(raw->region).in_flight;
  replies_.emplace(raw, std::move(reply));
  const ucs_status_ptr_t r =
      ucp_am_send_nbx(ep, kAmReadReplyId, raw->header.data(), raw->header.size(), payload, raw->bytes, &p);
  if (UCS_PTR_IS_PTR(r)) return;  // on_sent ends it
  finished(*raw);                 // done at once (NULL) or failed at once (a dead reader)
}

void AmServer::on_sent(void* request, ucs_status_t /*status*/, void* user_data) {
  // An error here (the reader died, its endpoint timed out) ends this reply and nothing else.
  auto* reply = static_cast<Reply*>(user_data);
  ucp_request_free(request);
  if (reply->server == nullptr) {
    delete reply;  // NOLINT(cppcoreguidelines-owning-memory): released by ~AmServer
    return;
  }
  reply->server->finished(*reply);
}

void AmServer::finished(Reply& reply) {
  if (const auto it = per_reader_.find(reply.ep); it != per_reader_.end() && --it->second == 0) per_reader_.erase(it);
  if (reply.region != 0) {
    if (const auto it = regions_.find(reply.region); it != regions_.end()) --it->second.in_flight;
  }
  replies_.erase(&reply);
}

}  // namespace tensorhub::transport::ucx
