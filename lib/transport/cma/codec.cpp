#include "codec.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::transport::cma {
namespace {

constexpr std::string_view kPrefix = "cma:";
constexpr std::uint64_t kMaxPid = 1u << 22;  // PID_MAX_LIMIT

TransportError malformed(std::string_view what, std::string_view text) {
  constexpr std::size_t kShown = 80;
  std::string shown(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return TransportError("malformed cma " + std::string(what) + " '" + shown + "'");
}

// The ':'-separated fields after the prefix; exactly `n` of them, none empty.
bool split(std::string_view text, std::size_t n, std::vector<std::string_view>& out) {
  if (!text.starts_with(kPrefix) || text.size() > limits::kMaxEndpointBytes) return false;
  text.remove_prefix(kPrefix.size());
  out.clear();
  for (;;) {
    const auto colon = text.find(':');
    out.push_back(text.substr(0, colon));
    if (out.back().empty() || out.size() > n) return false;
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  return out.size() == n;
}

bool number(std::string_view s, std::uint64_t& v, int base = 10) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

std::string hex(std::uint64_t v) {
  std::array<char, 16> b{};
  const auto r = std::to_chars(b.data(), b.data() + b.size(), v, 16);
  return std::string(b.data(), r.ptr);
}

bool boot_id_ok(std::string_view id) {
  return id.size() == 36 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
         });
}

}  // namespace

std::string encode_endpoint(const EndpointText& e) {
  return std::string(kPrefix) + e.host.hostname + ":" + e.host.boot_id + ":" + std::to_string(e.host.pid_ns) + ":" +
         std::to_string(e.pid) + ":" + std::to_string(e.start_time) + ":" + hex(e.table) + ":" +
         std::to_string(e.slots);
}

bool looks_like_endpoint(std::string_view endpoint) noexcept { return endpoint.starts_with(kPrefix); }

EndpointText decode_endpoint(std::string_view text) {
  std::vector<std::string_view> f;
  if (!split(text, 7, f)) throw malformed("endpoint", text);
  EndpointText e;
  std::uint64_t pid = 0, slots = 0;
  if (f[0].size() > limits::kMaxHostNameBytes || !boot_id_ok(f[1]) || !number(f[2], e.host.pid_ns) ||
      !number(f[3], pid) || pid == 0 || pid > kMaxPid || !number(f[4], e.start_time) || !number(f[5], e.table, 16) ||
      e.table == 0 || e.table >= kMaxAddress || e.table % 8 != 0 || !number(f[6], slots) || slots == 0 ||
      slots > kMaxSlots || e.table + slots * 8 > kMaxAddress) {
    throw malformed("endpoint", text);
  }
  e.host.hostname = std::string(f[0]);
  e.host.boot_id = std::string(f[1]);
  e.pid = static_cast<pid_t>(pid);
  e.slots = static_cast<std::uint32_t>(slots);
  return e;
}

std::string encode_descriptor(const DescriptorText& d) {
  return std::string(kPrefix) + hex(d.address) + ":" + std::to_string(d.bytes) + ":" + std::to_string(d.slot) + ":" +
         hex(d.generation);
}

DescriptorText decode_descriptor(std::string_view text) {
  std::vector<std::string_view> f;
  if (!split(text, 4, f)) throw malformed("descriptor", text);
  DescriptorText d;
  std::uint64_t slot = 0;
  if (!number(f[0], d.address, 16) || d.address >= kMaxAddress || !number(f[1], d.bytes) ||
      d.bytes > kMaxAddress - d.address || !number(f[2], slot) || slot >= kMaxSlots ||
      !number(f[3], d.generation, 16) || d.generation == 0) {
    throw malformed("descriptor", text);
  }
  d.slot = static_cast<std::uint32_t>(slot);
  return d;
}

std::string label(const EndpointText& e) { return e.host.hostname + "/" + std::to_string(e.pid); }

}  // namespace tensorhub::transport::cma
