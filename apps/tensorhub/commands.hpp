// Subcommands of the `tensorhub` tool. Each takes the arguments after its name and returns the
// process exit code; errors are thrown and turned into one line by main().
#pragma once

#include <string>
#include <vector>

namespace tensorhub::cli {

using Args = std::vector<std::string>;

int cmd_demo(const Args& args);
int cmd_bench(const Args& args);  // dispatches to the scenarios below (cmd_bench.cpp)
int cmd_bench_p2p(const Args& args);
int cmd_bench_fanout(const Args& args);
int cmd_bench_stall(const Args& args);
int cmd_bench_elastic(const Args& args);
int cmd_bench_crossdc(const Args& args);
int cmd_serve(const Args& args);
int cmd_probe(const Args& args);
int cmd_publish(const Args& args);
int cmd_pull(const Args& args);
int cmd_status(const Args& args);
int cmd_recover(const Args& args);
int cmd_snapshot(const Args& args);
int cmd_snapshot_save(const Args& args);  // `snapshot save`, in cmd_pull.cpp
int cmd_snapshot_load(const Args& args);  // `snapshot load`, in cmd_publish.cpp

}  // namespace tensorhub::cli
