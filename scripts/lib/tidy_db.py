#!/usr/bin/env python3
"""Write a copy of a compile database that clang-tidy can read.

clang-tidy runs the compile commands of a GCC build through Clang's driver, which stops at
options only GCC knows ("error: unknown argument: '-fvect-cost-model=dynamic'"), so the file is
not checked at all. This copy leaves those options out; the rest of each command is unchanged.

usage: tidy_db.py BUILD_DIR OUT_DIR   (reads BUILD_DIR/compile_commands.json, writes
                                       OUT_DIR/compile_commands.json)
"""
import json
import os
import shlex
import sys

# Options of GCC that Clang's driver refuses (prefixes: "-fvect-cost-model" also covers
# "-fvect-cost-model=dynamic"). Add one here when clang-tidy reports "unknown argument".
GCC_ONLY = (
    "-fvect-cost-model",
    "-fsimd-cost-model",
    "-fno-tree-",
    "-ftree-",
    "-fconserve-stack",
    "-fmax-errors",
)


def keep(arg: str) -> bool:
    return not any(arg == p or arg.startswith(p) for p in GCC_ONLY)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    src = os.path.join(argv[1], "compile_commands.json")
    with open(src, encoding="utf-8") as f:
        entries = json.load(f)
    for e in entries:
        if "arguments" in e:
            e["arguments"] = [a for a in e["arguments"] if keep(a)]
        elif "command" in e:
            args = shlex.split(e["command"])
            kept = [a for a in args if keep(a)]
            if len(kept) != len(args):  # rewritten only where an option is left out
                e["command"] = shlex.join(kept)
    os.makedirs(argv[2], exist_ok=True)
    out = os.path.join(argv[2], "compile_commands.json")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1)
    os.replace(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
