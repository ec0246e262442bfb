// tensorhub pull: the ranks running this command read a version (or follow a stream of
// versions) from whoever holds it, verify it, and optionally write it to an HDF5 snapshot.
// Each rank is its own reader (a rollout engine), or with --group all of them form one reading
// group that splits the tensors (rank r reads tensor i when i % size == r) and resolves one
// version together. `snapshot save` is a grouped pull with --out. With --layout each rank pulls
// its own boxes of the global tensors (a rollout's tensor-parallel cut of a trainer's sliced
// version; README "Resharding", common/layout.hpp).
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <thread>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/fault_pause.hpp"
#include "common/job.hpp"
#include "common/layout.hpp"
#include "common/memory.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "common/report.hpp"
#include "common/synthetic.hpp"
#include "pull_summary.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::cli {
namespace {

struct PullConfig {
  std::string model = "policy";
  std::string version = "latest";
  std::optional<std::uint64_t> follow;  // keep pulling until this version
  double generate = 0;                  // seconds of "generation" between pulls
  double wait = 120;                    // seconds to wait for a (new) version
  double hold = 0;                      // seconds to keep relaying after the last pull
  bool keep_going = false;              // --follow: report a failed pull and go on
  bool verify = true;
  bool relay = true;
  bool group = false;
  bool check_pattern = false;
  bool overwrite = false;
  bool progress = false;  // --progress: draw the progress line even without a terminal
  std::string out;
  std::string json;
  std::string memory = "host";
  std::string layout = "plain";
  HubFlags hub;
};

std::optional<std::uint64_t> parse_version(const std::string& s) {
  if (s == "latest") return std::nullopt;
  // stoull reads "-1" as 2^64-1 (a version nobody publishes, waited for in silence).
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) {
    throw UserError("--version must be 'latest' or a version number, not '" + s + "'");
  }
  try {
    std::size_t pos = 0;
    const auto v = std::stoull(s, &pos);
    if (pos == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw UserError("--version must be 'latest' or a version number, not '" + s + "'");
}

// Waits up to `wait` until the version (or any version, for latest) is readable and returns its
// manifest; a version published a little after this job started is the normal case.

Manifest wait_for_manifest(Hub& hub, const std::string& model, std::optional<std::uint64_t> want,
                           std::chrono::milliseconds wait, bool lead) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  const auto say_waiting = [&](const std::string& what) {
    if (!lead) return;
    std::printf("waiting up to %lld s (--wait) for %s of '%s'\n", static_cast<long long>(wait.count() / 1000),
                what.c_str(), model.c_str());
    std::fflush(stdout);
  };
  if (!want) {
    if (!hub.wait_for(model, std::nullopt, std::chrono::milliseconds(0))) say_waiting("a readable version");
    if (!hub.wait_for(model, std::nullopt, wait)) {
      throw TimeoutError("no readable version of '" + model + "' within " + std::to_string(wait.count() / 1000) + " s");
    }
    return hub.manifest(model, Version::latest());
  }
  bool said = false;
  for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
    try {
      return hub.manifest(model, Version::exact(*want));
    } catch (const NotFoundError& e) {
      if (!said) say_waiting("v" + std::to_string(*want));
      said = true;
      if (std::chrono::steady_clock::now() + pause > deadline) {
        throw NotFoundError(std::string(e.what()) + " (waited " + std::to_string(wait.count() / 1000) + " s)");
      }
    }
    std::this_thread::sleep_for(pause);
  }
}

// One pull. Without --keep-going, a pull that finds its version unknown or unreadable (a standby
// coordinator that took over knows a version only once its publisher has registered again and
// re-published it) waits up to --wait for it to be readable again and retries, saying so,
// instead of failing the command.
PullResult pull_through_failover(Hub& hub, const PullConfig& c, std::optional<std::uint64_t> want,
                                 std::span<const Tensor> dest, const PullOptions& po, std::chrono::milliseconds wait,
                                 int rank) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  constexpr int kRetriesWhileReadable = 3;  // the version is readable, yet the pull failed
  for (int retries = 0;;) {
    try {
      return hub.pull(c.model, want ? Version::exact(*want) : Version::latest(), dest, po);
    } catch (const NotFoundError& e) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (c.keep_going || left.count() <= 0) throw;
      const std::optional<std::uint64_t> newer =
          want && *want > 0 ? std::optional<std::uint64_t>(*want - 1) : std::nullopt;
      if (hub.wait_for(c.model, newer, std::chrono::milliseconds(0))) {
        if (++retries > kRetriesWhileReadable) throw;
        std::printf("rank %d: %s; retrying (it is readable again)\n", rank, e.what());
        std::fflush(stdout);
        continue;
      }
      std::printf(
          "rank %d: %s; waiting up to %lld s (--wait) for it to be readable again (re-published after a "
          "coordinator failover?)\n",
          rank, e.what(), static_cast<long long>(left.count() / 1000));
      std::fflush(stdout);
      if (!hub.wait_for(c.model, newer, left)) throw;
    }
  }
}

