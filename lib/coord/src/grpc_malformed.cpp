#include "grpc_malformed.hpp"

#include <string>

#include "grpc_auth.hpp"

namespace tensorhub::coord {
namespace {

namespace ex = grpc::experimental;

// One per call: notes whether the request body parsed, and if not rewrites the final status.
class MalformedRequest final : public ex::Interceptor {
 public:
  MalformedRequest(ex::ServerRpcInfo* info, const Gatekeeper& gate) : info_(info), gate_(gate) {}

  void Intercept(ex::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(ex::InterceptionHookPoints::POST_RECV_MESSAGE)) {
      // gRPC hands interceptors a null message when the body did not parse.
      if (methods->GetRecvMessage() == nullptr) unparsed_ = true;
    }
    if (unparsed_ && methods->QueryInterceptionHookPoint(ex::InterceptionHookPoints::PRE_SEND_STATUS)) {
      // No message also when the server had no thread for the call ("Server Threadpool
      // Exhausted", RESOURCE_EXHAUSTED): that answer stays, clients retry it (grpc_client.cpp).
      if (methods->GetSendStatus().error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
        methods->ModifySendStatus(answer());
      }
    }
    methods->Proceed();
  }

 private:
  [[nodiscard]] grpc::Status answer() const {
    try {
      if (const auto* ctx = info_->server_context()) (void)gate_.authenticate(*ctx);
    } catch (const Denied& e) {
      return {e.code(), e.what()};
    }
    return {grpc::StatusCode::INVALID_ARGUMENT,
            std::string("malformed request to ") + info_->method() +
                ": not a valid message of its type (garbage, truncated, or a string field that is not UTF-8)"};
  }

  ex::ServerRpcInfo* info_;
  const Gatekeeper& gate_;
  bool unparsed_ = false;
};

class Factory final : public ex::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(const Gatekeeper& gate) : gate_(gate) {}
  ex::Interceptor* CreateServerInterceptor(ex::ServerRpcInfo* info) override {
    return new MalformedRequest(info, gate_);  // owned and deleted by gRPC
  }

 private:
  const Gatekeeper& gate_;
};

}  // namespace

std::unique_ptr<ex::ServerInterceptorFactoryInterface> malformed_request_interceptor(const Gatekeeper& gate) {
  return std::make_unique<Factory>(gate);
}

}  // namespace tensorhub::coord
