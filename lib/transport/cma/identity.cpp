#include "identity.hpp"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::cma {
namespace {

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

}  // namespace

HostIdentity local_host() {
  HostIdentity h;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  h.hostname = host.data();
  for (auto& c : h.hostname) {
    if (c == ':' || std::isspace(static_cast<unsigned char>(c))) c = '_';
  }
  if (h.hostname.empty()) h.hostname = "_";
  const auto boot = read_line("/proc/sys/kernel/random/boot_id");
  if (!boot || boot->size() != 36) throw TransportError("cma: cannot read /proc/sys/kernel/random/boot_id");
  h.boot_id = *boot;
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) != 0) {
    throw TransportError(std::string("cma: cannot stat /proc/self/ns/pid: ") + std::strerror(errno));
  }
  h.pid_ns = static_cast<std::uint64_t>(st.st_ino);
  return h;
}

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; fields follow the last ')'.
  const auto close = s.rfind(')');
  if (!in || close == std::string::npos) return std::nullopt;
  std::size_t pos = close + 1;
  for (int field = 3; field < 22; ++field) {  // skip to field 22 (starttime)
    pos = s.find(' ', pos + 1);
    if (pos == std::string::npos) return std::nullopt;
  }
  std::uint64_t start = 0;
  const char* b = s.data() + pos + 1;
  const auto r = std::from_chars(b, s.data() + s.size(), start);
  if (r.ec != std::errc{} || r.ptr == b) return std::nullopt;
  return start;
}

std::optional<int> yama_ptrace_scope() {
  const auto line = read_line("/proc/sys/kernel/yama/ptrace_scope");
  if (!line || line->empty()) return std::nullopt;
  int v = 0;
  const auto r = std::from_chars(line->data(), line->data() + line->size(), v);
  if (r.ec != std::errc{}) return std::nullopt;
  return v;
}

void allow_any_reader() {
  if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0) return;
  if (errno == EINVAL) return;  // no Yama: nothing to allow
  throw TransportError(std::string("cma: prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) failed: ") + std::strerror(errno));
}

}  // namespace tensorhub::transport::cma