int run_pull(const PullConfig& c, Role role) {
  const auto want = parse_version(c.version);
  const bool relay = c.relay && !(role == Role::kSnapshotSave);
  Job job = join_job(role, c.hub, 0, [&](std::uint64_t model_bytes, const mpi::Comm&) -> std::uint64_t {
    // Relayed buffers must be registered memory; without relaying any memory will do.
    return relay ? model_bytes + (1u << 20) : (1u << 20);
  });
  Hub& hub = *job.hub;
  const int me = job.role.rank();
  const int n = job.role.size();
  const bool lead = me == 0;
  // Relaying needs registered memory: sized from a publisher of this job, or given by --pool (a
  // job of readers only, joining a running hub).
  const bool pooled = relay && (job.model_bytes > 0 || !c.hub.pool.empty());
  if (relay && !pooled && lead) {
    std::printf(
        "note: no publisher in this job announced the model size and --pool was not given;\n"
        "      pulling into unregistered memory without relaying to later readers\n");
  }

  // Wait for something to read, then learn the tensors (shapes do not change between versions).
  const auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(c.wait * 1000));
  const Manifest first = wait_for_manifest(hub, c.model, want, wait, lead);
  std::vector<TensorSpec> specs;
  const Layout layout = parse_layout(c.layout);
  for (std::size_t i = 0; i < first.tensors.size() && !layout.sliced(); ++i) {
    if (!c.group || static_cast<int>(i % static_cast<std::size_t>(n)) == me) specs.push_back(first.tensors[i].spec);
  }
  if (layout.sliced()) specs = reader_layout(first, layout, me, n);  // this rank's boxes of the global tensors
  // Versions published with --layout carry a pattern over global coordinates (common/layout.hpp).
  const bool global = global_pattern(first);
  // What this reader must hold, checked before anything is allocated (a 1 PiB manifest must not
  // make every reader try).
  const std::uint64_t need = Arena::bytes_needed(specs);
  const auto pages = sysconf(_SC_PHYS_PAGES);
  const auto page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && need > static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)) {
    throw UserError("'" + c.model + "' v" + std::to_string(first.version) + " needs " + format_bytes(need) +
                    " in this reader, more than this host's memory (" +
                    format_bytes(static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)) + ")");
  }
  std::optional<Arena> dest;
  if (pooled) {
    dest.emplace(specs, hub.allocate(Arena::bytes_needed(specs)));
  } else {
    dest.emplace(specs);
  }
  dest->clear();  // fault the pages in before timing
  // --memory cuda: pulled into device memory laid out like `dest` (which then only checks).
  std::optional<DeviceMirror> mirror;
  if (parse_memory(c.memory) == MemoryKind::kCuda) {
    mirror.emplace(hub, *dest);
    mirror->upload(*dest);
    if (lead) std::printf("tensorhub pull: into device memory of the %s\n", hub.device_name().c_str());
  }

  PullOptions po;
  po.verify = c.verify;
  po.relay = pooled;
  if (c.group) po.group = Group::of(job.role.get(), "pull:" + c.model);
  PullTotals t;
  std::optional<std::uint64_t> last;
  std::uint32_t failures = 0;
  auto last_ok = std::chrono::steady_clock::now();
  for (;;) {
    if (failures > 0 && std::chrono::steady_clock::now() - last_ok > wait) {
      throw TimeoutError("no pull of '" + c.model + "' succeeded for " + fmt(c.wait, 0) + " s (" +
                         std::to_string(failures) + " failed)");
    }
    if (c.follow && last && lead && !hub.wait_for(c.model, last, std::chrono::milliseconds(0))) {
      std::printf("waiting up to %s s (--wait) for a version of '%s' newer than v%llu\n", fmt(c.wait, 0).c_str(),
                  c.model.c_str(), static_cast<unsigned long long>(*last));
      std::fflush(stdout);
    }
    if (c.follow && last && !hub.wait_for(c.model, last, wait)) {
      throw TimeoutError("no version of '" + c.model + "' newer than v" + std::to_string(*last) + " within " +
                         fmt(c.wait, 0) + " s (following until v" + std::to_string(*c.follow) + ")");
    }
    ProgressLine bar("pulling '" + c.model + "'", lead, c.progress);
    po.progress = [&bar, pause = std::make_shared<FaultPause>(FaultPause::from_environment())](std::uint64_t done,
                                                                                               std::uint64_t total) {
      pause->at_progress();  // fault tests only (TENSORHUB_TEST_PAUSE_DIR)
      bar.update(done, total);
    };
    PullResult r;
    try {
      r = pull_through_failover(hub, c, want, mirror ? mirror->tensors() : dest->tensors(), po, wait, job.world_rank);
    } catch (const Error& e) {
      // Holders gone (NotFoundError) or coordinator unreachable (TransportError): go on with the
      // next version. Bad input and corrupt data still end the command.
      const bool lost = dynamic_cast<const NotFoundError*>(&e) || dynamic_cast<const TransportError*>(&e);
      if (!c.keep_going || !lost) throw;
      bar.finish();
      ++failures;
      std::printf("rank %d: pull of '%s' failed at %s: %s (going on)\n", job.world_rank, c.model.c_str(),
                  clock_text().c_str(), e.what());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    bar.finish();
    if (c.check_pattern && mirror) mirror->download(*dest);
    const auto carries = [&](std::uint64_t v) {
      if (!global) return dest->matches(v);
      return std::all_of(dest->tensors().begin(), dest->tensors().end(),
                         [&](const Tensor& x) { return matches_global(x, v); });
    };
    if (c.check_pattern && !carries(r.version)) {
      throw ChecksumError("v" + std::to_string(r.version) + " does not carry the synthetic pattern of v" +
                          std::to_string(r.version) + " (torn or foreign data)");
    }
    const double gbps = static_cast<double>(r.bytes) / r.seconds / 1e9;
    std::printf(
        "rank %d pulled '%s' v%llu: %s in %.3f s (%.2f GB/s); from publishers %s, relays %s%s%s%s; at %s\n",
        job.world_rank, c.model.c_str(), static_cast<unsigned long long>(r.version), format_bytes(r.bytes).c_str(),
        r.seconds, gbps, format_bytes(r.origin_bytes).c_str(), format_bytes(r.relay_bytes).c_str(),
        r.file_bytes > 0 ? (", snapshot file " + format_bytes(r.file_bytes)).c_str() : "",
        r.failed_reads > 0 ? (", " + std::to_string(r.failed_reads) + " failed reads reassigned").c_str() : "",
        mirror ? ("; into device memory, " + format_bytes(r.bounced_bytes) + " bounced through host").c_str() : "",
        clock_text().c_str());
    std::fflush(stdout);
    t.pulls += 1;
    t.bytes += static_cast<double>(r.bytes);
    t.seconds += r.seconds;
    t.origin += static_cast<double>(r.origin_bytes);
    t.relay += static_cast<double>(r.relay_bytes);
    t.file += static_cast<double>(r.file_bytes);
    t.min_gbps = std::min(t.min_gbps, gbps);
    t.max_gbps = std::max(t.max_gbps, gbps);
    t.last = static_cast<double>(r.version);
    t.resolve += r.resolve_seconds;
    t.no_source += r.no_source_seconds;
    t.verify += r.verify_seconds;
    last = r.version;
    last_ok = std::chrono::steady_clock::now();
    if (!c.follow || *last >= *c.follow) break;
    if (c.generate > 0) std::this_thread::sleep_for(std::chrono::duration<double>(c.generate));
  }
  if (c.hold > 0) std::this_thread::sleep_for(std::chrono::duration<double>(c.hold));  // keep relaying

  if (!c.out.empty()) {
    const Manifest m = hub.manifest(c.model, Version::exact(*last));
    if (mirror && !c.check_pattern) mirror->download(*dest);  // --memory cuda: D2H into the host arena
    ProgressLine bar("writing " + c.out, lead, c.progress);
    const auto progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
    const auto t0 = std::chrono::steady_clock::now();
    if (c.group) {
      snapshot::write(job.role.get(), c.out, m, dest->tensors(), c.overwrite, progress);
    } else if (lead) {
      snapshot::write(c.out, m, dest->tensors(), c.overwrite, progress);
    }
    bar.finish();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (lead) {
      std::printf("wrote '%s' v%llu to %s (%s, %.2f s)\n", c.model.c_str(), static_cast<unsigned long long>(*last),
                  c.out.c_str(), format_bytes(m.total_bytes()).c_str(), s);
    }
  }

  // Summary over the readers of this command.
  const auto all = gather_totals(job.role.get(), t, job.world_rank);
  leave_job(job);
  if (lead) print_summary(all, c.model, c.group, c.verify, c.check_pattern, c.json);
  return 0;
}

