// HubCore: everything one rank's hub does, without MPI (private header). Hub::Impl wraps it in
// the MPI glue (communicator, collective join and close); unit tests run several HubCores in one
// process over the `local` transport and an in-process coordinator.
//
// Built from a control-plane client, a data-plane transport, the rank and the options (as
// given: the environment is read by whoever builds it).
//
// Threads and locks (hub.hpp "Threads"): any number of user threads, the heartbeat thread,
// one worker thread per asynchronous pull (AsyncPulls) and per asynchronous publish
// (AsyncPublishes) call it.
//  * api_mu_ guards the ReferenceTable, the allocations and pulling_ (the destinations of pulls
//    in flight). Every call takes it, except the transfer phase of a pull (Puller::transfer),
//    which uses only the coordinator client (thread-safe) and a transport lane of its own, and
//    the checksum pass of a publish (Publisher::hash), which only reads the tensors.
//  * The transport is a SharedTransport: its own mutex, always taken after api_mu_ if both.
//  * The heartbeat thread's rebuilds only try_lock api_mu_.
//  * close()/abandon() first mark the hub closed, cancel and join the asynchronous pulls and
//    publishes (without api_mu_: their last phase takes it), wait for the other pulls in flight, then
//    tear down. After close() or abandon() every call throws HubClosed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "async_publish.hpp"
#include "async_pull.hpp"
#include "hub_context.hpp"
#include "offloader.hpp"
#include "publisher.hpp"
#include "puller.hpp"
#include "reference_table.hpp"
#include "registration.hpp"
#include "shared_transport.hpp"
#include "tracing_client.hpp"

namespace tensorhub {

class HubCore {
 public:
  // Registers at the coordinator and starts heartbeating. `client` must outlive the HubCore.
  // `device`: the device made at join for the data paths (null: made on the first device tensor).
  HubCore(coord::Client& client, std::unique_ptr<transport::Transport> transport, int rank, HubOptions options,
          std::shared_ptr<device::Device> device = nullptr);
  // Like abandon(): a HubCore not closed leaves without telling the coordinator.
  ~HubCore();
  HubCore(const HubCore&) = delete;
  HubCore& operator=(const HubCore&) = delete;

