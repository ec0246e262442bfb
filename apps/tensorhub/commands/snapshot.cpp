// tensorhub snapshot save|load|verify|inspect. `inspect` and `verify` read a file and need no
// MPI; `save` and `load` join a hub (see commands/pull.cpp and commands/publish.cpp).
#include "tensorhub/snapshot/snapshot.hpp"

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "common/command_table.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "common/report.hpp"
#include "tensorhub/core/manifest_json.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub::cli {
namespace {

constexpr const char* kIntro = R"(usage: tensorhub snapshot <save|load|verify|inspect> [options]

The format is described in share/doc/snapshot-format.md; files open in h5dump and h5py.
)";

struct FileArgs {
  std::string file;
  bool json = false;
};

bool parse_file_args(const char* sub, const Args& args, FileArgs& f) {
  po::options_description desc(help_head(std::string("snapshot ") + sub));
  desc.add_options()("file", po::value(&f.file)->required(), "snapshot file (positional)")(
      "json", po::bool_switch(&f.json), "print the result as JSON");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  return parse_options("snapshot", desc, args, vm, &pos);
}

}  // namespace

int cmd_snapshot_inspect(const Args& args) {
  FileArgs f;
  if (!parse_file_args("inspect", args, f)) return 0;
  const auto info = snapshot::inspect(f.file);
  const Manifest& m = info.manifest;
  if (f.json) {
    // 64-bit checksums as 16 hex digits: JSON readers that hold numbers as doubles (jq,
    // JavaScript) would round them. (The file's own manifest keeps integers.)
    auto manifest = nlohmann::json::parse(manifest_to_json(m));
    for (auto& t : manifest["tensors"]) {
      for (auto& c : t["checksums"]) {
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(c.get<std::uint64_t>()));
        c = std::string(hex);
      }
    }
    nlohmann::json j{{"path", info.path},
                     {"format_version", info.format_version},
                     {"created_by", info.created_by},
                     {"created_at", info.created_at},
                     {"file_bytes", info.file_bytes},
                     {"manifest", std::move(manifest)}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%s: '%s' v%llu, %zu tensors, %s, %zu chunks of %s (%s sums), format %u, written by %s at %s\n",
              info.path.c_str(), m.model.c_str(), static_cast<unsigned long long>(m.version), m.tensors.size(),
              format_bytes(m.total_bytes()).c_str(), m.chunks.size(), format_bytes(m.chunk_bytes).c_str(),
              std::string(checksum_algorithm_name(m.checksum_algorithm)).c_str(), info.format_version,
              info.created_by.c_str(), info.created_at.c_str());
  Table t({"tensor", "dtype", "shape", "bytes", "chunks", "shard"});
  for (const auto& e : m.tensors) {
    std::string shape = "[";
    for (std::size_t i = 0; i < e.spec.shape.size(); ++i) {
      if (i > 0) shape += ',';
      shape += std::to_string(e.spec.shape[i]);
    }
    t.add({e.spec.name, std::string(dtype_name(e.spec.dtype)), shape + "]", format_bytes(e.spec.bytes()),
           std::to_string(e.num_chunks), std::to_string(e.shard)});
  }
  t.print(stdout);
  return 0;
}

int cmd_snapshot_verify(const Args& args) {
  FileArgs f;
  if (!parse_file_args("verify", args, f)) return 0;
  ProgressLine bar("verifying " + f.file, !f.json);
  const auto report =
      snapshot::verify(f.file, [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); });
  bar.finish();
  if (f.json) {
    std::cout << nlohmann::json{{"path", f.file},
                                {"chunks", report.chunks},
                                {"bytes", report.bytes},
                                {"ok", report.ok()},
                                {"mismatches", report.mismatches}}
                     .dump(2)
              << "\n";
  } else {
    for (const auto& m : report.mismatches) std::printf("mismatch: %s\n", m.c_str());
    std::printf(
        "%s: %llu chunks, %s checked: %s\n", f.file.c_str(), static_cast<unsigned long long>(report.chunks),
        format_bytes(report.bytes).c_str(),
        report.ok() ? "all checksums match" : (std::to_string(report.mismatches.size()) + " mismatches").c_str());
  }
  return report.ok() ? 0 : 5;
}

int cmd_snapshot(const Args& args) { return dispatch("tensorhub snapshot", kIntro, snapshot_commands(), args); }

}  // namespace tensorhub::cli
