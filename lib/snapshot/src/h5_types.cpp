#include "h5_types.hpp"

#include <cstdint>

#include "h5_attr.hpp"
#include "header.hpp"

namespace tensorhub::snapshot::h5 {
namespace {

Datatype copy_of(hid_t base, std::string_view file) { return Datatype(H5Tcopy(base), file, "H5Tcopy"); }

// A 16-bit little-endian float with the given exponent and mantissa widths.
Datatype float16_layout(std::size_t exp_bits, std::size_t mant_bits, std::size_t bias, std::string_view file) {
  Datatype t = copy_of(H5T_IEEE_F32LE, file);
  const std::string what = "defining a 16-bit float type";
  check(H5Tset_fields(t.get(), 15, mant_bits, exp_bits, 0, mant_bits), file, what);
  check(H5Tset_offset(t.get(), 0), file, what);
  check(H5Tset_precision(t.get(), 16), file, what);
  check(H5Tset_size(t.get(), 2), file, what);
  check(H5Tset_ebias(t.get(), bias), file, what);
  return t;
}

}  // namespace

Datatype make_type(DType dtype, std::string_view file) {
  switch (dtype) {
    case DType::kF32:
      return copy_of(H5T_IEEE_F32LE, file);
    case DType::kF64:
      return copy_of(H5T_IEEE_F64LE, file);
    case DType::kF16:
      return float16_layout(5, 10, 15, file);
    case DType::kBF16:
      return float16_layout(8, 7, 127, file);
    case DType::kI8:
      return copy_of(H5T_STD_I8LE, file);
    case DType::kU8:
      return copy_of(H5T_STD_U8LE, file);
    case DType::kI16:
      return copy_of(H5T_STD_I16LE, file);
    case DType::kI32:
      return copy_of(H5T_STD_I32LE, file);
    case DType::kI64:
      return copy_of(H5T_STD_I64LE, file);
    case DType::kBool: {
      Datatype t(H5Tenum_create(H5T_STD_I8LE), file, "H5Tenum_create for bool");
      const std::int8_t no = 0;
      const std::int8_t yes = 1;
      check(H5Tenum_insert(t.get(), "FALSE", &no), file, "defining the bool enum");
      check(H5Tenum_insert(t.get(), "TRUE", &yes), file, "defining the bool enum");
      return t;
    }
  }
  fail(file, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

Datatype commit_bf16(hid_t file_id, std::string_view file) {
  Group types(H5Gcreate2(file_id, format::kTypesGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), file,
              std::string("creating group ") + format::kTypesGroup);
  Datatype t = make_type(DType::kBF16, file);
  check(H5Tcommit2(file_id, format::kBf16TypePath, t.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), file,
        std::string("committing datatype ") + format::kBf16TypePath);
  write_string({t.get(), file, format::kBf16TypePath, format::kAttrDtype}, "bf16");
  return t;
}

bool type_matches(hid_t type, DType dtype, std::string_view file) {
  const Datatype expected = make_type(dtype, file);
  return check_tri(H5Tequal(type, expected.get()), file, "H5Tequal");
}

std::string describe_type(hid_t type) {
  const std::size_t bits = H5Tget_size(type) * 8;
  const std::string size = std::to_string(bits) + "-bit ";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return size + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integer" : "signed integer");
    case H5T_FLOAT: {
      std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
      if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return size + "float";
      return size + "float (" + std::to_string(esize) + " exponent, " + std::to_string(msize) + " mantissa bits)";
    }
    case H5T_ENUM:
      return size + "enum";
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ARRAY:
      return "array";
    case H5T_VLEN:
      return "variable-length sequence";
    default:
      return "other HDF5 type";
  }
}

}  // namespace tensorhub::snapshot::h5