void add_pull_options(po::options_description& desc, PullConfig& c, bool full) {
  desc.add_options()("model", po::value(&c.model)->default_value(c.model), "model name")(
      "version", po::value(&c.version)->default_value(c.version), "'latest' or a version number")(
      "wait", po::value(&c.wait)->default_value(c.wait), "seconds to wait for a (newer) version");
  if (full) {
    desc.add_options()("follow", po::value<std::uint64_t>(), "keep pulling the latest version until this one")(
        "layout", po::value(&c.layout)->default_value(c.layout),
        "pull this rank's boxes of every global tensor instead of the tensors as published: 'dim0' or 'dim1' "
        "(the reader's tensor-parallel cut), optionally ':PARTS' (default: one per pull rank); box i goes to rank "
        "i % ranks. With --check-pattern every element is checked")(
        "generate", po::value(&c.generate)->default_value(c.generate),
        "seconds to sleep between pulls (a rollout generating)")(
        "keep-going", po::bool_switch(&c.keep_going),
        "with --follow: a pull that fails (its holders died, coordinator unreachable) is reported and the "
        "next version is pulled")("hold", po::value(&c.hold)->default_value(c.hold),
                                  "seconds to keep relaying after the last pull")(
        "group", po::bool_switch(&c.group), "all pull ranks form one reading group and split the tensors")(
        "no-verify", po::bool_switch(), "skip checksum verification (relays still verify)")(
        "no-relay", po::bool_switch(), "do not serve what was pulled to later readers")(
        "check-pattern", po::bool_switch(&c.check_pattern),
        "also check the synthetic pattern of `publish --synthetic` (tests)")(
        "out", po::value(&c.out), "write the (last) version pulled to this HDF5 snapshot file");
  }
  desc.add_options()("overwrite", po::bool_switch(&c.overwrite), "replace an existing --out file")(
      "progress", po::bool_switch(&c.progress),
      "draw the progress line (on rank 0) even without a terminal, e.g. in a log; TENSORHUB_PROGRESS=0/1 "
      "sets the default")("json", po::value(&c.json), "write per-reader results as JSON to this file")(
      "memory", po::value(&c.memory)->default_value(c.memory), kMemoryHelp);
  c.hub.add_to(desc);
}

