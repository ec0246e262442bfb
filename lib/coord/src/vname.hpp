// How the coordinator names a version in messages: 'model' vN.
#pragma once

#include <cstdint>
#include <string>

namespace tensorhub::coord {

inline std::string vname(const std::string& model, std::uint64_t version) {
  return "'" + model + "' v" + std::to_string(version);
}

}  // namespace tensorhub::coord
