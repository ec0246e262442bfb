#include "lanes.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace tensorhub::transport::ucx {
namespace {

bool is_rma_role(std::string_view word) {
  return word == "rma" || word.starts_with("rma#") || word.starts_with("rma_bw#");
}

}  // namespace

bool lanes_have_rma(std::string_view ep_info) {
  while (!ep_info.empty()) {
    const auto eol = ep_info.find('\n');
    std::string_view line = ep_info.substr(0, eol);
    ep_info = eol == std::string_view::npos ? std::string_view{} : ep_info.substr(eol + 1);
    const auto lane = line.find("lane[");
    const auto arrow = line.find("->");
    if (lane == std::string_view::npos || arrow == std::string_view::npos || arrow < lane) continue;
    // Roles follow the remote resource: "-> md[1]/tcp/sysdev[255] am am_bw#0 keepalive".
    std::string_view roles = line.substr(arrow + 2);
    bool first = true;  // the remote resource itself
    while (!roles.empty()) {
      const auto start = roles.find_first_not_of(" \t");
      if (start == std::string_view::npos) break;
      roles = roles.substr(start);
      const auto end = roles.find_first_of(" \t");
      const std::string_view word = roles.substr(0, end);
      if (!first && is_rma_role(word)) return true;
      first = false;
      roles = end == std::string_view::npos ? std::string_view{} : roles.substr(end);
    }
  }
  return false;
}

bool rma_in_hardware(ucp_ep_h ep) {
  char* text = nullptr;
  std::size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return false;
  ucp_ep_print_info(ep, stream);
  const bool closed = std::fclose(stream) == 0;
  const std::unique_ptr<char, decltype(&std::free)> owned(text, &std::free);
  return closed && text != nullptr && lanes_have_rma(std::string_view(text, size));
}

}  // namespace tensorhub::transport::ucx
