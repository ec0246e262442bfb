// The flags every `tensorhub bench` scenario takes, in the nccl-tests dialect:
//   -b/--minbytes  -e/--maxbytes  -f/--stepfactor   sizes minbytes, minbytes*f, ... <= maxbytes
//   -n/--iters     timed iterations (per size; what one iteration is depends on the scenario)
//   -w/--warmup    untimed iterations first
// The spellings the scenarios had before stay as aliases: --size S (= -b S -e S), --begin,
// --end, --factor (bench p2p) and --versions (= -n, bench stall | elastic | crossdc). An alias
// and its flag given together is a usage error. A scenario that runs one size by default (all
// but p2p) stays at one size when only -b is given (-e follows it); p2p sweeps like nccl-tests.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace tensorhub::cli::bench {

struct SweepFlags {
  std::string minbytes;
  std::string maxbytes;
  std::uint32_t stepfactor = 2;
  std::uint32_t iters = 1;
  std::uint32_t warmup = 0;

  // What -n and -w mean for a scenario (the help text) and which aliases it keeps.
  struct Meaning {
    const char* iters = "timed iterations per size";
    const char* warmup = "untimed iterations per size first";
    bool versions_alias = false;  // --versions = -n
    bool p2p_aliases = false;     // --begin/--end/--factor
  };

  // Defaults: both sizes `bytes` (one size: then -b alone also sets -e), -n `iters`, -w `warmup`.
  SweepFlags(const std::string& bytes, std::uint32_t iters, std::uint32_t warmup);
  // A default sweep from `bytes` to `max` by `factor` instead (-b alone then sweeps up to it).
  void set_range(const std::string& max, std::uint32_t factor);

  void add_to(boost::program_options::options_description& desc, const Meaning& meaning);
  // After parsing: applies the aliases the user gave (UserError when an alias and its flag are
  // both given) and checks the values (UserError before MPI starts).
  void resolve(const boost::program_options::variables_map& vm);
  // minbytes, minbytes * stepfactor, ... up to maxbytes.
  std::vector<std::uint64_t> sizes() const;

 private:
  std::string size_alias_;
  std::string begin_alias_;
  std::string end_alias_;
  std::uint32_t factor_alias_ = 0;
  std::uint32_t versions_alias_ = 0;
  bool single_size_default_ = true;
};

}  // namespace tensorhub::cli::bench
