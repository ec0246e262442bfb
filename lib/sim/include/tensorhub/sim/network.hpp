// The simulated cluster: GPUs on hosts, hosts in racks, racks in datacenters; every link one
// direction with a capacity in bytes/s and a class (for the bytes-per-class report).
//   same host:   gpu -> NVLink out -> NVLink in -> gpu
//   same rack:   gpu -> NIC up -> NIC down -> gpu
//   other rack:  NIC up -> rack up (spine, oversubscribed) -> rack down -> NIC down
//   other DC:    NIC up -> rack up -> WAN (one per direction) -> rack down -> NIC down
// Storage servers (store-copy baseline) are extra nodes in rack 0 of DC 0 with their own NIC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tensorhub::sim {

enum class LinkClass : std::uint8_t { kNvlink, kNic, kSpine, kWan, kStorage };
const char* link_class_name(LinkClass c);

struct Link {
  double capacity = 0;  // bytes/s
  LinkClass cls = LinkClass::kNic;
  double bytes = 0;  // carried so far (the simulator adds)
};

struct TopologyConfig {
  std::uint32_t dcs = 1;
  std::uint32_t racks_per_dc = 1;
  std::uint32_t hosts_per_rack = 1;
  std::uint32_t gpus_per_host = 1;
  double nic_gbps = 400;      // per GPU, each direction
  double nvlink_gbps = 3600;  // per GPU, each direction (450 GB/s)
  double oversub = 1;         // rack uplink = hosts_per_rack x gpus x nic / oversub
  double wan_gbps = 100;      // between DC 0 and DC 1, each direction
  std::uint32_t storage = 0;  // storage servers
  double storage_gbps = 400;  // NIC of one storage server
  double goodput = 1;         // payload share of the wire rate (TCP/IP headers), 0 < g <= 1
};

struct Node {
  std::uint32_t dc = 0, rack = 0, host = 0, gpu = 0;  // host: global index
  bool storage = false;
  int nic_up = -1, nic_down = -1, nvl_up = -1, nvl_down = -1;
};

class Network {
 public:
  explicit Network(const TopologyConfig& config);

  std::uint32_t gpus() const { return gpus_; }
  // Node id of GPU `gpu` of global host `host`; storage server `i` is node gpus() + i.
  std::uint32_t gpu_node(std::uint32_t host, std::uint32_t gpu) const;
  std::uint32_t storage_node(std::uint32_t i) const;
  const Node& node(std::uint32_t id) const { return nodes_.at(id); }
  std::uint32_t nodes() const { return static_cast<std::uint32_t>(nodes_.size()); }
  // Links from `src` to `dst` (src != dst).
  std::vector<int> path(std::uint32_t src, std::uint32_t dst) const;
  std::vector<Link>& links() { return links_; }
  const std::vector<Link>& links() const { return links_; }
  const TopologyConfig& config() const { return config_; }
  // Host / rack / dc label strings, as a worker registers them.
  std::string host_label(std::uint32_t id) const;
  std::string rack_label(std::uint32_t id) const;
  std::string dc_label(std::uint32_t id) const;

 private:
  int add_link(double capacity, LinkClass cls);

  TopologyConfig config_;
  std::uint32_t gpus_ = 0;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<int> rack_up_, rack_down_;  // by global rack
  int wan_[2] = {-1, -1};                 // DC 0 -> 1, DC 1 -> 0
};

}  // namespace tensorhub::sim
