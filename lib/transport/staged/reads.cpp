#include "staged/reads.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::staged {

Reads::Reads(std::function<Transport&()> inner, ReadsOptions options) : inner_(std::move(inner)), options_(options) {
  if (options_.depth == 0 || options_.per_holder == 0) throw UserError("staged: depth and per-holder pieces >= 1");
}

Reads::~Reads() = default;

Reads::Conn& Reads::conn_for(const std::string& endpoint) {
  if (const auto it = conns_.find(endpoint); it != conns_.end()) return it->second;
  const auto e = decode_endpoint(endpoint);
  Conn c;
  c.name = "holder " + e.address + ":" + std::to_string(e.port) + " (pid " + std::to_string(e.pid) + ")";
  try {
    c.fd = connect_tcp(e.address, e.port, options_.timeout);
    encode(Auth{e.key}, c.out);
    c.hello_deadline = Clock::now() + options_.timeout;
  } catch (const TransportError& err) {
    c.broken = true;
    c.why = err.what();
  }
  return conns_.emplace(endpoint, std::move(c)).first->second;
}

void Reads::post(const ReadOp& op) {
  const auto d = decode_descriptor(op.descriptor);
  if (op.offset > d.bytes || op.length > d.bytes - op.offset) {
    throw TransportError("staged: a read of " + std::to_string(op.length) + " bytes at " + std::to_string(op.offset) +
                         " past the end of a " + std::to_string(d.bytes) + "-byte region");
  }
  if (op.length > 0 && op.dst == nullptr) throw TransportError("staged: a read into a null destination");
  Conn& c = conn_for(op.endpoint);
  const auto id = next_read_++;
  Read r;
  r.op = op;
  r.id = d.id;
  if (c.broken) {
    r.failed = true;
    r.error = "staged: " + c.name + ": " + c.why;
  }
  reads_.emplace(id, std::move(r));
  c.reads.push_back(id);
  settled_.push_back(id);  // a 0-byte or failed read is complete at once
  pump(c);
}

void Reads::pump(Conn& c) {
  if (c.broken || !c.hello) return;
  const auto now = Clock::now();
  for (const auto id : c.reads) {
    Read& r = reads_.at(id);
    while (!r.failed && r.next < r.op.length && r.outstanding < options_.depth &&
           c.waiting.size() + c.in_inner < options_.per_holder) {
      const std::uint64_t length = std::min(c.ring.slot_bytes, r.op.length - r.next);
      const auto ticket = next_ticket_++;
      c.waiting.emplace(ticket, Piece{id, r.next, length, 0, now + options_.timeout});
      encode(Request{ticket, r.id, r.op.offset + r.next, length}, c.out);
      r.next += length;
      ++r.outstanding;
    }
  }
}

void Reads::fail(Read& r, const std::string& why) {
  if (!r.failed) r.error = why;
  r.failed = true;
}

void Reads::settle(Conn& c, const Piece& p) {
  (void)c;
  Read& r = reads_.at(p.read);
  --r.outstanding;
  settled_.push_back(p.read);
}

void Reads::break_conn(Conn& c, const std::string& why) {
  if (c.broken) return;
  c.broken = true;
  c.why = why;
  c.fd.reset();
  c.out.clear();
  const std::string msg = "staged: " + c.name + ": " + why;
  for (const auto& [ticket, piece] : c.waiting) {
    fail(reads_.at(piece.read), msg);
    settle(c, piece);
  }
  c.waiting.clear();
  for (const auto id : c.reads) {
    Read& r = reads_.at(id);
    if (r.next < r.op.length) fail(r, msg);
    settled_.push_back(id);
  }
}

