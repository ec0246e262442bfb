#include "tensorhub/coord/auth.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {
namespace {

constexpr std::size_t kMinToken = 16;
constexpr std::size_t kMaxToken = 512;

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// A token must fit in an HTTP/2 header value: printable ASCII, no spaces.
void check_token(const std::string& token, const std::string& where) {
  if (token.size() < kMinToken || token.size() > kMaxToken) {
    throw UserError(where + ": a token must be " + std::to_string(kMinToken) + ".." + std::to_string(kMaxToken) +
                    " characters (found " + std::to_string(token.size()) + ")");
  }
  for (const char c : token) {
    if (c <= ' ' || c > '~') throw UserError(where + ": a token must be printable ASCII without spaces");
  }
}

}  // namespace

std::string generate_token() {
  std::array<unsigned char, 32> bytes{};
  std::size_t got = 0;
  while (got < bytes.size()) {
    const auto n = getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw TransportError(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (const auto b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Length is not secret (tokens have a fixed format); the content is compared in full.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = static_cast<unsigned char>(diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
  }
  return diff == 0;
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("token file " + path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > 4 * kMaxToken) throw UserError("token file " + path + ": too large to hold a token");
  auto token = trimmed(ss.str());
  check_token(token, "token file " + path);
  return token;
}

std::string load_or_create_token_file(const std::string& path) {
  if (path.empty()) throw UserError("token file path is empty");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if ((st.st_mode & 077) != 0) {
      throw UserError("token file " + path + " is readable or writable by group or others (chmod 600 it)");
    }
    return read_token_file(path);
  }
  if (errno != ENOENT) throw UserError("token file " + path + ": " + std::strerror(errno));
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent)) {
    std::filesystem::create_directories(parent);
    std::filesystem::permissions(parent, std::filesystem::perms::owner_all);
  }
  const auto token = generate_token();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return read_token_file(path);  // another process created it meanwhile
    throw UserError("token file " + path + ": cannot create: " + std::strerror(errno));
  }
  const std::string line = token + "\n";
  const auto n = ::write(fd, line.data(), line.size());
  const bool ok = n == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw UserError("token file " + path + ": cannot write");
  return token;
}

std::string default_token_file() {
  const auto home = env::text("HOME");
  return home ? *home + "/.tensorhub/token" : std::string();
}

ClientAuth ClientAuth::from_environment() {
  ClientAuth a;
  if (const auto t = env::text("TENSORHUB_TOKEN")) {
    a.token = trimmed(*t);
    check_token(a.token, "TENSORHUB_TOKEN");
  } else if (const auto f = env::text("TENSORHUB_TOKEN_FILE")) {
    a.token = read_token_file(*f);
  } else if (const auto d = default_token_file(); !d.empty() && std::filesystem::exists(d)) {
    a.token = read_token_file(d);
  }
  a.tls_ca_file = env::text("TENSORHUB_TLS_CA").value_or("");
  a.tls_cert_file = env::text("TENSORHUB_TLS_CERT").value_or("");
  a.tls_key_file = env::text("TENSORHUB_TLS_KEY").value_or("");
  a.tls_server_name = env::text("TENSORHUB_TLS_SERVER_NAME").value_or("");
  return a;
}

}  // namespace tensorhub::coord
