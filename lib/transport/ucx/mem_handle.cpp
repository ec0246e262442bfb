#include "mem_handle.hpp"

#include <cstring>
#include <string>

#include "status.hpp"

namespace tensorhub::transport::ucx {

MemHandle::MemHandle(const Context& context, void* base, std::uint64_t bytes, ucs_memory_type_t type)
    : context_(context.get()) {
  ucp_mem_map_params_t params{};
  params.field_mask =
      UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  params.address = base;
  params.length = bytes;
  params.memory_type = type;
  check(ucp_mem_map(context_, &params, &memh_), "ucp_mem_map", std::to_string(bytes) + " bytes");
}

MemHandle::~MemHandle() { (void)ucp_mem_unmap(context_, memh_); }

std::vector<std::byte> MemHandle::packed_rkey() const {
  void* buffer = nullptr;
  std::size_t length = 0;
  check(ucp_rkey_pack(context_, memh_, &buffer, &length), "ucp_rkey_pack");
  std::vector<std::byte> out(length);
  std::memcpy(out.data(), buffer, length);
  ucp_rkey_buffer_release(buffer);
  return out;
}

}  // namespace tensorhub::transport::ucx
