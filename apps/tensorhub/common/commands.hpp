// The handlers of the `tensorhub` commands (listed, with summaries and examples, in
// commands/table.cpp). Each takes the arguments after its name and returns the process exit
// code; errors are thrown and turned into one line by main().
#pragma once

#include <string>
#include <vector>

namespace tensorhub::cli {

using Args = std::vector<std::string>;

int cmd_serve(const Args& args);              // commands/serve.cpp
int cmd_publish(const Args& args);            // commands/publish.cpp
int cmd_pull(const Args& args);               // commands/pull.cpp
int cmd_snapshot(const Args& args);           // commands/snapshot.cpp: dispatches to the four below
int cmd_snapshot_save(const Args& args);      // commands/pull.cpp
int cmd_snapshot_load(const Args& args);      // commands/publish.cpp
int cmd_snapshot_verify(const Args& args);    // commands/snapshot.cpp
int cmd_snapshot_inspect(const Args& args);   // commands/snapshot.cpp
int cmd_status(const Args& args);             // commands/status.cpp
int cmd_recover(const Args& args);            // commands/recover.cpp
int cmd_demo(const Args& args);               // commands/demo.cpp
int cmd_sim(const Args& args);                // commands/sim.cpp
int cmd_probe(const Args& args);              // probe/probe.cpp
int cmd_bench(const Args& args);              // bench/bench.cpp: dispatches to the scenarios below
int cmd_bench_p2p(const Args& args);          // bench/p2p.cpp
int cmd_bench_reshard(const Args& args);      // bench/reshard.cpp
int cmd_bench_publish(const Args& args);      // bench/publish.cpp
int cmd_bench_fanout(const Args& args);       // bench/fanout.cpp
int cmd_bench_stall(const Args& args);        // bench/stall.cpp
int cmd_bench_elastic(const Args& args);      // bench/elastic.cpp
int cmd_bench_crossdc(const Args& args);      // bench/crossdc.cpp
int cmd_bench_coordinator(const Args& args);  // bench/coordinator.cpp (not MPI)
int cmd_bench_fp8(const Args& args);          // bench/fp8.cpp (not MPI)

}  // namespace tensorhub::cli
