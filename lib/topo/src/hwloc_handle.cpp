#include "hwloc_handle.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include "tensorhub/core/error.hpp"
#include "tensorhub/topo/error.hpp"

namespace tensorhub::topo::detail {
namespace {

std::string errno_text(int err) { return err ? std::strerror(err) : "unknown error"; }

// The format version an hwloc XML export declares (<topology version="3.0">), read from the
// file's first 4 KiB; empty if none is found.
std::string declared_xml_version(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return {};
  char buf[4096];
  const auto n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  const std::string head(buf, n);
  constexpr std::string_view kTag = "<topology version=\"";
  const auto at = head.find(kTag);
  if (at == std::string::npos) return {};
  const auto start = at + kTag.size();
  const auto end = head.find('"', start);
  if (end == std::string::npos || end - start > 16) return {};
  return head.substr(start, end - start);
}

void check(int rc, const char* what) {
  if (rc != 0) throw Error(std::string("hwloc: ") + what + " failed: " + errno_text(errno));
}

}  // namespace

Hwloc::Hwloc() {
  if (hwloc_topology_init(&topo_) != 0) throw Error("hwloc: hwloc_topology_init failed: " + errno_text(errno));
}

Hwloc::~Hwloc() {
  if (topo_ != nullptr) hwloc_topology_destroy(topo_);
}

Hwloc::Hwloc(Hwloc&& other) noexcept : topo_(std::exchange(other.topo_, nullptr)) {}

Hwloc& Hwloc::operator=(Hwloc&& other) noexcept {
  if (this != &other) {
    if (topo_ != nullptr) hwloc_topology_destroy(topo_);
    topo_ = std::exchange(other.topo_, nullptr);
  }
  return *this;
}

Hwloc Hwloc::live(bool io) {
  Hwloc h;
  check(hwloc_topology_set_cache_types_filter(h.topo_, HWLOC_TYPE_FILTER_KEEP_NONE), "set_cache_types_filter");
  check(hwloc_topology_set_icache_types_filter(h.topo_, HWLOC_TYPE_FILTER_KEEP_NONE), "set_icache_types_filter");
  check(
      hwloc_topology_set_io_types_filter(h.topo_, io ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE),
      "set_io_types_filter");
  check(hwloc_topology_load(h.topo_), "hwloc_topology_load");
  return h;
}

Hwloc Hwloc::from_xml(const std::string& path) {
  // hwloc's own message for a missing file is generic; say which file and why first.
  const char* what = "cannot read hwloc XML topology";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw TopologyFileError(what, path, errno_text(errno));
  if (S_ISDIR(st.st_mode)) throw TopologyFileError(what, path, "is a directory");
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
  } else {
    throw TopologyFileError(what, path, errno_text(errno));
  }
  Hwloc h;
  check(hwloc_topology_set_io_types_filter(h.topo_, HWLOC_TYPE_FILTER_KEEP_ALL), "set_io_types_filter");
  // hwloc_topology_set_xml() already parses the file; load() builds the tree from it. Either
  // failing means the file is not an hwloc export (hwloc prints nothing unless
  // HWLOC_XML_VERBOSE=1 is set, which is the way to see why).
  if (hwloc_topology_set_xml(h.topo_, path.c_str()) != 0 || hwloc_topology_load(h.topo_) != 0) {
    const auto declared = declared_xml_version(path);
    const unsigned api = hwloc_get_api_version();
    const unsigned major = api >> 16;
    if (!declared.empty() && std::isdigit(static_cast<unsigned char>(declared[0])) &&
        std::strtoul(declared.c_str(), nullptr, 10) > major) {
      throw TopologyFileError("cannot load hwloc XML topology", path,
                              "hwloc XML format " + declared + " is newer than this hwloc (" + std::to_string(major) +
                                  "." + std::to_string((api >> 8) & 0xff) + "." + std::to_string(api & 0xff) +
                                  ") can read; export it with hwloc " + std::to_string(major) +
                                  ".x (`lstopo --of xml FILE`) or `hwloc-convert --xml-version " +
                                  std::to_string(major) + "` (hwloc >= 2.5 writes older formats too)");
    }
    throw TopologyFileError("cannot load hwloc XML topology", path,
                            "not a valid hwloc XML export (make one with `lstopo --of xml FILE`; "
                            "HWLOC_XML_VERBOSE=1 shows hwloc's reason)");
  }
  return h;
}

Bitmap::Bitmap() : bits_(hwloc_bitmap_alloc()) {
  if (bits_ == nullptr) throw std::bad_alloc();
}

Bitmap::~Bitmap() { hwloc_bitmap_free(bits_); }

}  // namespace tensorhub::topo::detail
