#!/usr/bin/env python3
"""Cache keys for scripts/lint.sh's clang-tidy results.

Usage: tidy_keys.py BUILD_DIR CLANG_TIDY CONFIG FILE...

Prints one line per FILE: "<key> <file>", where key is a SHA-256 over what decides clang-tidy's
answer for that file: the clang-tidy version, the check configuration (CONFIG, .clang-tidy), the
file's compile command, (this clone's folder left out), and the contents of every file its last compile read (the file itself
and each header it included, from the build's dependency log: `ninja -t deps`). A file whose
object is not built (no dependency record) gets the key "-": it is always checked.

A header changed anywhere (a project header, a system one) gives every file that includes it a
new key, so a cached "no error" is only reused for the same input.
"""

import hashlib
import json
import os
import shlex
import subprocess
import sys


def object_of(command):
    args = shlex.split(command)
    for i, arg in enumerate(args[:-1]):
        if arg == "-o":
            return args[i + 1]
    return None


def read_deps(build_dir, objects):
    """Map object -> list of input paths (as ninja recorded them), for built objects only."""
    if not objects:
        return {}
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps", *objects],
                         capture_output=True, text=True, check=False).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            name, _, rest = line.partition(": #deps")
            current = name if rest and "(VALID)" in rest else None
            if current is not None:
                deps[current] = []
        elif current is not None:
            deps[current].append(line.strip())
    return deps


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    build_dir, tidy, config, files = argv[0], argv[1], argv[2], argv[3:]
    root = os.getcwd()
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        db = {os.path.realpath(e["file"]): e for e in json.load(f)}
    version = subprocess.run([tidy, "--version"], capture_output=True, text=True,
                             check=False).stdout
    with open(config, "rb") as f:
        config_bytes = f.read()
    entries = {name: db.get(os.path.realpath(os.path.join(root, name))) for name in files}
    objects = {name: object_of(e["command"]) for name, e in entries.items() if e}
    deps = read_deps(build_dir, [o for o in objects.values() if o])
    for name in files:
        obj = objects.get(name)
        inputs = deps.get(obj) if obj else None
        if not inputs:
            print("-", name)
            continue
        h = hashlib.sha256()
        h.update(version.encode())
        h.update(config_bytes)
        # Paths of this clone are hashed as "<src>": another clone of the same sources (CI's) hits.
        h.update(entries[name]["command"].replace(root, "<src>").encode())
        ok = True
        for path in inputs:
            full = path if os.path.isabs(path) else os.path.join(build_dir, path)
            try:
                with open(full, "rb") as f:
                    h.update(path.encode() + b"\0" + hashlib.sha256(f.read()).digest())
            except OSError:
                ok = False  # an input is gone: the record is stale, check the file
                break
        print(h.hexdigest() if ok else "-", name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
