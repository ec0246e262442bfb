// tensorhub publish: the ranks running this command form one publishing (trainer) group and
// publish versions of a model: synthetic weights (every --interval seconds, each replacing the
// previous), or one version loaded from an HDF5 snapshot (`snapshot load` is the same). Tensor i
// of the model is held by group rank i % group size; with --layout dimD[:P] every tensor is cut
// into P boxes along dim D instead, box i held by group rank i % group size (common/layout.hpp). Publishers keep
// serving until every rank of the job is done (readers started with them in the same mpirun / srun), plus --hold
// seconds.
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/job.hpp"
#include "common/layout.hpp"
#include "common/memory.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "common/synthetic.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct PublishConfig {
  std::string model = "policy";
  std::string synthetic = "256MiB";
  std::uint32_t tensors = 16;
  std::string from;  // snapshot file
  std::uint32_t versions = 1;
  std::uint64_t start = 1;
  double interval = 0;
  double hold = 0;
  bool retain = false;
  bool async = false;
  std::string json;
  std::string memory = "host";
  std::string layout = "plain";
  HubFlags hub;
};

std::vector<TensorSpec> my_share(const std::vector<TensorSpec>& all, const mpi::Comm& group) {
  std::vector<TensorSpec> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(group.size())) == group.rank()) out.push_back(all[i]);
  }
  return out;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int run_publish(const PublishConfig& c) {
  std::optional<snapshot::SnapshotInfo> file;
  std::vector<TensorSpec> specs;
  if (!c.from.empty()) {
    file = snapshot::inspect(c.from);
    for (const auto& t : file->manifest.tensors) specs.push_back(t.spec);
  } else {
    specs = synthetic_model(parse_bytes(c.synthetic), c.tensors);
  }
  const std::string& model = file ? file->manifest.model : c.model;
  const std::uint32_t versions = file ? 1 : c.versions;
  const std::uint64_t first = file ? file->manifest.version : c.start;
  const std::uint64_t model_bytes = Arena::bytes_needed(specs);

  std::vector<TensorSpec> shard;
  const Layout layout = parse_layout(c.layout);
  Job job = join_job(Role::kPublish, c.hub, model_bytes, [&](std::uint64_t, const mpi::Comm& group) {
    shard = layout.sliced() ? publisher_layout(specs, layout, group.rank(), group.size()) : my_share(specs, group);
    // Two buffers used in turn, so a version stays untouched while the next one is computed.
    return (versions > 1 ? 2 : 1) * Arena::bytes_needed(shard) + (1u << 20);
  });
  Hub& hub = *job.hub;
  const bool lead = job.role.rank() == 0;
  const Group group = Group::of(job.role.get(), "publish:" + model);
  if (lead) {
    std::printf("tensorhub publish: '%s' %s in %zu tensors, publishing group of %d rank%s, coordinator %s\n",
                model.c_str(), format_bytes(model_bytes).c_str(), specs.size(), job.role.size(),
                job.role.size() == 1 ? "" : "s", hub.coordinator_address().c_str());
    std::fflush(stdout);
  }

  std::vector<Arena> arenas;
  for (int i = 0; i < (versions > 1 ? 2 : 1); ++i) arenas.emplace_back(shard, hub.allocate(Arena::bytes_needed(shard)));
  if (file && !shard.empty()) {
    std::vector<Tensor> mine(arenas[0].tensors().begin(), arenas[0].tensors().end());
    snapshot::read(c.from, mine, /*verify=*/true);
  }
  // --memory cuda: the tensors published are device copies of the arenas (filled on the host).
  const bool on_device = parse_memory(c.memory) == MemoryKind::kCuda;
  std::vector<DeviceMirror> mirrors;
  if (on_device) {
    for (const auto& a : arenas) mirrors.emplace_back(hub, a);
    if (file) mirrors[0].upload(arenas[0]);
    if (lead) std::printf("tensorhub publish: tensors in device memory of the %s\n", hub.device_name().c_str());
  }
  if (lead && layout.sliced()) {
    std::printf("tensorhub publish: every tensor cut along dim %d into %lld boxes of its global tensor\n", layout.dim,
                static_cast<long long>(layout.parts > 0 ? layout.parts : job.role.size()));
  }

  nlohmann::json jv = nlohmann::json::array();
  const auto t0 = Clock::now();
  for (std::uint32_t i = 0; i < versions; ++i) {
    const std::uint64_t v = first + i;
    // Paced like a trainer step: version i is due at t0 + i * interval.
    const auto due = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.interval * i));
    std::this_thread::sleep_until(due);
    Arena& a = arenas[i % arenas.size()];
    if (!file && !layout.sliced()) a.fill(v);
    if (!file && layout.sliced()) {
      for (const auto& t : a.tensors()) fill_global(t, v);
    }
    if (on_device && !file) mirrors[i % mirrors.size()].upload(a);
    const auto tp = Clock::now();
    const double wall_in = wall_seconds();
    const auto tensors = on_device ? mirrors[i % mirrors.size()].tensors() : a.tensors();
    double publish_s = 0;
    double wall_out = 0;
    if (c.async) {
      // The caller's stall is the call; the shard is in once the handle's result is.
      auto h = hub.publish_async(model, v, tensors, group);
      publish_s = seconds_since(tp);
      wall_out = wall_in + static_cast<double>(h.result().commit.count()) / 1e6;
    } else {
      hub.publish(model, v, tensors, group);
      publish_s = seconds_since(tp);
      wall_out = wall_seconds();
    }
    double unpublish_s = 0;
    if (i > 0) {
      const auto tu = Clock::now();
      hub.unpublish(model, v - 1);  // waits for the reads of v-1 in flight
      unpublish_s = seconds_since(tu);
    }
    double slowest = publish_s;  // the version is visible once the slowest shard is in
    for (const double t : mpi::gather_double(job.role.get(), 0, publish_s)) slowest = std::max(slowest, t);
    // Commit latency: from the first shard's publish call to the last shard's return (the
    // version commits with the last shard), on the hosts' wall clocks.
    double first_in = wall_in;
    double last_out = wall_out;
    for (const double t : mpi::gather_double(job.role.get(), 0, wall_in)) first_in = std::min(first_in, t);
    for (const double t : mpi::gather_double(job.role.get(), 0, wall_out)) last_out = std::max(last_out, t);
    const double commit_s = last_out - first_in;
    if (lead) {
      std::printf(
          "published '%s' v%llu: %s, %s %.3f ms (slowest shard), committed %.1f ms after the first "
          "shard began",
          model.c_str(), static_cast<unsigned long long>(v), format_bytes(model_bytes).c_str(),
          c.async ? "publish_async returned in" : "publish", slowest * 1e3, commit_s * 1e3);
      if (i > 0)
        std::printf(", v%llu unpublished in %.1f ms (its reads drained)", static_cast<unsigned long long>(v - 1),
                    unpublish_s * 1e3);
      std::printf("\n");
      std::fflush(stdout);
    }
    jv.push_back({{"version", v},
                  {"publish_ms", slowest * 1e3},
                  {"commit_ms", commit_s * 1e3},
                  {"previous_drain_ms", unpublish_s * 1e3}});
  }
  const std::uint64_t last = first + versions - 1;
  if (c.retain && lead) {
    hub.retain(model, last);
    std::printf("retained '%s' v%llu\n", model.c_str(), static_cast<unsigned long long>(last));
    if (c.hub.snapshot_dir.empty() && !env::text("TENSORHUB_SNAPSHOT_DIR")) {
      std::printf(
          "warning: no --snapshot-dir: when this job ends, the retained version cannot be offloaded;\n"
          "         leaving fails and the version is LOST until `tensorhub recover` re-seeds it\n");
    }
  }
  if (c.hold > 0) std::this_thread::sleep_for(std::chrono::duration<double>(c.hold));
  leave_job(job);
  if (lead) {
    std::printf("publish done: %u version(s) of '%s', last v%llu\n", versions, model.c_str(),
                static_cast<unsigned long long>(last));
    if (!c.json.empty()) {
      write_json_file(c.json, {{"model", model},
                               {"model_bytes", model_bytes},
                               {"tensors", specs.size()},
                               {"ranks", job.role.size()},
                               {"versions", jv}});
    }
  }
  return 0;
}

