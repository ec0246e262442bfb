// Validation of names that cross process boundaries (model, tensor, group names): one function,
// used by the hub before it sends anything and by the coordinator on what it receives, so that
// every rank and every client sees the same error for the same bad input.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "tensorhub/core/limits.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub {

// Longest name accepted (bytes).
inline constexpr std::size_t kMaxNameBytes = limits::kMaxNameBytes;

// True if `text` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Throws UserError("<what> ...") unless `name` is non-empty, at most kMaxNameBytes, valid UTF-8
// and free of control characters (U+0000-U+001F, U+007F). `what` is e.g. "model name".
void validate_name(std::string_view what, std::string_view name);

// validate_name("tensor name", ...) of every tensor.
void validate_tensor_names(std::span<const Tensor> tensors);

}  // namespace tensorhub
