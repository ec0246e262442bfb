#!/usr/bin/env python3
"""Writes the FP8 test vectors in this directory with PyTorch (tests/unit/test_fp8.cpp reads them;
the C++ code needs no PyTorch).

  ~/.cache/tensorhub/torch-venv/bin/python tests/data/fp8/make_vectors.py   (torch from PyPI)

cast_<format>.bin      65,536 bytes: torch's float32 -> FP8 cast of every bfloat16 bit pattern
                       0x0000..0xffff (as float32), in that order.
blocks_<name>.bin      a bf16 tensor of 200 x 150 made by input_bits() below (the C++ test makes
                       the same one), quantized per block as a checkpoint stores it: per block
                       scale_inv = amax / fmax in float32 (1.0 for a block of zeros), q =
                       (x / scale_inv).to(fp8); the file holds the float32 scales (little-endian,
                       block-row-major) and then the 30,000 q bytes (row-major).
"""
import os
import struct

import torch

ROWS, COLS = 200, 150
FORMATS = {"e4m3fn": (torch.float8_e4m3fn, 448.0), "e5m2": (torch.float8_e5m2, 57344.0)}
# name: (format, block rows, block cols); 0 means the whole dimension.
BLOCKS = {
    "e4m3fn_128x128": ("e4m3fn", 128, 128),
    "e5m2_128x128": ("e5m2", 128, 128),
    "e4m3fn_row": ("e4m3fn", 1, 0),
    "e4m3fn_tensor": ("e4m3fn", 0, 0),
}


def input_bits(n):
    """bf16 bit patterns of both signs, exponents 2^-27..2^22, every mantissa; rows 128..199 of
    columns 0..127 are zero (a zero block)."""
    out = []
    for i in range(n):
        h = (i * 2654435761 + 12345) & 0xFFFFFFFF
        h ^= h >> 15
        h = (h * 2246822519) & 0xFFFFFFFF
        h ^= h >> 13
        sign = (h >> 31) & 1
        exp = 100 + ((h >> 8) % 50)
        out.append((sign << 15) | (exp << 7) | (h & 0x7F))
    for r in range(128, ROWS):
        for c in range(0, 128):
            out[r * COLS + c] = 0
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    every = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float()
    for name, (dtype, _) in FORMATS.items():
        with open(os.path.join(here, f"cast_{name}.bin"), "wb") as f:
            f.write(every.to(dtype).view(torch.uint8).numpy().tobytes())
    bits = torch.tensor(input_bits(ROWS * COLS), dtype=torch.int32).to(torch.int16)
    x = bits.view(torch.bfloat16).reshape(ROWS, COLS).float()
    for name, (fmt, br, bc) in BLOCKS.items():
        dtype, fmax = FORMATS[fmt]
        br, bc = br or ROWS, bc or COLS
        q = torch.empty(ROWS, COLS, dtype=dtype)
        scales = []
        for r0 in range(0, ROWS, br):
            for c0 in range(0, COLS, bc):
                blk = x[r0 : r0 + br, c0 : c0 + bc]
                amax = blk.abs().amax()
                s = amax / fmax if amax.item() != 0 else torch.tensor(1.0)
                scales.append(s.item())
                q[r0 : r0 + br, c0 : c0 + bc] = (blk / s).to(dtype)
        with open(os.path.join(here, f"blocks_{name}.bin"), "wb") as f:
            f.write(struct.pack(f"<{len(scales)}f", *scales))
            f.write(q.view(torch.uint8).numpy().tobytes())


if __name__ == "__main__":
    main()