  // The Hub calls of the same names (hub.hpp documents them).
  PublishResult publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                        const std::optional<Group>& group);
  PublishHandle publish_async(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                              const std::optional<Group>& group);
  // `timeout` bounds the wait for readers (TimeoutError, reference withdrawn but kept).
  void unpublish(const std::string& model, std::uint64_t version,
                 std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  void retain(const std::string& model, std::uint64_t version);
  void release(const std::string& model, std::uint64_t version);
  void attach_snapshot(const std::string& path);
  PullResult pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                  const PullOptions& options);
  PullHandle pull_async(const std::string& model, const Version& version, std::span<const Tensor> into,
                        const PullOptions& options);
  std::optional<std::uint64_t> latest(const std::string& model);
  std::optional<std::uint64_t> wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                        std::chrono::milliseconds timeout);
  Manifest manifest(const std::string& model, const Version& version);
  std::vector<ModelInfo> status();
  void* allocate(std::uint64_t bytes);
  void deallocate(void* p);
  void* allocate_device(std::uint64_t bytes);
  void copy_memory(void* dst, MemoryKind dst_memory, const void* src, MemoryKind src_memory, std::uint64_t bytes);
  std::string device_name();
  void stop_relaying(std::span<const Tensor> tensors);

  // leave() then release_transport(); rethrows what leave() reported. A second call does nothing.
  void close();
  // The first half of close, no collective: withdraws every reference (newest first, waiting
  // for its readers, offloading retained versions this rank is the last holder of) and
  // deregisters. Errors do not stop it; the first is returned (null if none, or if closed).
  std::exception_ptr leave();
  // The second half: closes the transport (collective for mpi_rma) and frees it. Idempotent.
  void release_transport();
  // Local teardown without collectives or coordinator calls (a rank failing alone).
  void abandon() noexcept;

  bool closed() const { return closed_.load(); }
  // The transport while it exists (Hub::Impl's job barrier); ContractViolation after release.
  transport::Transport& transport();
  coord::WorkerId worker() const { return ctx_.id(); }
  int rank() const { return ctx_.rank; }

 private:
  // Runs `f` with the API mutex held, open and registered at the coordinator: after a lost
  // registration it re-registers and re-publishes first, and retries `f` once when `f` itself
  // meets UnknownWorker.
  template <class F>
  auto registered(const char* method, F&& f) -> decltype(f()) {
    std::lock_guard lock(api_mu_);
    check_open(method);
    if (registration_->lost()) registration_->rebuild(table_);
    try {
      return f();
    } catch (const UnknownWorker& e) {
      ctx_.log.warn(std::string("re-registering: ") + e.what());
      registration_->rebuild(table_, true);
      return f();
    }
  }
  // HubClosed("hub is closed: <method> called after Hub::close()") once closed.
  void check_open(const char* method) const;
  // Checks a pull's arguments and reserves its destinations (UserError if they overlap a pull
  // in flight); returns the reservation's id. Expects the API mutex held.
  std::uint64_t reserve_locked(const char* method, const std::string& model, std::span<const Tensor> into,
                               const PullOptions& options);
  // UserError naming `why` if `ranges` overlap the destinations of a pull in flight (other than
  // reservation `except`). Expects the API mutex held.
  void check_not_pulling_locked(const std::vector<ByteRange>& ranges, const std::string& why,
                                std::uint64_t except = 0) const;
  // Ends reservation `id` (no-op if gone). Expects the API mutex held.
  void release_locked(std::uint64_t id);
  // A reserved pull's three phases (puller.hpp), taking the API mutex for the first and last;
  // a cancelled pull's announced buffers are withdrawn before Cancelled is rethrown.
  PullResult run_pull(std::uint64_t id, const std::string& model, const Version& version, std::span<const Tensor> into,
                      const PullOptions& options, const std::atomic<bool>* cancel);
  // From the heartbeat thread: a rebuild if the API mutex is free; false if it was busy.
  bool try_rebuild();
  // Stops relaying (withdraws, offloading if needed) every relay overlapping `ranges`; UserError
  // naming `why` if published memory overlaps. Expects the API mutex held.
  // `publishing`: ranges identical to published ones are allowed (ReferenceTable).
  void stop_relaying_locked(const std::vector<ByteRange>& ranges, const std::string& why, bool publishing = false);

  // A publish's first half (hub_core_publish.cpp): checks, stops relays of the memory, prepares
  // the job (pending reference) and records its state in publishing_.
  std::pair<std::shared_ptr<PublishHandle::State>, std::shared_ptr<PublishJob>> start_publish(
      const char* method, const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
      const std::optional<Group>& group);
  // Its second half, on any thread without the API mutex: hash, then commit (API mutex) or abort;
  // ends by state.finish().
  void run_publish(PublishHandle::State& state, PublishJob& job) noexcept;

  // Writes the trace (HubOptions::trace_path) once; errors are logged.
  void write_trace() noexcept;

  HubDevice device_;                              // first: outlives the transport that may use it
  std::unique_ptr<TraceRecorder> trace_;          // null unless HubOptions::trace_path is set
  std::unique_ptr<TracingClient> traced_client_;  // wraps `client` while tracing
  std::unique_ptr<SharedTransport> transport_;
  HubContext ctx_;
  ReferenceTable table_;
  Puller puller_;
  Publisher publisher_;
  Offloader offloader_;
  std::mutex api_mu_;
  std::map<void*, std::uint64_t> allocations_;               // allocate()d here and not deallocated yet
  std::map<std::uint64_t, std::vector<ByteRange>> pulling_;  // destinations of pulls in flight
  std::uint64_t next_pull_ = 0;
  std::condition_variable pulls_done_;  // pulling_ shrank (with api_mu_)
  // Publishes not finished yet (publish_async, or publish on another thread), by (model, version),
  // for an unpublish that cancels them.
  std::map<std::pair<std::string, std::uint64_t>, std::shared_ptr<PublishHandle::State>> publishing_;
  std::atomic<bool> closed_{false};
  std::unique_ptr<Registration> registration_;  // its heartbeat stops before the rest goes
  AsyncPublishes publishes_;                    // joined before everything above
  AsyncPulls async_;                            // last: its workers are joined first
};

}  // namespace tensorhub
