// An outsider on a staged holder's port (label security): connections without the endpoint's
// key, with a wrong key, with garbage, and a reader breaking the protocol are closed unanswered;
// the holder keeps serving its real readers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "staged/codec.hpp"
#include "staged/socket.hpp"
#include "staged_test_util.hpp"

namespace tensorhub::transport {
namespace {

using namespace std::chrono_literals;

// Sends `bytes` and returns what the holder answers before it closes (or 2 s pass).
std::string answer_on(const staged::Fd& fd, const std::string& bytes) {
  std::string out = bytes, why;
  EXPECT_TRUE(staged::flush(fd, out, why)) << why;
  std::string got;
  const auto end = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const auto n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) return got + "<closed>";
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}
std::string answer_to(const staged::EndpointText& e, const std::string& bytes) {
  return answer_on(staged::connect_tcp(e.address, e.port, 2000ms), bytes);
}

TEST(StagedOutsider, ClosesStrangersAndKeepsServing) {
  alarm(60);
  test::ForkedDeviceHolder holder(1, 1, 5, test::staged_holder());
  const auto e = staged::decode_endpoint(holder.endpoint());
  std::string wrong_key, request_first, garbage(64, '\x7f');
  auto bad = e.key;
  bad[0] ^= 1;
  staged::encode(staged::Auth{bad}, wrong_key);
  staged::encode(staged::Request{1, 1, 0, 4096}, request_first);
  EXPECT_EQ(answer_to(e, wrong_key), "<closed>") << "a wrong key gets no hello";
  EXPECT_EQ(answer_to(e, request_first), "<closed>") << "a request before the key is not served";
  EXPECT_EQ(answer_to(e, garbage), "<closed>");
  // A real reader that then breaks the protocol: Done for a slot it was never given.
  {
    auto fd = staged::connect_tcp(e.address, e.port, 2000ms);
    std::string auth, rogue;
    staged::encode(staged::Auth{e.key}, auth);
    staged::encode(staged::Done{0}, rogue);
    std::string out = auth, why;
    ASSERT_TRUE(staged::flush(fd, out, why)) << why;
    staged::FrameReader in;
    for (int i = 0; i < 200 && in.buffered() == 0; ++i) {
      pollfd p{fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) {
        ASSERT_TRUE(staged::receive(fd, in, why)) << why;
      }
    }
    const auto hello = in.next();
    ASSERT_TRUE(hello && std::holds_alternative<staged::Hello>(*hello)) << "the right key gets a hello";
    EXPECT_EQ(answer_on(fd, rogue), "<closed>") << "a Done for a slot it does not hold closes it";
  }

  auto device = device::make_device_from_env();
  auto reader = test::make_staged(*device);
  std::vector<std::uint8_t> dst(holder.part());
  reader->post(ReadOp{holder.endpoint(), holder.descriptors()[0], 0, dst.data(), dst.size(), 1});
  const auto done = test::wait_for(*reader, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << done[0].error;
  std::vector<std::uint64_t> w(dst.size() / 8);
  std::memcpy(w.data(), dst.data(), dst.size());
  EXPECT_EQ(w, test::device_pattern_words(0, dst.size(), 5));
}

}  // namespace
}  // namespace tensorhub::transport
