#include "tensorhub/core/validate.hpp"

#include <cstdint>
#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<std::uint8_t>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto cc = static_cast<std::uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

void validate_name(std::string_view what, std::string_view name) {
  const std::string w(what);
  if (name.empty()) throw UserError(w + " is empty");
  if (name.size() > kMaxNameBytes) {
    throw UserError(w + " is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(kMaxNameBytes) +
                    ")");
  }
  if (!is_valid_utf8(name)) throw UserError(w + " is not valid UTF-8");
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) throw UserError(w + " contains a control character");
  }
}

void validate_tensor_names(std::span<const Tensor> tensors) {
  for (const auto& t : tensors) validate_name("tensor name", t.spec.name);
}

}  // namespace tensorhub
