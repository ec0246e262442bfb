// Subcommands of the `tensorhub` tool. Each takes the arguments after its name and returns the
// process exit code; errors are thrown and turned into one line by main().
#pragma once

#include <string>
#include <vector>

namespace tensorhub::cli {

using Args = std::vector<std::string>;

int cmd_demo(const Args& args);
int cmd_bench(const Args& args);
int cmd_serve(const Args& args);

}  // namespace tensorhub::cli
