#!/usr/bin/env python3
"""Write a copy of a compile database that clang-tidy can read.

clang-tidy runs the compile commands of a GCC build through Clang's driver, which stops at
options only GCC knows ("error: unknown argument: '-fvect-cost-model=dynamic'"), so the file is
not checked at all; and Clang cannot read GCC's precompiled headers (TENSORHUB_PCH). This copy
leaves those options out; the rest of each command is unchanged.

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


def filtered(args: list[str]) -> list[str]:
    """The arguments without GCC-only options and without CMake's precompiled header
    (-include .../cmake_pch.hxx: Clang would load GCC's cmake_pch.hxx.gch next to it and stop at
    "not a valid precompiled PCH file"; each source is checked with its own includes)."""
    out: list[str] = []
    skip_next = False
    for i, a in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if a == "-include" and i + 1 < len(args) and args[i + 1].endswith("cmake_pch.hxx"):
            skip_next = True
            continue
        if a == "-Winvalid-pch" or not keep(a):
            continue
        out.append(a)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    src = os.path.join(argv[1], "compile_commands.json")
    with open(src, encoding="utf-8") as f:
        entries = json.load(f)
    for e in entries:
        if "arguments" in e:
            e["arguments"] = filtered(e["arguments"])
        elif "command" in e:
            args = shlex.split(e["command"])
            kept = filtered(args)
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
