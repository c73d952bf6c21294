"""Probe convolution kernels on this device: GFLOP/s of kerasgl.ops.conv for a few ResNet50 /
MobileNetV2 shapes, wall-clock and CPU-time based (steadier on a shared machine).

    python scripts/probe_conv.py --cases conv3x3,conv1x1_64_256,conv1x1_512_128,depthwise
"""
from __future__ import annotations

import argparse

import numpy as np

import kerasgl as kg
from kerasgl.ops import conv
from probe_matmul import timed  # same timing loop (scripts/ is on sys.path when run)

# name: (input [n, h, w, cin], kernel size, cout (None: depthwise), stride)
CASES = {
    "conv3x3": ((1, 56, 56, 64), 3, 64, 1),
    "conv3x3_14_256": ((1, 14, 14, 256), 3, 256, 1),
    "conv1x1_64_256": ((1, 56, 56, 64), 1, 256, 1),
    "conv1x1_256_64": ((1, 56, 56, 256), 1, 64, 1),
    "conv1x1_512_128": ((1, 28, 28, 512), 1, 128, 1),
    "conv1x1_1024_256": ((1, 14, 14, 1024), 1, 256, 1),
    "conv1x1_2048_512": ((1, 7, 7, 2048), 1, 512, 1),
    "gemm1024_as_1x1": ((1, 32, 32, 1024), 1, 1024, 1),
    "conv3x3_7_512": ((1, 7, 7, 512), 3, 512, 1),
    "conv1x1_7_512_2048": ((1, 7, 7, 512), 1, 2048, 1),
    "stem7x7": ((1, 230, 230, 3), 7, 64, 2),
    "depthwise": ((1, 112, 112, 32), 3, None, 1),
}


def reference(x, kernel, stride, pad, depthwise):
    """numpy direct convolution (float64) for the error column."""
    n, h, w, cin = x.shape
    k = kernel.shape[0]
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    out = 0
    for i in range(k):
        for j in range(k):
            patch = xp[:, i:i + stride * oh:stride, j:j + stride * ow:stride, :]
            out = out + (patch * kernel[i, j, :, 0] if depthwise else patch @ kernel[i, j])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiles", nargs="*", default=[], help="PIX,COUT_VEC pairs to force (default: chosen)")
    args = parser.parse_args()
    chosen_pix, chosen_vec = conv.choose_pix, conv.choose_cout_vec
    rng = np.random.default_rng(0)
    for name in args.cases.split(","):
        shape, k, cout, stride = CASES[name]
        n, h, w, cin = shape
        depthwise = cout is None
        x = rng.standard_normal(shape, dtype=np.float32)
        kernel = (rng.standard_normal((k, k, cin, 1 if depthwise else cout), dtype=np.float32) * 0.1)
        pad = (k - 1) // 2 if stride == 1 else 0
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        flops = 2.0 * n * oh * ow * k * k * cin * (1 if depthwise else cout)
        for tile in args.tiles or [None]:
            if tile:
                pix, vec = (int(v) for v in tile.split(","))
                conv.choose_pix = lambda n_pixels, blocks, pix=pix: pix
                conv.choose_cout_vec = lambda cout_pg, vec=vec: vec
            else:
                conv.choose_pix, conv.choose_cout_vec = chosen_pix, chosen_vec
            run_case(name, x, kernel, stride, pad, depthwise, flops, args.repeats, tile)
    conv.choose_pix, conv.choose_cout_vec = chosen_pix, chosen_vec


def run_case(name, x, kernel, stride, pad, depthwise, flops, repeats, tile):
        with kg.tidy():
            gx = kg.tensor(x)
            if depthwise:
                packed = conv.pack_depthwise(kernel, None, kg.tensor)
                op = lambda: conv.depthwise_conv2d(gx, packed, (stride, stride), padding=((pad, pad), (pad, pad)))  # noqa: E731
            else:
                packed = conv.pack_conv(kernel, None, 1, kg.tensor)
                op = lambda: conv.conv2d(gx, packed, (stride, stride), padding=((pad, pad), (pad, pad)))  # noqa: E731
            wall, cpu = timed(op, repeats)
            out = op()
            err = float(np.max(np.abs(out.numpy() - reference(x, kernel, stride, pad, depthwise))))
            out.dispose()
        print(f"{name} {tile or ''}: {flops / wall / 1e9:.2f} GFLOP/s wall, {flops / cpu / 1e9:.2f} cpu-based "
              f"({wall * 1e3:.1f} ms), max abs err {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
