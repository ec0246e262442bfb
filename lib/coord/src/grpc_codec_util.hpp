// Helpers shared by the grpc_codec_*.cpp files (private to tensorhub_coord; see grpc_codec.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/coord/plan_book.hpp"
#include "tensorhub/coord/types.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::coord::codec::detail {

[[noreturn]] inline void malformed(const std::string& what) {
  throw UserError("malformed coordinator message: " + what);
}

template <class T, class Repeated>
std::vector<T> to_vector(const Repeated& field) {
  return std::vector<T>(field.begin(), field.end());
}

template <class Repeated, class Vector>
void append_all(Repeated* field, const Vector& values) {
  field->Reserve(static_cast<int>(values.size()));
  for (const auto& v : values) field->Add(v);
}

template <class Repeated, class Vector>
void append_strings(Repeated* field, const Vector& values) {
  field->Reserve(static_cast<int>(values.size()));
  for (const auto& v : values) *field->Add() = v;
}

// Chunk ranges from the wire: at most kMaxPlanRanges, none reaching past 2^32 chunk
// ids (the coordinator checks them against the version).
template <class Repeated>
std::vector<ChunkRange> ranges_from_proto(const Repeated& field, const char* what) {
  if (field.size() > static_cast<int>(kMaxPlanRanges)) malformed(std::string(what) + ": too many ranges");
  std::vector<ChunkRange> out;
  out.reserve(static_cast<std::size_t>(field.size()));
  for (const auto& r : field) {
    if (std::uint64_t{r.first()} + r.count() > UINT32_MAX) malformed(std::string(what) + ": range past 2^32 chunks");
    out.push_back(ChunkRange{r.first(), r.count()});
  }
  return out;
}

}  // namespace tensorhub::coord::codec::detail
