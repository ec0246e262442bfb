#include "tensorhub/fp8_pull.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <utility>
#include <vector>

#include "fp8_pull_with.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub {
namespace {

struct Planned {
  const Fp8Destination* d;
  Fp8Blocks blocks;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes;  // bf16
};

// The version's bf16 tensor (or whole global tensor) called `name`: its shape.
std::vector<std::int64_t> bf16_shape(const Manifest& m, const std::string& name) {
  for (const auto& e : m.tensors) {
    const bool plain = e.spec.name == name;
    if (!plain && e.spec.global_name != name) continue;
    if (e.spec.dtype != DType::kBF16) {
      throw UserError("pull_fp8: tensor '" + name + "' of " + m.model + " v" + std::to_string(m.version) + " is " +
                      std::string(dtype_name(e.spec.dtype)) + ", not bf16");
    }
    return plain ? e.spec.shape : e.spec.global_shape;
  }
  throw UserError("pull_fp8: " + m.model + " v" + std::to_string(m.version) + " has no tensor '" + name + "'");
}

Planned plan(const Manifest& m, const Fp8Destination& d) {
  Planned p{&d, {}, bf16_shape(m, d.name), 0};
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < p.shape.size(); ++i) rows *= p.shape[i];
  p.blocks = Fp8Blocks{rows, p.shape.empty() ? 1 : p.shape.back(), d.block_rows, d.block_cols};
  validate(p.blocks);
  if (d.data == nullptr || d.scale_inv == nullptr)
    throw UserError("pull_fp8: '" + d.name + "': no data or scale buffer");
  if (d.data_bytes != p.blocks.elements() || d.scales != p.blocks.scales()) {
    throw UserError("pull_fp8: '" + d.name + "' is " + std::to_string(p.blocks.rows) + " x " +
                    std::to_string(p.blocks.cols) + ": it needs " + std::to_string(p.blocks.elements()) +
                    " FP8 bytes and " + std::to_string(p.blocks.scales()) + " scales in blocks of " +
                    std::to_string(d.block_rows) + " x " + std::to_string(d.block_cols) + " (got " +
                    std::to_string(d.data_bytes) + " and " + std::to_string(d.scales) + ")");
  }
  p.bytes = p.blocks.elements() * 2;
  return p;
}

void add(PullResult& sum, const PullResult& r) {
  sum.version = r.version;
  sum.bytes += r.bytes;
  sum.seconds += r.seconds;
  sum.origin_bytes += r.origin_bytes;
  sum.relay_bytes += r.relay_bytes;
  sum.failed_reads += r.failed_reads;
  sum.file_bytes += r.file_bytes;
  sum.local_bytes += r.local_bytes;
  sum.resolve_seconds += r.resolve_seconds;
  sum.transfer_seconds += r.transfer_seconds;
  sum.no_source_seconds += r.no_source_seconds;
  sum.verify_seconds += r.verify_seconds;
  sum.planned = r.planned;
  sum.plan_calls += r.plan_calls;
  sum.digested_bytes += r.digested_bytes;
}

}  // namespace

Fp8PullResult pull_fp8_with(const ManifestCall& manifest, const PullCall& pull, const std::string& model,
                            const Version& version, std::span<const Fp8Destination> into,
                            const Fp8PullOptions& options) {
  if (into.empty()) throw UserError("pull_fp8: no destinations");
  if (options.pull.group) throw UserError("pull_fp8: reading groups are not supported yet (pull without a group)");
  if (options.staging_bytes == 0) throw UserError("pull_fp8: staging_bytes must be positive");
  const Manifest m = manifest(model, version);  // fixes the version: every batch reads this one
  std::vector<Planned> planned;
  std::set<std::string> names;
  for (const auto& d : into) {
    if (!names.insert(d.name).second) throw UserError("pull_fp8: '" + d.name + "' is given twice");
    planned.push_back(plan(m, d));
  }
  // Batches: tensors in order while they fit the budget (at least one each).
  std::vector<std::pair<std::size_t, std::size_t>> batches;
  for (std::size_t first = 0; first < planned.size();) {
    std::size_t last = first;
    std::uint64_t bytes = 0;
    while (last < planned.size() && (last == first || bytes + planned[last].bytes <= options.staging_bytes)) {
      bytes += planned[last].bytes;
      ++last;
    }
    batches.emplace_back(first, last);
    first = last;
  }
  Fp8PullResult out;
  PullOptions po = options.pull;
  po.relay = false;  // the staging buffers are reused at once
  const auto exact = Version::exact(m.version);
  // Batch k is pulled into staging[k % 2] while batch k - 1 is converted from the other buffer
  // on a thread of its own. Declared before the future, so that an exception waits for the
  // conversion (the future's destructor) before the buffers go.
  std::vector<std::uint16_t> staging[2];
  std::future<double> converting;  // seconds of the batch being converted
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const std::size_t first = batches[k].first;
    const std::size_t last = batches[k].second;
    auto& buffer = staging[k % 2];
    std::uint64_t bytes = 0;
    for (std::size_t i = first; i < last; ++i) bytes += planned[i].bytes;
    buffer.resize(std::max<std::size_t>(buffer.size(), bytes / 2));
    std::vector<Tensor> batch;
    std::uint64_t at = 0;
    for (std::size_t i = first; i < last; ++i) {
      batch.push_back(host_tensor(planned[i].d->name, DType::kBF16, planned[i].shape, buffer.data() + at / 2));
      at += planned[i].bytes;
    }
    add(out.pull, pull(model, exact, batch, po));
    ++out.batches;
    if (converting.valid()) out.convert_seconds += converting.get();  // batch k - 1 (rethrows its error)
    converting = std::async(std::launch::async, [&planned, &buffer, first, last] {
      const auto t0 = std::chrono::steady_clock::now();
      std::uint64_t offset = 0;
      for (std::size_t i = first; i < last; ++i) {
        const auto& p = planned[i];
        quantize_bf16(std::span<const std::uint16_t>(buffer.data() + offset / 2, p.blocks.elements()), p.blocks,
                      p.d->format, std::span(p.d->data, p.d->data_bytes), std::span(p.d->scale_inv, p.d->scales));
        offset += p.bytes;
      }
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    out.converted_bytes += bytes;
  }
  if (converting.valid()) out.convert_seconds += converting.get();
  out.staging_bytes = (staging[0].size() + staging[1].size()) * 2;
  return out;
}

Fp8PullResult pull_fp8(Hub& hub, const std::string& model, const Version& version, std::span<const Fp8Destination> into,
                       const Fp8PullOptions& options) {
  return pull_fp8_with([&](const std::string& mo, const Version& v) { return hub.manifest(mo, v); },
                       [&](const std::string& mo, const Version& v, std::span<const Tensor> t, const PullOptions& o) {
                         return hub.pull(mo, v, t, o);
                       },
                       model, version, into, options);
}

}  // namespace tensorhub
