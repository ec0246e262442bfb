// Does UCX do one-sided gets on an endpoint in hardware (an RMA lane: rc, dc, cuda_ipc, ...), or
// would it emulate them with messages (TCP, and every transport without RMA)? UCX 1.13 has no
// query for it (ucp_ep_query gained transports in 1.14, without lane roles), so this reads the
// lane table ucp_ep_print_info writes:
//   #                 lane[0]:  1:tcp/lo.0 md[1]   -> md[1]/tcp/sysdev[255] am am_bw#0 keepalive wireup
//   #                 lane[1]:  3:mlx5_0:1/rc ...  -> ... rma_bw#0 am
// A lane whose roles include "rma" or "rma_bw#N" does gets in hardware. Anything unexpected reads
// as "no": the safe answer (reads are then served by active messages).
#pragma once

#include <ucp/api/ucp.h>

#include <string_view>

namespace tensorhub::transport::ucx {

// The parse, on its own (tested without UCX).
bool lanes_have_rma(std::string_view ep_info);
// ucp_ep_print_info of `ep`, parsed.
bool rma_in_hardware(ucp_ep_h ep);

}  // namespace tensorhub::transport::ucx
