// Coordinator: names from callers are validated on every call that takes them (UserError).
#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

const std::string kBadUtf8("m\xff", 2);
const std::string kTooLong(2048, 'm');
const std::string kControl("m\n", 2);

TEST(CoordinatorValidation, ModelNamesAreValidatedOnEveryCall) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1);
  for (const auto& bad : {kBadUtf8, kTooLong, kControl, std::string()}) {
    SCOPED_TRACE(bad.size());
    EXPECT_THROW(publish_one(c, p, bad, 2), UserError);
    EXPECT_THROW(c.unpublish(p, bad, 1), UserError);
    EXPECT_THROW(c.wait_drained(p, bad, 1, 0ms), UserError);
    EXPECT_THROW(c.retain(bad, 1), UserError);
    EXPECT_THROW(c.release(bad, 1), UserError);
    EXPECT_THROW(c.latest(bad), UserError);
    EXPECT_THROW(c.wait_for(bad, std::nullopt, 0ms), UserError);
    EXPECT_THROW(resolve(c, p, bad), UserError);
    EXPECT_THROW(c.offer_relay(RelayOffer{p, bad, 1, {""}}), UserError);
    EXPECT_THROW(acquire(c, p, bad, 1, {0}), UserError);
    EXPECT_THROW(c.complete(CompleteRequest{p, bad, 1, {}, {}}), UserError);
    EXPECT_THROW(c.finish(FinishRequest{p, bad, 1, {"g", 1, 0}, 1}), UserError);
    EXPECT_THROW(c.begin_offload(p, bad, 1), UserError);
    EXPECT_THROW(c.end_offload(p, bad, 1), UserError);
  }
}

TEST(CoordinatorValidation, GroupAndTensorNamesAreValidated) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  EXPECT_THROW(c.publish(request(p, "m", 1, {kBadUtf8, 1, 0}, {{"w", 10}})), UserError);
  EXPECT_THROW(c.publish(request(p, "m", 1, {"t", 1, 0}, {{kTooLong, 10}})), UserError);
  EXPECT_THROW(c.publish(request(p, "m", 1, {"t", 1, 0}, {{kControl, 10}})), UserError);
  publish_one(c, p, "m", 1);
  EXPECT_THROW(resolve(c, p, "m", {kTooLong, 1, 0}), UserError);
  EXPECT_THROW(resolve(c, p, "m", {"", 1, 0}), UserError);
  EXPECT_THROW(c.finish(FinishRequest{p, "m", 1, {kBadUtf8, 1, 0}, 1}), UserError);
  Manifest m;
  m.model = kBadUtf8;
  m.version = 1;
  EXPECT_THROW(c.attach_snapshot("/tmp/x.h5", m), UserError);
}

}  // namespace
}  // namespace tensorhub::coord