void add_publish_options(po::options_description& desc, PublishConfig& c, bool synthetic) {
  if (synthetic) {
    desc.add_options()("model", po::value(&c.model)->default_value(c.model), "model name")(
        "synthetic", po::value(&c.synthetic)->default_value(c.synthetic),
        "publish synthetic bf16 weights of this total size (e.g. 1GiB)")(
        "tensors", po::value(&c.tensors)->default_value(c.tensors), "about this many synthetic tensors")(
        "versions", po::value(&c.versions)->default_value(c.versions), "synthetic versions to publish")(
        "start-version", po::value(&c.start)->default_value(c.start), "number of the first version")(
        "interval", po::value(&c.interval)->default_value(c.interval), "seconds between versions (a training step)");
  }
  desc.add_options()("retain", po::bool_switch(&c.retain),
                     "retain the last version (kept readable; see --snapshot-dir)")(
      "async", po::bool_switch(&c.async),
      "Hub::publish_async: each publish returns after validate + expose (the printed time is the caller's "
      "stall); checksums and the coordinator call run on a hub worker thread")(
      "hold", po::value(&c.hold)->default_value(c.hold), "seconds to keep serving after the last version")(
      "json", po::value(&c.json), "write the per-version timings as JSON to this file")(
      "memory", po::value(&c.memory)->default_value(c.memory), kMemoryHelp);
  if (synthetic) desc.add_options()("layout", po::value(&c.layout)->default_value(c.layout), kLayoutHelp);
  c.hub.add_to(desc);
}

