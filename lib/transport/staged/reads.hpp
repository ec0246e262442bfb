// The reader side of the `staged` path: one TCP connection per holder (authenticated with the
// key in its endpoint), and every posted read cut into pieces of at most the holder's slot size.
// Up to `depth` pieces of a read are requested at once (2: the holder copies the next piece to
// host while this reader reads the last one); each Ready names a staging slot, which is read with
// the inner host-path transport straight into the destination, then released with Done.
//
// Failures end reads with ok=false, never with an exception from poll(): the holder's connection
// closed or reset (it died), a refusal (withdrawn, out of range, device error), no answer within
// `timeout` (hung), or an inner read of a slot failing (cma and ucx see a dead holder too). A
// read's completion is handed out only when none of its pieces is still being read, so its
// destination is never written after it completed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "staged/codec.hpp"
#include "staged/socket.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport::staged {

struct ReadsOptions {
  std::uint32_t depth = 2;                   // pieces of one read in flight
  std::uint32_t per_holder = 32;             // pieces in flight per holder
  std::chrono::milliseconds timeout{10000};  // connect, hello, and each answer
};

class Reads {
 public:
  // `inner`: returns the host-path transport the slots are read with (made on first use).
  Reads(std::function<Transport&()> inner, ReadsOptions options);
  ~Reads();
  Reads(const Reads&) = delete;
  Reads& operator=(const Reads&) = delete;

  // TransportError for a malformed endpoint or descriptor or a read past the region's end; a
  // holder that cannot be reached fails the read as a completion.
  void post(const ReadOp& op);
  void poll(std::vector<Completion>& out);
  [[nodiscard]] std::size_t in_flight() const { return reads_.size(); }
  [[nodiscard]] std::size_t connections() const { return conns_.size(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Piece {
    std::uint64_t read = 0;
    std::uint64_t offset = 0;  // within the read
    std::uint64_t length = 0;
    std::uint32_t slot = 0;
    Clock::time_point deadline;
  };
  struct Read {
    ReadOp op;
    std::uint64_t id = 0;    // the region on the holder
    std::uint64_t next = 0;  // bytes requested so far
    std::uint32_t outstanding = 0;
    bool failed = false;
    std::string error;
  };
  struct Conn {
    std::string name;  // address:port (pid) for errors
    Fd fd;
    FrameReader in;
    std::string out;
    bool hello = false;
    bool broken = false;
    std::string why;
    Hello ring;
    Clock::time_point hello_deadline;
    std::map<std::uint64_t, Piece> waiting;  // ticket -> piece asked for
    std::uint32_t in_inner = 0;              // pieces being read from its slots
    std::vector<std::uint64_t> reads;        // reads of this holder not yet complete
  };
  struct InnerRead {
    std::string holder;
    Piece piece;
  };

  Conn& conn_for(const std::string& endpoint);
  void pump(Conn& c);
  void on_frame(const std::string& holder, Conn& c, Frame&& f);
  void fail(Read& r, const std::string& why);
  void settle(Conn& c, const Piece& p);  // a piece is over
  void break_conn(Conn& c, const std::string& why);
  void collect(std::vector<Completion>& out);

  std::function<Transport&()> inner_;
  ReadsOptions options_;
  std::unordered_map<std::string, Conn> conns_;
  std::unordered_map<std::uint64_t, Read> reads_;
  std::unordered_map<std::uint64_t, InnerRead> inner_reads_;  // inner tag -> piece
  std::vector<std::uint64_t> settled_;                        // reads that may be complete
  std::uint64_t next_read_ = 1;
  std::uint64_t next_ticket_ = 1;
  std::uint64_t next_inner_tag_ = 1;
  std::vector<Completion> inner_done_;
};

}  // namespace tensorhub::transport::staged
