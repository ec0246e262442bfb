#include "tensorhub/sim/network.hpp"

#include "tensorhub/core/error.hpp"

namespace tensorhub::sim {

const char* link_class_name(LinkClass c) {
  switch (c) {
    case LinkClass::kNvlink:
      return "nvlink";
    case LinkClass::kNic:
      return "nic";
    case LinkClass::kSpine:
      return "spine";
    case LinkClass::kWan:
      return "wan";
    case LinkClass::kStorage:
      return "storage";
  }
  return "?";
}

namespace {
double bytes_per_s(double gbps, double goodput) { return gbps * 1e9 / 8 * goodput; }
}  // namespace

Network::Network(const TopologyConfig& c) : config_(c) {
  if (c.dcs < 1 || c.dcs > 2) throw UserError("sim topology: 1 or 2 datacenters (got " + std::to_string(c.dcs) + ")");
  if (c.racks_per_dc == 0 || c.hosts_per_rack == 0 || c.gpus_per_host == 0)
    throw UserError("sim topology: racks, hosts per rack and GPUs per host must be positive");
  if (!(c.nic_gbps > 0) || !(c.nvlink_gbps > 0) || !(c.oversub >= 1) || !(c.wan_gbps > 0) || !(c.storage_gbps > 0) ||
      !(c.goodput > 0 && c.goodput <= 1))
    throw UserError("sim topology: rates must be positive, oversubscription >= 1, 0 < goodput <= 1");
  const double g = c.goodput;
  const std::uint32_t racks = c.dcs * c.racks_per_dc;
  const double rack_rate = bytes_per_s(c.nic_gbps, g) * c.hosts_per_rack * c.gpus_per_host / c.oversub;
  for (std::uint32_t r = 0; r < racks; ++r) {
    rack_up_.push_back(add_link(rack_rate, LinkClass::kSpine));
    rack_down_.push_back(add_link(rack_rate, LinkClass::kSpine));
  }
  if (c.dcs == 2) {
    wan_[0] = add_link(bytes_per_s(c.wan_gbps, g), LinkClass::kWan);
    wan_[1] = add_link(bytes_per_s(c.wan_gbps, g), LinkClass::kWan);
  }
  std::uint32_t host = 0;
  for (std::uint32_t r = 0; r < racks; ++r) {
    for (std::uint32_t h = 0; h < c.hosts_per_rack; ++h, ++host) {
      for (std::uint32_t k = 0; k < c.gpus_per_host; ++k) {
        Node n{r / c.racks_per_dc, r, host, k, false};
        n.nic_up = add_link(bytes_per_s(c.nic_gbps, g), LinkClass::kNic);
        n.nic_down = add_link(bytes_per_s(c.nic_gbps, g), LinkClass::kNic);
        n.nvl_up = add_link(bytes_per_s(c.nvlink_gbps, 1), LinkClass::kNvlink);
        n.nvl_down = add_link(bytes_per_s(c.nvlink_gbps, 1), LinkClass::kNvlink);
        nodes_.push_back(n);
      }
    }
  }
  gpus_ = static_cast<std::uint32_t>(nodes_.size());
  for (std::uint32_t i = 0; i < c.storage; ++i) {
    Node n{0, 0, host + i, 0, true};
    n.nic_up = add_link(bytes_per_s(c.storage_gbps, g), LinkClass::kStorage);
    n.nic_down = add_link(bytes_per_s(c.storage_gbps, g), LinkClass::kStorage);
    nodes_.push_back(n);
  }
}

int Network::add_link(double capacity, LinkClass cls) {
  links_.push_back(Link{capacity, cls, 0});
  return static_cast<int>(links_.size()) - 1;
}

std::uint32_t Network::gpu_node(std::uint32_t host, std::uint32_t gpu) const {
  const std::uint32_t id = host * config_.gpus_per_host + gpu;
  if (gpu >= config_.gpus_per_host || id >= gpus_) throw ContractViolation("sim: no GPU " + std::to_string(id));
  return id;
}

std::uint32_t Network::storage_node(std::uint32_t i) const {
  if (i >= config_.storage) throw ContractViolation("sim: no storage server " + std::to_string(i));
  return gpus_ + i;
}

std::vector<int> Network::path(std::uint32_t src, std::uint32_t dst) const {
  const Node& a = nodes_.at(src);
  const Node& b = nodes_.at(dst);
  if (src == dst) throw ContractViolation("sim: a path from a node to itself");
  if (a.host == b.host && !a.storage && !b.storage) return {a.nvl_up, b.nvl_down};
  if (a.rack == b.rack) return {a.nic_up, b.nic_down};
  if (a.dc == b.dc) return {a.nic_up, rack_up_[a.rack], rack_down_[b.rack], b.nic_down};
  return {a.nic_up, rack_up_[a.rack], wan_[a.dc], rack_down_[b.rack], b.nic_down};
}

std::string Network::host_label(std::uint32_t id) const { return "h" + std::to_string(nodes_.at(id).host); }
std::string Network::rack_label(std::uint32_t id) const { return "r" + std::to_string(nodes_.at(id).rack); }
std::string Network::dc_label(std::uint32_t id) const { return "dc" + std::to_string(nodes_.at(id).dc); }

}  // namespace tensorhub::sim
