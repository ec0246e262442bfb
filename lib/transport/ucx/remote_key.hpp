// RAII for ucp_rkey_h: a peer's packed remote key unpacked for one endpoint.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <span>
#include <string_view>

namespace tensorhub::transport::ucx {

class RemoteKey {
 public:
  RemoteKey(ucp_ep_h ep, std::span<const std::byte> packed, std::string_view peer_name);
  ~RemoteKey();
  RemoteKey(const RemoteKey&) = delete;
  RemoteKey& operator=(const RemoteKey&) = delete;

  ucp_rkey_h get() const { return rkey_; }

 private:
  ucp_rkey_h rkey_ = nullptr;
};

}  // namespace tensorhub::transport::ucx
