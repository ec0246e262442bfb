#include "h5_handles.hpp"

#include <vector>

namespace tensorhub::snapshot::h5 {

ErrorSilencer::ErrorSilencer() {
  saved_ = H5Eget_auto2(H5E_DEFAULT, &func_, &data_) >= 0;
  (void)H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

ErrorSilencer::~ErrorSilencer() {
  if (saved_) (void)H5Eset_auto2(H5E_DEFAULT, func_, data_);
}

namespace {

herr_t collect(unsigned /*n*/, const H5E_error2_t* err, void* out) {
  auto& lines = *static_cast<std::vector<std::string>*>(out);
  std::string line = err->func_name ? std::string(err->func_name) + "(): " : std::string();
  line += err->desc ? err->desc : "?";
  lines.push_back(std::move(line));
  return 0;
}

}  // namespace

std::string take_error_stack() {
  std::vector<std::string> lines;
  (void)H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &lines);
  (void)H5Eclear2(H5E_DEFAULT);
  if (lines.empty()) return {};
  // The outermost entry says which API call failed, the innermost why; the middle is noise.
  std::string out = lines.front();
  if (lines.size() > 1) out += " <- " + lines.back();
  return out;
}

void fail(std::string_view file, std::string_view what) {
  std::string msg = "snapshot '" + std::string(file) + "': " + std::string(what);
  const std::string stack = take_error_stack();
  if (!stack.empty()) msg += " (HDF5: " + stack + ")";
  throw SnapshotError(msg);
}

}  // namespace tensorhub::snapshot::h5
