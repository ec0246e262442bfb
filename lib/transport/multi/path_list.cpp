#include "path_list.hpp"

#include <algorithm>
#include <charconv>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::multi {
namespace {

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > kMaxPathName) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

TransportError malformed(std::string_view what, std::string_view text, const std::string& why) {
  constexpr std::size_t kShown = 80;
  std::string shown(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return TransportError("malformed multi-path " + std::string(what) + " '" + shown + "': " + why);
}

bool listed(const PathList& list, std::string_view name, std::size_t before) {
  return std::any_of(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(before),
                     [&](const PathEntry& e) { return e.name == name; });
}

}  // namespace

std::string encode_path_list(const PathList& list, std::size_t max_bytes) {
  if (list.empty() || list.size() > kMaxPaths) {
    throw TransportError("a multi-path list holds 1 to " + std::to_string(kMaxPaths) + " paths, not " +
                         std::to_string(list.size()));
  }
  std::string out(kPathListPrefix);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    if (!valid_name(e.name)) throw TransportError("invalid data path name '" + e.name + "'");
    if (listed(list, e.name, i)) throw TransportError("data path '" + e.name + "' listed twice");
    out += e.name + "=" + std::to_string(e.value.size()) + ":" + e.value + ";";
  }
  if (out.size() > max_bytes) {
    throw TransportError("multi-path list of " + path_names(list) + " is " + std::to_string(out.size()) +
                         " bytes (at most " + std::to_string(max_bytes) + ")");
  }
  return out;
}

PathList decode_path_list(std::string_view text, std::size_t max_bytes, std::string_view what) {
  if (text.size() > max_bytes) {
    throw malformed(what, text, std::to_string(text.size()) + " bytes (at most " + std::to_string(max_bytes) + ")");
  }
  if (!is_path_list(text)) throw malformed(what, text, "no '" + std::string(kPathListPrefix) + "' prefix");
  PathList out;
  std::string_view rest = text.substr(kPathListPrefix.size());
  while (!rest.empty()) {
    if (out.size() == kMaxPaths) throw malformed(what, text, "more than " + std::to_string(kMaxPaths) + " paths");
    const auto eq = rest.find('=');
    if (eq == std::string_view::npos) throw malformed(what, text, "a path without '='");
    const auto name = rest.substr(0, eq);
    if (!valid_name(name)) throw malformed(what, text, "invalid path name");
    if (listed(out, name, out.size())) throw malformed(what, text, "path '" + std::string(name) + "' listed twice");
    rest.remove_prefix(eq + 1);
    std::size_t len = 0;
    const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), len);
    if (ec != std::errc{} || ptr == rest.data() || ptr == rest.data() + rest.size() || *ptr != ':') {
      throw malformed(what, text, "bad length of path '" + std::string(name) + "'");
    }
    rest.remove_prefix(static_cast<std::size_t>(ptr - rest.data()) + 1);
    if (len > rest.size() || len + 1 > rest.size() || rest[len] != ';') {
      throw malformed(what, text, "path '" + std::string(name) + "' is cut short");
    }
    out.push_back(PathEntry{std::string(name), std::string(rest.substr(0, len))});
    rest.remove_prefix(len + 1);
  }
  if (out.empty()) throw malformed(what, text, "no path");
  return out;
}

bool is_path_list(std::string_view text) noexcept { return text.starts_with(kPathListPrefix); }

std::string path_names(const PathList& list) {
  std::string out;
  for (const auto& e : list) out += (out.empty() ? "" : ", ") + e.name;
  return out.empty() ? "none" : out;
}

}  // namespace tensorhub::transport::multi
