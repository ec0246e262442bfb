// JSON codec for manifests (CLI --json output, snapshot attributes, debugging).
#pragma once

#include <string>
#include <string_view>

#include "tensorhub/core/manifest.hpp"

namespace tensorhub {

std::string manifest_to_json(const Manifest& manifest);
// Parses and validates; throws UserError describing the first problem found.
Manifest manifest_from_json(std::string_view text);

}  // namespace tensorhub
