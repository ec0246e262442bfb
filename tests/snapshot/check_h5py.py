#!/usr/bin/env python3
"""Checks a snapshot written by `snapshot_tool write-sample PATH` with h5py and h5dump.

Usage: check_h5py.py PATH
Exit status: 0 ok, 1 a check failed, 77 h5py/numpy or h5dump missing (ctest SKIP_RETURN_CODE).
What a user of format v1 sees (share/doc/snapshot-format.md): root attributes, one dataset per
tensor under /tensors with its real shape, numpy dtypes h5py picks (bf16 -> float32, exact),
the committed /types/bfloat16, per-dataset attributes, and `h5dump -H` working.
"""
import json
import shutil
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: {e} (install python3-h5py python3-numpy)")
    sys.exit(77)

H5DUMP = shutil.which("h5dump")
if H5DUMP is None:
    print("SKIP: h5dump not found (install hdf5-tools)")
    sys.exit(77)

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def as_str(v):
    return v.decode() if isinstance(v, bytes) else str(v)


path = sys.argv[1]
with h5py.File(path, "r") as f:
    a = f.attrs
    expect(int(a["tensorhub_format_version"]) == 3, "format version 3")
    expect(a["tensorhub_format_version"].dtype == np.uint32, "format version is u32")
    expect(as_str(a["model"]) == "policy", "model attribute")
    expect(int(a["version"]) == 3 and a["version"].dtype == np.uint64, "version attribute u64")
    expect(int(a["chunk_bytes"]) == 4096, "chunk_bytes attribute")
    expect(as_str(a["created_by"]).startswith("tensorhub "), "created_by")
    expect(as_str(a["created_at"]).endswith("Z"), "created_at is UTC")
    manifest = json.loads(as_str(a["manifest"]))
    expect(manifest["checksum_algorithm"] == "xxh3_64", "the manifest names its checksum algorithm")
    names = [t["name"] for t in manifest["tensors"]]
    expect(names == ["layers.0.w", "embed/weight", "steps", "mask", "half"], f"manifest tensors {names}")

    w = f["/tensors/layers.0.w"]
    expect(w.shape == (2, 3) and w.dtype == np.float32, f"f32 dataset {w.shape} {w.dtype}")
    expect(np.array_equal(w[()], np.array([[1.5, -2, 3.25], [0, 0.001, 65504]], dtype=np.float32)), "f32 values")
    expect(as_str(w.attrs["tensorhub_dtype"]) == "f32", "f32 dtype attribute")
    expect(int(w.attrs["tensorhub_shard"]) == 0, "shard attribute")
    sums = list(w.attrs["tensorhub_chunk_xxh3_64"])
    expect(sums == manifest["tensors"][0]["checksums"], "checksum attribute equals the manifest's")

    e = f["/tensors/embed%2Fweight"]  # '/' in a tensor name is escaped as %2F
    expect(as_str(e.attrs["tensorhub_name"]) == "embed/weight", "tensorhub_name keeps the real name")
    expect(e.shape == (3, 2), f"bf16 shape {e.shape}")
    expect(e.dtype == np.float32, f"h5py maps the bfloat16 type to float32, got {e.dtype}")
    want = np.array([[1.0, -2.5], [3.140625, 1e30], [-0.0078125, 256.0]], dtype=np.float32)
    # 1e30 is not exact in bf16: compare with the value bf16 truncation gives.
    want[1, 1] = np.frombuffer((np.array([1e30], dtype=np.float32).view(np.uint32) & 0xFFFF0000).tobytes(),
                               dtype=np.float32)[0]
    expect(np.array_equal(e[()], want), f"bf16 values {e[()]}")
    expect(as_str(e.attrs["tensorhub_dtype"]) == "bf16", "bf16 dtype attribute")
    t = f["/types/bfloat16"]
    expect(isinstance(t, h5py.Datatype), "/types/bfloat16 is a committed datatype")
    expect(as_str(t.attrs["tensorhub_dtype"]) == "bf16", "the named type says bf16")
    tid = t.id
    expect(tid.get_size() == 2 and tid.get_ebias() == 127 and tid.get_fields() == (15, 7, 8, 0, 7),
           f"bfloat16 layout {tid.get_size()} {tid.get_ebias()} {tid.get_fields()}")
    expect(e.id.get_type().committed(), "the bf16 dataset uses the committed type")

    s = f["/tensors/steps"]
    expect(s.dtype == np.int32 and list(s[()]) == [7, -1, 2147483647], "i32 values")
    m = f["/tensors/mask"]
    expect(m.dtype == np.bool_ and list(m[()]) == [True, False, True, True], f"bool {m.dtype} {m[()]}")
    h = f["/tensors/half"]
    expect(h.dtype == np.float16 and h[0] == 1.0 and h[1] == -2.0, f"f16 {h.dtype} {h[()]}")

out = subprocess.run([H5DUMP, "-H", path], capture_output=True, text=True)
expect(out.returncode == 0, f"h5dump -H exit status {out.returncode}: {out.stderr}")
for needle in ['DATATYPE "bfloat16"', 'DATATYPE  "/types/bfloat16"', 'DATASET "layers.0.w"',
               "tensorhub_format_version", "tensorhub_chunk_xxh3_64", "H5T_IEEE_F32LE"]:
    expect(needle in out.stdout, f"h5dump -H output has {needle!r}")
out = subprocess.run([H5DUMP, "-d", "/tensors/embed%2Fweight", path], capture_output=True, text=True)
expect(out.returncode == 0 and "3.14062" in out.stdout and "-2.5" in out.stdout,
       f"h5dump prints bf16 values: {out.stdout[-400:]}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print(f"ok: h5py {h5py.version.version} (HDF5 {h5py.version.hdf5_version}) and h5dump read {path}")
