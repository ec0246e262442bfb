// The text form of a list of (path name, string) pairs: how the `multi` transport hands out its
// endpoint (one endpoint per data path) and its region descriptors (one descriptor per path that
// exposed the region). The coordinator stores both as opaque strings.
//
//   "paths1;" ( <name> "=" <length, decimal> ":" <value> ";" )+
//
// <name> is 1..32 characters of [a-z0-9_] (a backend's Transport::name()), each name at most once,
// at most kMaxPaths pairs; <value> is <length> bytes of anything. Input from the network: decode
// checks every field and the total size and throws TransportError on anything else.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tensorhub::transport::multi {

inline constexpr std::string_view kPathListPrefix = "paths1;";
inline constexpr std::size_t kMaxPaths = 8;
inline constexpr std::size_t kMaxPathName = 32;

struct PathEntry {
  std::string name;
  std::string value;
};
using PathList = std::vector<PathEntry>;

// Throws TransportError for an invalid name, a duplicate, too many entries or a result longer
// than `max_bytes`.
std::string encode_path_list(const PathList& list, std::size_t max_bytes);
// `what` names the text in errors ("endpoint", "region descriptor").
PathList decode_path_list(std::string_view text, std::size_t max_bytes, std::string_view what);
// Cheap check: does `text` start like a path list?
bool is_path_list(std::string_view text) noexcept;
// "mpi_rma, ucx".
std::string path_names(const PathList& list);

}  // namespace tensorhub::transport::multi
