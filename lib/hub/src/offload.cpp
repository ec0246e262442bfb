// Offloader (offloader.hpp), and reading a version from its snapshot file (puller.hpp).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>

#include "offloader.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string fixed(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

// <dir>/<model>/v<version>.h5, absolute so that the coordinator's file reference means the same
// file to every reader (whatever its working directory).
fs::path snapshot_path(const std::string& dir, const std::string& model, std::uint64_t version) {
  const fs::path m(model);
  if (m.is_absolute() || std::any_of(m.begin(), m.end(), [](const fs::path& p) { return p == ".."; })) {
    throw UserError("model name '" + model + "' cannot be used as a snapshot directory name");
  }
  return fs::absolute(fs::path(dir) / m / ("v" + std::to_string(version) + ".h5"));
}

}  // namespace

void Offloader::withdraw_or_offload(const Withdrawal& ref, std::optional<Clock::time_point> until) {
  const auto what = vname(ref.model, ref.version);
  // Bound on waiting for another rank's offload: its pull, then its write.
  const auto patience = 2 * ctx_.options.pull_deadline;
  auto give_up = Clock::now() + patience;
  coord::WorkerId writer = 0;
  auto pause = std::chrono::milliseconds(5);
  for (;;) {
    try {
      table_.withdraw(ref.model, ref.version, until);
      return;
    } catch (const OffloadRequired& e) {
      if (ctx_.options.snapshot_dir.empty()) {
        throw OffloadRequired(std::string(e.what()) +
                              ". This hub has no snapshot directory: set HubOptions::snapshot_dir or "
                              "TENSORHUB_SNAPSHOT_DIR to offload it to a snapshot, or release() it first");
      }
    }
    // Our reference is untouched (unpublish refused): take part in the offload lease.
    const auto lease = ctx_.client.begin_offload(ctx_.id(), ref.model, ref.version);
    if (lease.state == coord::OffloadState::kWrite) {
      try {
        offload(ref);
      } catch (...) {
        try {
          ctx_.client.end_offload(ctx_.id(), ref.model, ref.version);  // let another holder try
        } catch (const std::exception& e2) {
          ctx_.log.warn(std::string("end_offload failed: ") + e2.what());
        }
        throw;
      }
      continue;  // attached: unpublish now goes through
    }
    if (lease.state == coord::OffloadState::kWait && lease.holder != writer) {
      writer = lease.holder;
      give_up = Clock::now() + patience;
      ctx_.log.info(what + ": worker " + std::to_string(writer) +
                    " is writing its snapshot; keeping this reference until then");
    }
    if (Clock::now() > give_up) {
      throw TimeoutError(what + ": worker " + std::to_string(writer) + " did not attach a snapshot within " +
                         std::to_string(patience.count()) + " ms; this reference is still published");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

void Offloader::offload(const Withdrawal& ref) {
  const auto start = Clock::now();
  const auto what = vname(ref.model, ref.version);
  const auto path = snapshot_path(ctx_.options.snapshot_dir, ref.model, ref.version);
  const Manifest m = puller_.manifest(ref.model, Version::exact(ref.version));

  // Whole version in host memory: our own tensors copied from the memory we reference (the
  // coordinator never assigns a reader its own chunks), every other one pulled from its holders,
  // which still hold it (they wait for this snapshot before dropping their references).
  std::vector<std::unique_ptr<std::byte[]>> storage;
  std::vector<Tensor> all;
  std::vector<Tensor> to_pull;
  std::uint64_t local_bytes = 0;
  for (const auto& e : m.tensors) {
    const auto n = e.spec.bytes();
    storage.push_back(std::make_unique_for_overwrite<std::byte[]>(n));
    const Tensor t{e.spec, storage.back().get(), n, MemoryKind::kHost};
    all.push_back(t);
    const auto mine = std::find_if(ref.tensors.begin(), ref.tensors.end(),
                                   [&](const Tensor& x) { return x.spec.name == e.spec.name; });
    if (mine == ref.tensors.end()) {
      to_pull.push_back(t);
      continue;
    }
    if (mine->memory == MemoryKind::kCuda) {
      ctx_.device->copy(t.data, MemoryKind::kHost, mine->data, MemoryKind::kCuda, n);  // on the device's stream
    } else {
      std::memcpy(t.data, mine->data, n);
    }
    // What we write must be what was published (the checksums in the file say so).
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const auto& ch = m.chunks[e.first_chunk + c];
      if (checksum64(m.checksum_algorithm, static_cast<const std::byte*>(t.data) + ch.offset, ch.length) !=
          ch.checksum) {
        throw ChecksumError(what + ": tensor '" + e.spec.name + "' chunk " + std::to_string(c) +
                            " in this rank's memory no longer matches its checksum (memory changed while it "
                            "was referenced, or this rank never held all of it)");
      }
    }
    local_bytes += n;
  }
  std::uint64_t pulled = 0;
  if (!to_pull.empty()) {
    PullOptions po;
    po.verify = true;
    po.relay = false;  // these buffers go away after the write
    pulled = puller_.pull(ref.model, Version::exact(ref.version), to_pull, po).bytes;
  }

  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw UserError("snapshot directory " + path.parent_path().string() + ": " + ec.message());
  if (fs::exists(path, ec)) ctx_.log.warn(what + ": replacing the existing snapshot " + path.string());
  const auto write_start = Clock::now();
  snapshot::write(path.string(), m, all, /*overwrite=*/true);
  const double write_s = seconds_since(write_start);
  ctx_.client.attach_snapshot(path.string(), m);
  ctx_.log.info("offloaded " + what + " to snapshot " + path.string() + ": " + format_bytes(m.total_bytes()) + " (" +
                format_bytes(local_bytes) + " from own memory, " + format_bytes(pulled) + " pulled) in " +
                fixed(seconds_since(start)) + " s (write " + fixed(write_s) + " s)");
}

void check_snapshot_file(const std::string& path, const Manifest& m, const std::string& why) {
  const auto what = vname(m.model, m.version);
  std::error_code ec;
  if (!fs::exists(path, ec)) throw NotFoundError(why + "; its snapshot file " + path + " is gone");
  snapshot::SnapshotInfo info;
  try {
    info = snapshot::inspect(path);
  } catch (const UserError& e) {
    throw NotFoundError(why + "; its snapshot file cannot be read: " + e.what());
  }
  // The file must hold the bytes the version's checksums describe (it is checked at attach,
  // but the file may have been replaced since).
  const auto diff = manifest_difference(m, info.manifest, "the version", "the snapshot");
  if (!diff.empty()) throw UserError("snapshot " + path + " does not hold " + what + ": " + diff);
}

std::uint64_t read_snapshot(const std::string& path, const Manifest& m, std::span<const Tensor> into, bool verify,
                            const std::string& why, const std::function<void(std::uint64_t, std::uint64_t)>& progress,
                            HubDevice& device) {
  check_snapshot_file(path, m, why);
  std::uint64_t bytes = 0;
  std::vector<Tensor> host;
  std::vector<Tensor> on_device;
  std::uint64_t largest = 0;
  for (const auto& t : into) {
    bytes += m.tensors[*m.find(t.spec.name)].spec.bytes();
    (t.memory == MemoryKind::kCuda ? on_device : host).push_back(t);
    if (t.memory == MemoryKind::kCuda) largest = std::max(largest, t.spec.bytes());
  }
  std::uint64_t done = 0;
  const auto report = [&](std::uint64_t d, std::uint64_t) {
    if (progress) progress(done + d, bytes);
  };
  if (!host.empty()) snapshot::read(path, host, verify, report);
  for (const auto& t : host) done += t.spec.bytes();
  if (on_device.empty()) return bytes;
  // Device tensors: through a host buffer, one tensor at a time (verified there).
  const auto stage = std::make_unique_for_overwrite<std::byte[]>(largest);
  for (const auto& t : on_device) {
    const Tensor staged{t.spec, stage.get(), t.spec.bytes(), MemoryKind::kHost};
    snapshot::read(path, std::span<const Tensor>(&staged, 1), verify, {});
    device.copy(t.data, MemoryKind::kCuda, stage.get(), MemoryKind::kHost, t.spec.bytes());
    done += t.spec.bytes();
    report(0, bytes);
  }
  return bytes;
}

void Offloader::attach_snapshot(const std::string& path) {
  const auto info = snapshot::inspect(path);
  const auto abs = fs::absolute(path).string();
  ctx_.client.attach_snapshot(abs, info.manifest);
  ctx_.log.info("attached snapshot " + abs + " as " + vname(info.manifest.model, info.manifest.version));
}

}  // namespace tensorhub