void Reads::on_frame(const std::string& holder, Conn& c, Frame&& f) {
  if (auto* h = std::get_if<Hello>(&f)) {
    if (c.hello) return break_conn(c, "a second hello (protocol error)");
    c.ring = std::move(*h);
    c.hello = true;
    return;
  }
  if (const auto* y = std::get_if<Ready>(&f)) {
    const auto it = c.waiting.find(y->ticket);
    if (it == c.waiting.end() || y->slot >= c.ring.slots) return break_conn(c, "an answer to no request");
    Piece p = it->second;
    c.waiting.erase(it);
    p.slot = y->slot;
    Read& r = reads_.at(p.read);
    if (!r.failed) {
      const auto tag = next_inner_tag_++;
      try {
        ReadOp sub{c.ring.inner_endpoint,
                   c.ring.ring_descriptor,
                   std::uint64_t{p.slot} * c.ring.slot_bytes,
                   static_cast<char*>(r.op.dst) + p.offset,
                   p.length,
                   tag};
        inner_().post(sub);
        inner_reads_.emplace(tag, InnerRead{holder, p});
        ++c.in_inner;
        return;
      } catch (const std::exception& e) {
        fail(r, "staged: " + c.name + ": reading its staging slot: " + e.what());
      }
    }
    encode(Done{p.slot}, c.out);
    return settle(c, p);
  }
  if (const auto* n = std::get_if<Refused>(&f)) {
    if (n->ticket == 0) return break_conn(c, "refused: " + n->reason);
    const auto it = c.waiting.find(n->ticket);
    if (it == c.waiting.end()) return break_conn(c, "a refusal of no request");
    const Piece p = it->second;
    c.waiting.erase(it);
    fail(reads_.at(p.read), "staged: " + c.name + " refused the read: " + n->reason);
    return settle(c, p);
  }
  break_conn(c, "an unexpected frame (protocol error)");
}

void Reads::poll(std::vector<Completion>& out) {
  const auto now = Clock::now();
  for (auto& [holder, c] : conns_) {
    if (c.broken) continue;
    std::string why;
    if (!flush(c.fd, c.out, why) || !receive(c.fd, c.in, why)) {
      // Answers already received still count (a Ready then the close of a dying holder).
      try {
        while (auto f = c.in.next()) on_frame(holder, c, std::move(*f));
      } catch (const TransportError&) {
      }
      break_conn(c, why);
      continue;
    }
    try {
      while (!c.broken) {
        auto f = c.in.next();
        if (!f) break;
        on_frame(holder, c, std::move(*f));
      }
    } catch (const TransportError& e) {
      break_conn(c, e.what());
    }
    if (c.broken) continue;
    const auto ms = std::to_string(options_.timeout.count());
    if (!c.hello && now > c.hello_deadline) {
      break_conn(c, "no hello within " + ms + " ms (hung, or not a staged holder)");
    } else if (std::any_of(c.waiting.begin(), c.waiting.end(),
                           [&](const auto& kv) { return now > kv.second.deadline; })) {
      break_conn(c, "no answer within " + ms + " ms (the holder is hung?)");
    }
  }
  if (!inner_reads_.empty()) {
    inner_done_.clear();
    inner_().poll(inner_done_);
    for (const auto& d : inner_done_) {
      const auto it = inner_reads_.find(d.tag);
      if (it == inner_reads_.end()) continue;
      const InnerRead ir = std::move(it->second);
      inner_reads_.erase(it);
      Conn& c = conns_.at(ir.holder);
      --c.in_inner;
      if (!c.broken) encode(Done{ir.piece.slot}, c.out);
      if (!d.ok) fail(reads_.at(ir.piece.read), "staged: " + c.name + ": reading its staging slot: " + d.error);
      settle(c, ir.piece);
    }
  }
  for (auto& [holder, c] : conns_) {
    pump(c);
    std::string why;
    if (!c.broken && !c.out.empty() && !flush(c.fd, c.out, why)) break_conn(c, why);
  }
  collect(out);
}

void Reads::collect(std::vector<Completion>& out) {
  std::sort(settled_.begin(), settled_.end());
  settled_.erase(std::unique(settled_.begin(), settled_.end()), settled_.end());
  for (const auto id : settled_) {
    const auto it = reads_.find(id);
    if (it == reads_.end()) continue;
    const Read& r = it->second;
    if (r.outstanding > 0 || (!r.failed && r.next < r.op.length)) continue;
    out.push_back(Completion{r.op.tag, !r.failed, r.error});
    const auto conn = conns_.find(r.op.endpoint);
    if (conn != conns_.end()) std::erase(conn->second.reads, id);
    reads_.erase(it);
  }
  settled_.clear();
  std::erase_if(conns_,
                [](const auto& kv) { return kv.second.broken && kv.second.in_inner == 0 && kv.second.reads.empty(); });
}

}  // namespace tensorhub::transport::staged
