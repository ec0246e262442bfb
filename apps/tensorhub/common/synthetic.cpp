#include "common/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::cli {
namespace {

constexpr std::uint64_t kAlign = 4096;

std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

// The pattern: 64-bit words derived from (version, tensor, word index).
std::uint64_t word(std::uint64_t version, std::uint64_t tensor, std::uint64_t i) {
  std::uint64_t x = (version * 0x9E3779B97F4A7C15ull) ^ (tensor << 40) ^ i;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

// Tensors are identified by name: a trainer shard and a rollout lay them out differently.
std::uint64_t key(const Tensor& t) { return checksum64(t.spec.name.data(), t.spec.name.size()); }

}  // namespace

void check_synthetic_tensors(std::uint32_t tensors) {
  if (tensors == 0 || tensors > limits::kMaxTensorsPerVersion) {
    throw UserError("--tensors must be between 1 and " + std::to_string(limits::kMaxTensorsPerVersion) + ", not " +
                    std::to_string(tensors));
  }
}

std::vector<TensorSpec> synthetic_model(std::uint64_t total_bytes, std::uint32_t tensors) {
  check_synthetic_tensors(tensors);
  if (total_bytes < (1u << 20)) throw UserError("synthetic model must be at least 1 MiB");
  // Per layer: q,k,v,o (h x h), gate, up (4h x h), down (h x 4h), 2 norms (h) = 9 tensors,
  // 16 h^2 elements. Plus embedding and LM head (8h x h each) and the final norm.
  const std::uint32_t layers = std::max<std::uint32_t>(1, (std::max<std::uint32_t>(tensors, 12) - 3) / 9);
  const double elems = static_cast<double>(total_bytes) / 2.0;  // bf16
  auto h = static_cast<std::int64_t>(std::sqrt(elems / (16.0 * layers + 16.0)));
  h = std::max<std::int64_t>(64, h / 64 * 64);
  // The vocabulary takes up what the layers leave, so the model hits the requested size.
  const auto layer_elems = static_cast<double>(layers) * (16.0 * h * h + 2.0 * h) + h;
  const std::int64_t v = std::max<std::int64_t>(64, static_cast<std::int64_t>((elems - layer_elems) / (2.0 * h)));
  std::vector<TensorSpec> out;
  out.push_back({"model.embed_tokens.weight", DType::kBF16, {v, h}});
  for (std::uint32_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* n : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"}) {
      out.push_back({p + n + ".weight", DType::kBF16, {h, h}});
    }
    out.push_back({p + "mlp.gate_proj.weight", DType::kBF16, {4 * h, h}});
    out.push_back({p + "mlp.up_proj.weight", DType::kBF16, {4 * h, h}});
    out.push_back({p + "mlp.down_proj.weight", DType::kBF16, {h, 4 * h}});
    out.push_back({p + "input_layernorm.weight", DType::kBF16, {h}});
    out.push_back({p + "post_attention_layernorm.weight", DType::kBF16, {h}});
  }
  out.push_back({"model.norm.weight", DType::kBF16, {h}});
  out.push_back({"lm_head.weight", DType::kBF16, {v, h}});
  return out;
}

std::uint64_t Arena::bytes_needed(const std::vector<TensorSpec>& specs) {
  std::uint64_t n = 0;
  for (const auto& s : specs) n += round_up(s.bytes(), kAlign);
  return std::max<std::uint64_t>(n, kAlign);
}

Arena::Arena(std::vector<TensorSpec> specs) : specs_(std::move(specs)) {
  bytes_ = bytes_needed(specs_);
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(kAlign, bytes_));
  if (p == nullptr) throw UserError("cannot allocate " + std::to_string(bytes_) + " bytes");
  owned_.reset(p);
  data_ = p;
  lay_out(p);
}

Arena::Arena(std::vector<TensorSpec> specs, void* memory) : specs_(std::move(specs)) {
  bytes_ = bytes_needed(specs_);
  data_ = static_cast<unsigned char*>(memory);
  lay_out(data_);
}

void Arena::lay_out(unsigned char* base) {
  std::uint64_t off = 0;
  for (const auto& spec : specs_) {
    Tensor t;
    t.spec = spec;
    t.data = base + off;
    t.bytes = spec.bytes();
    tensors_.push_back(t);
    off += round_up(spec.bytes(), kAlign);
  }
}

void Arena::fill(std::uint64_t version) {
  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    auto* p = static_cast<unsigned char*>(tensors_[t].data);
    const std::uint64_t n = tensors_[t].bytes / 8;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t w = i == 0 ? version : word(version, key(tensors_[t]), i);
      std::memcpy(p + i * 8, &w, 8);
    }
  }
}

void Arena::clear() { std::memset(data_, 0, bytes_); }

std::uint64_t Arena::stamp(std::size_t i) const {
  std::uint64_t w = 0;
  if (tensors_[i].bytes >= 8) std::memcpy(&w, tensors_[i].data, 8);
  return w;
}

bool Arena::matches(std::uint64_t version) const {
  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    if (tensors_[t].bytes < 8) continue;
    if (stamp(t) != version) return false;
    const auto* p = static_cast<const unsigned char*>(tensors_[t].data);
    const std::uint64_t n = tensors_[t].bytes / 8;
    for (std::uint64_t i = 1; i < n; i += 4099) {  // sample
      std::uint64_t w = 0;
      std::memcpy(&w, p + i * 8, 8);
      if (w != word(version, key(tensors_[t]), i)) return false;
    }
  }
  return true;
}

}  // namespace tensorhub::cli
