// TensorHub dtypes as HDF5 datatypes (little-endian, as written to the file and used in memory):
//   f32 f64            H5T_IEEE_F32LE / F64LE
//   f16                16-bit IEEE half (sign 15, exponent 10..14, mantissa 0..9, bias 15)
//   bf16               16-bit float with bfloat16's layout (sign 15, exponent 7..14, mantissa
//                      0..6, bias 127), committed once per file as /types/bfloat16
//   i8 u8 i16 i32 i64  H5T_STD_*LE
//   bool               enum of int8 {FALSE = 0, TRUE = 1} (what h5py reads as numpy bool)
#pragma once

#include <hdf5.h>

#include <string>
#include <string_view>

#include "h5_handles.hpp"
#include "tensorhub/core/dtype.hpp"

namespace tensorhub::snapshot::h5 {

// A new transient copy of the HDF5 type for `dtype`.
Datatype make_type(DType dtype, std::string_view file);

// Commits the bfloat16 type at /types/bfloat16 (creating /types) and tags it with the attribute
// tensorhub_dtype = "bf16". Returns the committed type, to create bf16 datasets with.
Datatype commit_bf16(hid_t file_id, std::string_view file);

// Whether `type` (e.g. from H5Dget_type) is exactly the type `dtype` is written as.
bool type_matches(hid_t type, DType dtype, std::string_view file);

// Short human description of an HDF5 type for error messages: "32-bit float", "8-bit enum"...
std::string describe_type(hid_t type);

}  // namespace tensorhub::snapshot::h5
