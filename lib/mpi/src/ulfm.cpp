#include "tensorhub/mpi/ulfm.hpp"

#include "tensorhub/config.hpp"

#if TENSORHUB_HAVE_ULFM
#include <mpi-ext.h>
#endif

namespace tensorhub::mpi {
namespace {

// MPI groups freed on scope exit.
class GroupHandle {
 public:
  GroupHandle() = default;
  ~GroupHandle() {
    if (g_ != MPI_GROUP_NULL && g_ != MPI_GROUP_EMPTY) MPI_Group_free(&g_);
  }
  GroupHandle(const GroupHandle&) = delete;
  GroupHandle& operator=(const GroupHandle&) = delete;
  MPI_Group* out() { return &g_; }
  MPI_Group get() const { return g_; }

 private:
  MPI_Group g_ = MPI_GROUP_NULL;
};

[[noreturn]] void unavailable(const char* call) {
  throw UlfmUnavailable(std::string(call) + ": MPI fault tolerance (ULFM) is not available: " + ulfm_support().detail);
}

}  // namespace

UlfmUnavailable::UlfmUnavailable(const std::string& what) : MpiError(MPI_ERR_UNSUPPORTED_OPERATION, what) {}

UlfmSupport ulfm_support() {
  UlfmSupport s;
#if TENSORHUB_HAVE_ULFM
  s.compiled = true;
  int* value = nullptr;
  int flag = 0;
  if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &value, &flag) == MPI_SUCCESS && flag && value && *value) {
    s.enabled = true;
    s.detail = "ULFM on (MPIX_FT set: failures are reported, revoke/shrink/agree available)";
  } else {
    s.detail = "this MPI has ULFM but the job runs without fault tolerance (start it with mpirun --with-ft ulfm)";
  }
#else
  s.detail =
      "this TensorHub was built against an MPI without ULFM extensions (Open MPI 5 with --with-ft=ulfm has them)";
#endif
  return s;
}

bool is_process_failure(int rc) {
#if TENSORHUB_HAVE_ULFM
  if (rc == MPI_SUCCESS) return false;
  int cls = rc;
  MPI_Error_class(rc, &cls);
  return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
#else
  (void)rc;
  return false;
#endif
}

std::vector<int> failed_ranks(MPI_Comm comm) {
  std::vector<int> out;
#if TENSORHUB_HAVE_ULFM
  GroupHandle failed;
  check(MPIX_Comm_get_failed(comm, failed.out()), "MPIX_Comm_get_failed");
  int n = 0;
  check(MPI_Group_size(failed.get(), &n), "MPI_Group_size");
  if (n == 0) return out;
  GroupHandle mine;
  check(MPI_Comm_group(comm, mine.out()), "MPI_Comm_group");
  std::vector<int> in(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  out.resize(in.size());
  check(MPI_Group_translate_ranks(failed.get(), n, in.data(), mine.get(), out.data()), "MPI_Group_translate_ranks");
#else
  (void)comm;
#endif
  return out;
}

bool is_revoked(MPI_Comm comm) {
#if TENSORHUB_HAVE_ULFM
  int flag = 0;
  check(MPIX_Comm_is_revoked(comm, &flag), "MPIX_Comm_is_revoked");
  return flag != 0;
#else
  (void)comm;
  return false;
#endif
}

void revoke(MPI_Comm comm) {
#if TENSORHUB_HAVE_ULFM
  if (!ulfm_support().enabled) unavailable("MPIX_Comm_revoke");
  check(MPIX_Comm_revoke(comm), "MPIX_Comm_revoke");
#else
  (void)comm;
  unavailable("MPIX_Comm_revoke");
#endif
}

Comm shrink(MPI_Comm comm) {
#if TENSORHUB_HAVE_ULFM
  if (!ulfm_support().enabled) unavailable("MPIX_Comm_shrink");
  MPI_Comm out = MPI_COMM_NULL;
  check(MPIX_Comm_shrink(comm, &out), "MPIX_Comm_shrink");
  Comm c = Comm::adopt(out);
  check(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return c;
#else
  (void)comm;
  unavailable("MPIX_Comm_shrink");
#endif
}

bool agree(MPI_Comm comm, bool value) {
#if TENSORHUB_HAVE_ULFM
  if (!ulfm_support().enabled) unavailable("MPIX_Comm_agree");
  for (int attempt = 0;; ++attempt) {
    int size = 0;
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    int acked = 0;
    check(MPIX_Comm_ack_failed(comm, size, &acked), "MPIX_Comm_ack_failed");
    int flag = value ? 1 : 0;
    const int rc = MPIX_Comm_agree(comm, &flag);
    if (rc == MPI_SUCCESS) return flag != 0;
    // A rank failed during the agreement (not yet acknowledged): acknowledge it and agree again.
    if (!is_process_failure(rc) || attempt >= 16) check(rc, "MPIX_Comm_agree");
  }
#else
  (void)comm;
  (void)value;
  unavailable("MPIX_Comm_agree");
#endif
}

void survivors_barrier(MPI_Comm comm) { (void)agree(comm, true); }

std::vector<int> translate_ranks(MPI_Comm from, const std::vector<int>& ranks, MPI_Comm to) {
  GroupHandle a;
  GroupHandle b;
  check(MPI_Comm_group(from, a.out()), "MPI_Comm_group");
  check(MPI_Comm_group(to, b.out()), "MPI_Comm_group");
  std::vector<int> out(ranks.size(), MPI_UNDEFINED);
  if (ranks.empty()) return out;
  check(MPI_Group_translate_ranks(a.get(), static_cast<int>(ranks.size()), ranks.data(), b.get(), out.data()),
        "MPI_Group_translate_ranks");
  return out;
}

}  // namespace tensorhub::mpi
