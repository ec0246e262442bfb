// A server interceptor (private) that turns gRPC's own answer to a request body it cannot
// parse (garbage, truncated, or a proto3 string field holding invalid UTF-8: INTERNAL with an
// empty message, before any handler runs) into INVALID_ARGUMENT with a clear message, after
// the caller is authenticated like any other call (README "Security model").
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

namespace tensorhub::coord {

class Gatekeeper;

// `gate` must outlive the server the factory is given to.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> malformed_request_interceptor(
    const Gatekeeper& gate);

}  // namespace tensorhub::coord