// --out is checked before anything is transferred (the writer checks again when it writes).
void check_out(const PullConfig& c) {
  if (c.out.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(c.out, ec);
  if (fs::is_directory(st)) throw UserError("--out " + c.out + " is a directory; give a file name");
  if (fs::exists(st) && !c.overwrite) throw UserError("--out " + c.out + " exists; pass --overwrite to replace it");
  auto parent = fs::path(c.out).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec))
    throw UserError("--out " + c.out + ": directory " + parent.string() + " does not exist");
}

}  // namespace

int cmd_pull(const Args& args) {
  PullConfig c;
  po::options_description desc(
      help_head("pull", "Readers pull from publishers or from earlier readers (relay); every chunk is verified.\n"));
  add_pull_options(desc, c, true);
  po::variables_map vm;
  if (!parse_options("pull", desc, args, vm)) return 0;
  c.hub.check();
  c.hub.device = device_for(parse_memory(c.memory));
  if (vm.count("follow")) c.follow = vm["follow"].as<std::uint64_t>();
  c.verify = !vm["no-verify"].as<bool>();
  c.relay = !vm["no-relay"].as<bool>();
  const auto want = parse_version(c.version);
  if (c.follow && want) throw UserError("--follow pulls the latest version; it cannot be combined with --version N");
  if (c.generate < 0 || !(c.wait > 0)) throw UserError("--generate must be >= 0 and --wait > 0");
  if (c.hold < 0) throw UserError("--hold must not be negative");
  if (c.keep_going && !c.follow) throw UserError("--keep-going needs --follow");
  if (parse_layout(c.layout).sliced() && (c.group || !c.out.empty())) {
    throw UserError("--layout pulls this rank's boxes; it cannot be combined with --group or --out");
  }
  check_out(c);
  return run_mpi_command("pull", [&](int) { return run_pull(c, Role::kPull); });
}

int cmd_snapshot_save(const Args& args) {
  PullConfig c;
  po::options_description desc(help_head(
      "snapshot save",
      "The ranks of this command read the version as one group and write the file together (parallel HDF5).\n"));
  add_pull_options(desc, c, false);
  desc.add_options()("out", po::value(&c.out)->required(), "snapshot file to write");
  po::variables_map vm;
  if (!parse_options("snapshot", desc, args, vm)) return 0;
  c.hub.check();
  c.hub.device = device_for(parse_memory(c.memory));
  parse_version(c.version);
  check_out(c);
  c.group = true;
  c.relay = false;
  return run_mpi_command("snapshot save", [&](int) { return run_pull(c, Role::kSnapshotSave); });
}

}  // namespace tensorhub::cli
