#include "local_transport.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "src/host_only.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/transport/descriptor.hpp"

namespace tensorhub::transport {
namespace {

class LocalExposure final : public Exposure {
 public:
  explicit LocalExposure(std::vector<std::string> descriptors) : descriptors_(std::move(descriptors)) {}
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  std::vector<std::string> descriptors_;
};

}  // namespace

LocalTransport::LocalTransport(std::string name) : endpoint_("local:" + std::move(name)) {}

bool LocalTransport::reaches(std::string_view endpoint) const { return endpoint.starts_with("local:"); }

std::unique_ptr<Exposure> LocalTransport::expose(std::span<const MemoryRange> ranges) {
  std::vector<std::string> out;
  for (const auto& r : ranges) {
    if (r.memory != MemoryKind::kHost) throw UserError("local transport: only host memory");
    out.push_back(encode_region(r.base, r.bytes));
  }
  return std::make_unique<LocalExposure>(std::move(out));
}

void LocalTransport::post(const ReadOp& op) {
  require_host_destination(op, "local");
  if (!reaches(op.endpoint)) throw TransportError("local transport cannot reach '" + op.endpoint + "'");
  const Region r = decode_region(op.descriptor);
  if (op.offset + op.length > r.bytes) {
    done_.push_back(Completion{op.tag, false, "read past the end of the exposed region"});
    return;
  }
  const auto* from = reinterpret_cast<const unsigned char*>(r.address) + op.offset;
  auto* dst = static_cast<unsigned char*>(op.dst);
  std::optional<ChecksumStream> sum;
  if (op.digest) sum.emplace(*op.digest);
  if (op.pieces.empty()) {
    std::memcpy(dst, from, op.length);
    if (sum) sum->update(dst, op.length);
  } else {
    require_pieces_cover(op, "local");
    for (const auto& p : op.pieces) {
      std::memcpy(dst + p.offset, from, p.length);
      if (sum) sum->update(dst + p.offset, p.length);
      from += p.length;
    }
  }
  done_.push_back(Completion{op.tag, true, {}, sum ? std::optional(sum->digest()) : std::nullopt});
}

void LocalTransport::poll(std::vector<Completion>& out) {
  while (!done_.empty()) {
    out.push_back(std::move(done_.front()));
    done_.pop_front();
  }
}

}  // namespace tensorhub::transport
