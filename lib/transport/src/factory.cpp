#include "tensorhub/transport/factory.hpp"

#include "cma/cma_transport.hpp"
#include "local/local_transport.hpp"
#include "mpi_rma/mpi_rma_transport.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/core/error.hpp"
#if TENSORHUB_HAVE_UCX
#include "ucx/ucx_transport.hpp"
#endif

namespace tensorhub::transport {

std::unique_ptr<Transport> make_transport(const std::string& name, MPI_Comm comm, const std::string& job_tag, int rank,
                                          std::uint64_t pool_bytes) {
  if (name == "mpi_rma") return std::make_unique<MpiRmaTransport>(comm, job_tag, pool_bytes);
  if (name == "cma") return std::make_unique<CmaTransport>(CmaOptions::from_env());  // same host only
  if (name == "local") return std::make_unique<LocalTransport>(job_tag + "-" + std::to_string(rank));
  if (name == "ucx") {
#if TENSORHUB_HAVE_UCX
    return std::make_unique<UcxTransport>(UcxOptions::from_env());
#else
    throw UserError(
        "transport 'ucx' is not built into this TensorHub (configured without UCX: install libucx-dev "
        "and reconfigure, or -DTENSORHUB_WITH_UCX=ON to require it); use 'mpi_rma' or 'local'");
#endif
  }
  throw UserError("unknown transport '" + name + "' (choose mpi_rma, ucx, cma or local)");
}

}  // namespace tensorhub::transport