void check_publish(PublishConfig& c) {
  c.hub.check();
  c.hub.device = device_for(parse_memory(c.memory));
  if (c.from.empty()) parse_bytes(c.synthetic);
  parse_layout(c.layout);
  if (!c.from.empty() && c.layout != "plain") throw UserError("--layout cuts a synthetic model; not with --from");
  if (c.versions == 0) throw UserError("--versions must be at least 1");
  if (c.from.empty()) check_synthetic_tensors(c.tensors);
  if (c.start > UINT64_MAX - (c.versions - 1)) {
    throw UserError("--start-version " + std::to_string(c.start) + " + --versions " + std::to_string(c.versions) +
                    " goes past the largest version number");
  }
  if (c.interval < 0 || c.hold < 0) throw UserError("--interval and --hold must not be negative");
}

}  // namespace

int cmd_publish(const Args& args) {
  PublishConfig c;
  po::options_description desc(help_head("publish", "The ranks running publish form one publishing group.\n"));
  add_publish_options(desc, c, true);
  desc.add_options()("from", po::value(&c.from), "publish the version stored in this snapshot file instead");
  po::variables_map vm;
  if (!parse_options("publish", desc, args, vm)) return 0;
  check_publish(c);
  return run_mpi_command("publish", [&](int) { return run_publish(c); });
}

int cmd_snapshot_load(const Args& args) {
  PublishConfig c;
  po::options_description desc(help_head("snapshot load", "FILE is positional.\n"));
  add_publish_options(desc, c, false);
  desc.add_options()("file", po::value(&c.from)->required(), "snapshot file (positional)");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_options("snapshot", desc, args, vm, &pos)) return 0;
  check_publish(c);
  snapshot::inspect(c.from);  // a bad file fails here, before MPI starts
  return run_mpi_command("snapshot load", [&](int) { return run_publish(c); });
}

}  // namespace tensorhub::cli
