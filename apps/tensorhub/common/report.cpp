#include "common/report.hpp"

#include <mpi.h>

#include <algorithm>
#include <boost/program_options/errors.hpp>
#include <chrono>
#include <ctime>
#include <fstream>

#include "tensorhub/core/error.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli {

std::string clock_text() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d UTC", tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

void Table::print(std::FILE* out) const {
  std::vector<std::size_t> w(headers_.size());
  for (std::size_t i = 0; i < headers_.size(); ++i) w[i] = headers_[i].size();
  for (const auto& r : rows_) {
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < cells.size() ? cells[i] : "";
      std::fprintf(out, "%s%*s", i ? "  " : "", static_cast<int>(w[i]), c.c_str());
    }
    std::fprintf(out, "\n");
  };
  line(headers_);
  std::size_t total = 0;
  for (auto x : w) total += x + 2;
  std::fprintf(out, "%s\n", std::string(total > 2 ? total - 2 : 0, '-').c_str());
  for (const auto& r : rows_) line(r);
}

std::string fmt(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  if (!f) throw UserError("cannot write " + path);
  f << j.dump(2) << "\n";
  if (!f) throw UserError("error writing " + path);
}

int exit_code_for_current_exception(std::string& message) {
  try {
    throw;
  } catch (const boost::program_options::error& e) {
    message = e.what();
    return 2;
  } catch (const NotFoundError& e) {
    message = std::string("not found: ") + e.what();
    return 3;
  } catch (const UserError& e) {
    message = e.what();
    return 2;
  } catch (const TransportError& e) {
    message = std::string("transport error: ") + e.what();
    return 4;
  } catch (const ChecksumError& e) {
    message = e.what();
    return 5;
  } catch (const std::exception& e) {
    message = std::string("internal error: ") + e.what();
    return 1;
  }
}

int run_mpi_command(const std::string& cmd, const std::function<int(int rank)>& body) {
  int argc = 0;
  char** argv = nullptr;
  mpi::Environment env(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  try {
    rc = body(rank);
  } catch (...) {
    std::string msg;
    rc = exit_code_for_current_exception(msg);
    std::fprintf(stderr, "tensorhub %s [rank %d]: %s\n", cmd.c_str(), rank, msg.c_str());
    std::fflush(stderr);
    // Other ranks may be blocked in a collective: abort them. A job of one process just exits
    // (its hub is gone with the stack), without Open MPI's abort banner after the error line.
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, rc);
  }
  env.set_exit_code(rc);
  return rc;
}

}  // namespace tensorhub::cli
