// Output helpers shared by the commands: aligned text tables, JSON files, and the MPI-aware
// wrapper that turns an exception on any rank into one clear line and a non-zero exit.
#pragma once

#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tensorhub::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void print(std::FILE* out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt(double value, int decimals);
// The wall-clock time of day for people: "14:05:46.123 UTC" (tests/fault reads it off pull lines).
std::string clock_text();
void write_json_file(const std::string& path, const nlohmann::json& j);

// Exit code for the exception being handled (see main.cpp).
int exit_code_for_current_exception(std::string& message);

// Initialises MPI, runs `body(rank)`, finalises. If `body` throws on any rank, prints
// "tensorhub <cmd> [rank r]: <error>" and aborts the whole job with the mapped exit code, so a
// failure never leaves the other ranks hanging in a collective.
int run_mpi_command(const std::string& cmd, const std::function<int(int rank)>& body);

}  // namespace tensorhub::cli
