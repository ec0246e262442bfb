#include "tcp_segments.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>

#include "status.hpp"

namespace tensorhub::transport::ucx {
namespace {

constexpr const char* kTxVariable = "UCX_TCP_TX_SEG_SIZE";
constexpr const char* kRxVariable = "UCX_TCP_RX_SEG_SIZE";
constexpr std::uint64_t kUcxTxDefault = 8ull << 10;  // tcp_iface.c, "TX_SEG_SIZE"

bool set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

std::optional<std::uint64_t> parse_ucx_memunits(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end == text.data()) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (!unit.empty() && (unit.back() == 'b' || unit.back() == 'B')) unit.remove_suffix(1);
  unsigned shift = 0;
  if (unit.size() == 1) {
    switch (std::tolower(static_cast<unsigned char>(unit[0]))) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      default:
        return std::nullopt;
    }
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<std::uint64_t> tcp_tx_segment() {
  if (set(kTxVariable)) return parse_ucx_memunits(std::getenv(kTxVariable));
  return set(kRxVariable) ? kUcxTxDefault : kTcpSegmentDefault;
}

void apply_tcp_segment_defaults(ucp_config_t* config) {
  if (set(kTxVariable) || set(kRxVariable)) return;
  // Unknown to UCP itself, so kept and applied to every transport's configuration that has the
  // field (only tcp's: src/ucp/core/ucp_context.c, ucp_apply_uct_config_list).
  const std::string value = std::to_string(kTcpSegmentDefault);
  check(ucp_config_modify(config, "TX_SEG_SIZE", value.c_str()), "ucp_config_modify", "TX_SEG_SIZE");
  check(ucp_config_modify(config, "RX_SEG_SIZE", value.c_str()), "ucp_config_modify", "RX_SEG_SIZE");
}

std::uint64_t default_am_piece() {
  const auto tx = tcp_tx_segment();
  if (!tx || *tx < kAmSmallestFragmentPiece) return kAmLargePiece;
  return *tx - kAmFragmentSlack;
}

}  // namespace tensorhub::transport::ucx
