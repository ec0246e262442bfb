// Helpers shared by the grpc_codec_*.cpp files (private to tensorhub_coord; see grpc_codec.hpp).
#pragma once

#include <string>
#include <vector>

#include "tensorhub/core/error.hpp"

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

}  // namespace tensorhub::coord::codec::detail
