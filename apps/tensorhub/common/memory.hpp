// --memory host|cuda of publish, pull and demo: where the command's tensors live. cuda = device
// memory of the hub's device (HubOptions::device: TENSORHUB_DEVICE, else "auto": a GPU when one
// is visible, else the emulated device, whose figures are CPU figures). The synthetic pattern
// is written and checked in a host Arena and copied to and from the device tensors.
#pragma once

#include <boost/program_options.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/synthetic.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub::cli {

// The --help text of --memory.
extern const char* const kMemoryHelp;
// "host" or "cuda"; UserError otherwise.
MemoryKind parse_memory(const std::string& flag);
// What HubOptions::device should be for `memory`: "" for host, else TENSORHUB_DEVICE or "auto".
std::string device_for(MemoryKind memory);

// Device tensors laid out like `host` in one allocation of the hub's device (freed at close).
class DeviceMirror {
 public:
  DeviceMirror(Hub& hub, const Arena& host);
  std::span<const Tensor> tensors() const { return tensors_; }
  void upload(const Arena& host);  // host -> device, the whole arena
  void download(Arena& host);      // device -> host

 private:
  Hub& hub_;
  void* base_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace tensorhub::cli
