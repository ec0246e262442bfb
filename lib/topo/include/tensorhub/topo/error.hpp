// Errors of lib/topo. A file the user named that cannot be used is a UserError (exit code 2 in
// the CLI) that names the file; a failing live discovery is a plain tensorhub::Error.
#pragma once

#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub::topo {

// "<what> '<path>': <reason>", e.g. "cannot read hwloc XML topology 'x.xml': No such file or
// directory". path() and reason() give the parts.
class TopologyFileError : public UserError {
 public:
  TopologyFileError(const std::string& what, std::string path, std::string reason)
      : UserError(what + " '" + path + "': " + reason), path_(std::move(path)), reason_(std::move(reason)) {}
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

}  // namespace tensorhub::topo
