// grpc_codec, workers: liveness of each worker (tensorhub status) and heartbeats.
#include <string>
#include <vector>

#include "grpc_codec.hpp"
#include "grpc_codec_util.hpp"

namespace tensorhub::coord::codec {

using detail::malformed;

pb::WorkerStatus to_proto(const WorkerStatus& status) {
  pb::WorkerStatus out;
  out.set_worker(status.worker);
  *out.mutable_info() = to_proto(status.info);
  switch (status.state) {
    case WorkerState::kAlive:
      out.set_state(pb::WORKER_STATE_ALIVE);
      break;
    case WorkerState::kSuspect:
      out.set_state(pb::WORKER_STATE_SUSPECT);
      break;
    case WorkerState::kDead:
      out.set_state(pb::WORKER_STATE_DEAD);
      break;
    case WorkerState::kLeft:
      out.set_state(pb::WORKER_STATE_LEFT);
      break;
  }
  out.set_silent_ms(status.silent_ms);
  out.set_reason(status.reason);
  return out;
}

WorkerStatus from_proto(const pb::WorkerStatus& status) {
  WorkerStatus out;
  out.worker = status.worker();
  out.info = from_proto(status.info());
  switch (status.state()) {
    case pb::WORKER_STATE_ALIVE:
      out.state = WorkerState::kAlive;
      break;
    case pb::WORKER_STATE_SUSPECT:
      out.state = WorkerState::kSuspect;
      break;
    case pb::WORKER_STATE_DEAD:
      out.state = WorkerState::kDead;
      break;
    case pb::WORKER_STATE_LEFT:
      out.state = WorkerState::kLeft;
      break;
    default:
      malformed("unknown worker state " + std::to_string(static_cast<int>(status.state())));
  }
  out.silent_ms = status.silent_ms();
  out.reason = status.reason();
  return out;
}

pb::WorkersReply to_proto(const std::vector<WorkerStatus>& workers) {
  pb::WorkersReply out;
  for (const auto& w : workers) *out.add_workers() = to_proto(w);
  return out;
}

std::vector<WorkerStatus> from_proto(const pb::WorkersReply& reply) {
  std::vector<WorkerStatus> out;
  out.reserve(static_cast<std::size_t>(reply.workers_size()));
  for (const auto& w : reply.workers()) out.push_back(from_proto(w));
  return out;
}

}  // namespace tensorhub::coord::codec
