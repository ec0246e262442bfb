#include "bench/flags.hpp"

#include <limits>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli::bench {
namespace {

bool given(const po::variables_map& vm, const char* name) { return vm.count(name) > 0 && !vm[name].defaulted(); }

// Copies alias `alias` into `target` when it was given; `flag` is the canonical option, `shown`
// its spellings for the message.
template <typename T>
void apply(const po::variables_map& vm, const char* alias, const char* flag, const char* shown, const T& value,
           T& target) {
  if (!given(vm, alias)) return;
  if (given(vm, flag)) throw UserError(std::string("--") + alias + " is an alias of " + shown + ": give one of them");
  target = value;
}

}  // namespace

SweepFlags::SweepFlags(const std::string& bytes, std::uint32_t n, std::uint32_t w)
    : minbytes(bytes), maxbytes(bytes), iters(n), warmup(w) {}

void SweepFlags::set_range(const std::string& max, std::uint32_t factor) {
  maxbytes = max;
  stepfactor = factor;
  single_size_default_ = minbytes == maxbytes;
}

void SweepFlags::add_to(po::options_description& desc, const Meaning& meaning) {
  desc.add_options()("minbytes,b", po::value(&minbytes)->default_value(minbytes), "smallest size (e.g. 8MiB)")(
      "maxbytes,e", po::value(&maxbytes)->default_value(maxbytes), "largest size")(
      "stepfactor,f", po::value(&stepfactor)->default_value(stepfactor), "size multiplier between steps (>= 2)")(
      "iters,n", po::value(&iters)->default_value(iters), meaning.iters)(
      "warmup,w", po::value(&warmup)->default_value(warmup), meaning.warmup)("size", po::value(&size_alias_),
                                                                             "alias: --size S is -b S -e S (one size)");
  if (meaning.p2p_aliases) {
    desc.add_options()("begin", po::value(&begin_alias_), "alias of -b")("end", po::value(&end_alias_), "alias of -e")(
        "factor", po::value(&factor_alias_), "alias of -f");
  }
  if (meaning.versions_alias) desc.add_options()("versions", po::value(&versions_alias_), "alias of -n");
}

void SweepFlags::resolve(const po::variables_map& vm) {
  if (given(vm, "size")) {
    if (given(vm, "minbytes") || given(vm, "maxbytes") || given(vm, "begin") || given(vm, "end")) {
      throw UserError("--size S is -b S -e S: give --size or -b/-e, not both");
    }
    minbytes = maxbytes = size_alias_;
  }
  apply(vm, "begin", "minbytes", "-b/--minbytes", begin_alias_, minbytes);
  apply(vm, "end", "maxbytes", "-e/--maxbytes", end_alias_, maxbytes);
  apply(vm, "factor", "stepfactor", "-f/--stepfactor", factor_alias_, stepfactor);
  apply(vm, "versions", "iters", "-n/--iters", versions_alias_, iters);
  // A scenario that runs one size by default keeps to one size when only -b is given.
  if (single_size_default_ && (given(vm, "minbytes") || given(vm, "begin")) && !given(vm, "maxbytes") &&
      !given(vm, "end")) {
    maxbytes = minbytes;
  }
  const std::uint64_t lo = parse_bytes(minbytes);
  const std::uint64_t hi = parse_bytes(maxbytes);
  if (lo == 0) throw UserError("-b/--minbytes must be at least 1 byte");
  if (lo > hi) throw UserError("-b/--minbytes (" + minbytes + ") is larger than -e/--maxbytes (" + maxbytes + ")");
  if (stepfactor < 2) throw UserError("-f/--stepfactor must be at least 2");
}

std::vector<std::uint64_t> SweepFlags::sizes() const {
  const std::uint64_t hi = parse_bytes(maxbytes);
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = parse_bytes(minbytes); b <= hi; b *= stepfactor) {
    out.push_back(b);
    if (b > std::numeric_limits<std::uint64_t>::max() / stepfactor) break;
  }
  return out;
}

}  // namespace tensorhub::cli::bench
