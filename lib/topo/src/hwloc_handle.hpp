// RAII over hwloc 2.x handles (private to lib/topo: no public header includes hwloc.h).
#pragma once

#include <hwloc.h>

#include <string>

namespace tensorhub::topo::detail {

// An owned, loaded hwloc topology (move-only).
class Hwloc {
 public:
  // This machine. With `io`, PCI bridges, PCI devices and OS devices that matter (GPUs, NICs,
  // disks) are kept; caches are dropped either way. Throws tensorhub::Error.
  static Hwloc live(bool io);
  // An hwloc XML export, with every I/O object it holds. Throws TopologyFileError.
  static Hwloc from_xml(const std::string& path);

  ~Hwloc();
  Hwloc(Hwloc&& other) noexcept;
  Hwloc& operator=(Hwloc&& other) noexcept;
  Hwloc(const Hwloc&) = delete;
  Hwloc& operator=(const Hwloc&) = delete;

  hwloc_topology_t get() const { return topo_; }

 private:
  Hwloc();  // hwloc_topology_init; throws
  hwloc_topology_t topo_ = nullptr;
};

// An owned hwloc bitmap (cpuset or nodeset).
class Bitmap {
 public:
  Bitmap();  // throws std::bad_alloc
  ~Bitmap();
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  hwloc_bitmap_t get() const { return bits_; }

 private:
  hwloc_bitmap_t bits_;
};

}  // namespace tensorhub::topo::detail
