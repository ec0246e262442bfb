// tensorhub recover: find versions that lost every holder of some chunk and make them readable
// again from HDF5 snapshots. A snapshot is registered with the coordinator as a *file
// reference* (the hub still stores no bytes); readers then read the file directly. With --seed,
// snapshots of versions the coordinator does not know at all (e.g. after it restarted) are
// registered too: a cold start. No MPI.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/hub_state.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::cli {
namespace {

namespace fs = std::filesystem;

// <dir>/<model>/v<version>.h5, the layout retention offload writes (HubOptions::snapshot_dir).
fs::path snapshot_path(const fs::path& dir, const std::string& model, std::uint64_t version) {
  return dir / model / ("v" + std::to_string(version) + ".h5");
}

// Every v<N>.h5 under <dir>/<model>/.
std::map<std::pair<std::string, std::uint64_t>, fs::path> scan(const fs::path& dir) {
  std::map<std::pair<std::string, std::uint64_t>, fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UserError("snapshot directory '" + dir.string() + "' does not exist");
  for (const auto& m : fs::directory_iterator(dir)) {
    if (!m.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(m.path())) {
      const auto name = f.path().filename().string();
      if (name.size() < 5 || name[0] != 'v' || f.path().extension() != ".h5") continue;
      try {
        std::size_t pos = 0;
        const auto stem = f.path().stem().string().substr(1);
        const auto v = std::stoull(stem, &pos);
        if (pos == stem.size()) out[{m.path().filename().string(), v}] = fs::absolute(f.path());
      } catch (const std::exception&) {
      }
    }
  }
  return out;
}

}  // namespace

int cmd_recover(const Args& args) {
  std::string hub;
  std::string dir;
  double deadline = 10;
  bool seed = false;
  bool dry_run = false;
  bool json = false;
  po::options_description desc(
      help_head("recover",
                "Snapshots are looked up as <snapshot-dir>/<model>/v<version>.h5 (where retention writes them).\n"
                "Exit code 0 when nothing is left lost, 3 when some lost version has no usable snapshot.\n"));
  desc.add_options()("hub", po::value(&hub), "coordinator host:port (or TENSORHUB_HUB)")(
      "snapshot-dir", po::value(&dir), "directory of snapshots (or TENSORHUB_SNAPSHOT_DIR)")(
      "seed", po::bool_switch(&seed), "also register snapshots of versions the hub does not know (cold start)")(
      "dry-run", po::bool_switch(&dry_run), "only report what would be done")(
      "rpc-deadline", po::value(&deadline)->default_value(deadline), "seconds to wait for the coordinator")(
      "json", po::bool_switch(&json), "print JSON");
  po::variables_map vm;
  if (!parse_options("recover", desc, args, vm)) return 0;
  const auto client = connect_hub(hub, deadline);
  const auto files = dir.empty() ? decltype(scan(dir)){} : scan(dir);

  nlohmann::json actions = nlohmann::json::array();
  Table t({"model", "version", "was", "action", "snapshot"});
  std::size_t still_lost = 0;
  std::set<std::pair<std::string, std::uint64_t>> known;
  auto attach = [&](const std::string& model, std::uint64_t v, const fs::path& path, const std::string& was) {
    std::string action;
    try {
      const auto info = snapshot::inspect(path.string());
      if (info.manifest.model != model || info.manifest.version != v) {
        throw snapshot::SnapshotError(path.string() + " holds '" + info.manifest.model + "' v" +
                                      std::to_string(info.manifest.version) + ", not '" + model + "' v" +
                                      std::to_string(v));
      }
      if (!dry_run) client->attach_snapshot(path.string(), info.manifest);
      action = dry_run ? "would attach" : "attached: readable from the file";
    } catch (const UserError& e) {
      action = std::string("failed: ") + e.what();
      if (was == "LOST") ++still_lost;
    }
    t.add({model, std::to_string(v), was, action, path.string()});
    actions.push_back(
        {{"model", model}, {"version", v}, {"was", was}, {"action", action}, {"snapshot", path.string()}});
  };

  for (const auto& m : client->status()) {
    for (const auto& v : m.versions) {
      known.insert({m.model, v.version});
      if (!version_lost(v)) continue;
      const auto f = files.find({m.model, v.version});
      if (f == files.end()) {
        ++still_lost;
        const std::string why =
            dir.empty() ? "no --snapshot-dir given" : "no snapshot " + snapshot_path(dir, m.model, v.version).string();
        t.add({m.model, std::to_string(v.version), "LOST", why, "-"});
        actions.push_back({{"model", m.model}, {"version", v.version}, {"was", "LOST"}, {"action", why}});
        continue;
      }
      attach(m.model, v.version, f->second, "LOST");
    }
  }
  if (seed) {
    for (const auto& [key, path] : files) {
      if (!known.count(key)) attach(key.first, key.second, path, "unknown");
    }
  }
  if (json) {
    std::cout << nlohmann::json{{"hub", hub}, {"actions", actions}, {"still_lost", still_lost}}.dump(2) << "\n";
  } else if (actions.empty()) {
    std::printf("hub %s: no lost versions%s\n", hub.c_str(), seed ? " and no unknown snapshots" : "");
  } else {
    t.print(stdout);
    std::printf("%zu lost version(s) left without a usable snapshot\n", still_lost);
  }
  return still_lost == 0 ? 0 : 3;
}

}  // namespace tensorhub::cli
