// UCX's TCP transport sends an active message longer than its TX segment (8 KiB by default) as
// fragments that the receiver first reassembles into a buffer of its own (src/ucp/am/eager_multi.c
// in UCX 1.13): one more copy of every byte than a one-fragment message, which the handler gets
// straight from the transport's receive buffer. So TensorHub raises both TCP segments to 256 KiB
// where the user set neither (UCX_TCP_TX_SEG_SIZE / UCX_TCP_RX_SEG_SIZE), and asks for read pieces
// that fit one TX segment (am_reads.hpp). Measured in share/doc/transport-ucx.md ("Performance").
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace tensorhub::transport::ucx {

inline constexpr std::uint64_t kTcpSegmentDefault = 256ull << 10;
// Room for the UCT, UCP and reply headers of one fragment (about 40 bytes in UCX 1.13).
inline constexpr std::uint64_t kAmFragmentSlack = 1ull << 10;
// Below this TX segment, pieces of one fragment cost more in per-message overhead than the copy
// they save; pieces are then kAmLargePiece.
inline constexpr std::uint64_t kAmSmallestFragmentPiece = 64ull << 10;
inline constexpr std::uint64_t kAmLargePiece = 4ull << 20;

// A UCX memory-units value ("8192", "8kb", "256K", "1m"); nullopt for anything else ("inf", "auto",
// a typo: UCX reports those itself).
std::optional<std::uint64_t> parse_ucx_memunits(std::string_view text);

// The TCP TX segment this process's UCX uses: the user's UCX_TCP_TX_SEG_SIZE, else ours when the
// user set neither segment, else UCX's own 8 KiB default; nullopt when the user's value does not parse.
std::optional<std::uint64_t> tcp_tx_segment();

// Sets both TCP segments in `config` to kTcpSegmentDefault unless the user set either (setting only
// one could break UCX's rule that RX >= TX). Throws TransportError if UCX refuses.
void apply_tcp_segment_defaults(ucp_config_t* config);

// The read piece for TENSORHUB_UCX_AM_PIECE unset: one TX segment less kAmFragmentSlack when that
// is at least kAmSmallestFragmentPiece, else kAmLargePiece.
std::uint64_t default_am_piece();

}  // namespace tensorhub::transport::ucx
