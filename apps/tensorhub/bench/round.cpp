// Round: one method's result as rank 0 sees it, and the summary over a method's rounds.
#include <algorithm>
#include <cmath>

#include "bench/methods.hpp"

namespace tensorhub::cli::bench {

double Round::last() const { return seconds.empty() ? 0 : *std::max_element(seconds.begin(), seconds.end()); }
double Round::mean_seconds() const { return mean(seconds); }
bool Round::all_verified() const {
  return std::all_of(verified.begin(), verified.end(), [](bool v) { return v; });
}

nlohmann::json Round::to_json(const Model& m, std::optional<double> sr) const {
  nlohmann::json readers = nlohmann::json::array();
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    readers.push_back({{"rank", ranks[i]},
                       {"seconds", seconds[i]},
                       {"ratio", ratio_json(seconds[i], sr)},
                       {"verified", static_cast<bool>(verified[i])},
                       {"origin_bytes", static_cast<std::uint64_t>(origin_bytes[i])},
                       {"relay_bytes", static_cast<std::uint64_t>(relay_bytes[i])}});
    if (i < stages.size()) readers.back()["stages"] = stages[i];
  }
  // Byte counts as JSON integers (they travel as doubles in the gathers; exact below 2^53).
  const auto tb = trainer_bytes ? nlohmann::json(static_cast<std::uint64_t>(*trainer_bytes)) : nlohmann::json();
  return {{"method", method},
          {"version", version},
          {"last_reader_s", last()},
          {"last_ratio", ratio_json(last(), sr)},
          {"mean_reader_s", mean_seconds()},
          {"mean_ratio", ratio_json(mean_seconds(), sr)},
          {"trainer_bytes", tb},
          {"trainer_bytes_ratio", trainer_bytes ? nlohmann::json(*trainer_bytes / static_cast<double>(m.bytes)) : tb},
          {"trainer_bytes_source", trainer_bytes_source},
          {"verified", all_verified()},
          {"readers", readers},
          {"traffic", traffic},
          {"store", store}};
}

nlohmann::json summarize(const std::vector<Round>& rounds, const Model& m, std::optional<double> sr) {
  std::vector<double> last;
  std::vector<double> mean_s;
  std::vector<double> trainer;
  bool verified = true;
  nlohmann::json each = nlohmann::json::array();
  for (const auto& r : rounds) {
    last.push_back(r.last());
    mean_s.push_back(r.mean_seconds());
    if (r.trainer_bytes) trainer.push_back(*r.trainer_bytes);
    verified = verified && r.all_verified();
    each.push_back(r.to_json(m, sr));
  }
  const bool counted = !rounds.empty() && trainer.size() == rounds.size();
  const auto tb = counted ? nlohmann::json(std::llround(mean(trainer))) : nlohmann::json();  // whole bytes
  return {{"method", rounds.empty() ? "" : rounds.front().method},
          {"last_reader_s", median(last)},
          {"last_ratio", ratio_json(median(last), sr)},
          {"mean_reader_s", mean(mean_s)},
          {"mean_ratio", ratio_json(mean(mean_s), sr)},
          {"trainer_bytes", tb},
          {"trainer_bytes_ratio", counted ? nlohmann::json(mean(trainer) / static_cast<double>(m.bytes)) : tb},
          {"trainer_bytes_source", rounds.empty() ? "" : rounds.front().trainer_bytes_source},
          {"verified", verified},
          {"rounds", each}};
}

const std::vector<std::string>& summary_headers() {
  static const std::vector<std::string> h{"method", "last reader s", "x S/R",     "mean reader s",
                                          "x S/R",  "trainer MB",    "trainer/S", "verified"};
  return h;
}

std::vector<std::string> summary_row(const nlohmann::json& s, std::optional<double> sr) {
  const auto num = [&](const char* k) -> std::optional<double> {
    return s[k].is_number() ? std::optional<double>(s[k].get<double>()) : std::nullopt;
  };
  const auto tr = num("trainer_bytes_ratio");
  return {s["method"].get<std::string>(),
          fmt(s["last_reader_s"].get<double>(), 2),
          ratio_text(num("last_reader_s"), sr),
          fmt(s["mean_reader_s"].get<double>(), 2),
          ratio_text(num("mean_reader_s"), sr),
          mb_text(num("trainer_bytes")),
          tr ? fmt(*tr, 2) : "-",
          s["verified"].get<bool>() ? "yes" : "NO"};
}

}  // namespace tensorhub::cli::bench
