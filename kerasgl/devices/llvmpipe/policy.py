"""The llvmpipe policy: Mesa's software driver, whose compute dispatches run on a pool of CPU
worker threads. Its hooks pin those workers when the context is made (threads.py), huddle them
on the caller's CPU for small dispatches (placement.py), let each plan's first replays choose
where they wait (PlacementReplay below) and start the compile-ahead helper for large models
(compile_ahead.py). Picked only when GL_RENDERER names llvmpipe (kerasgl/devices/__init__.py)."""
from __future__ import annotations

import time

from ..policy import ContextFacts, DevicePolicy, Placement, PlanReplay
from . import compile_ahead, placement, threads


# The kernel variants llvmpipe runs by default (runtime/tuning.py's Tuning fields), measured on a
# 2-core AVX2 machine. Why image loads: llvmpipe loads a shader storage buffer lane by lane and
# component by component, with a bounds check and a branch each, while an image load of an
# RGBA32F texel is one gather per lane, so kernels read through texture-buffer views of the same
# buffers (runtime/buffer_views.py: no copy). CPU-time GFLOP/s, conv 1x1 as a 1024^3 GEMM: weights
# and input from buffers 35, weights from an image 51, both from images 71; matmul.comp at
# 1024^3, wall clock: 16.6 from buffers, 36.5 through views. Work groups of 8 lanes match its
# 8-wide SIMD; packed convolution weights are never 2^k vec4s long because llvmpipe compiles a
# second variant of a program for images whose width is a power of two (~1.9 s of ResNet50's
# cold first predict there). Large tiles per invocation (conv_pix 16 pixels x conv_cout_vec 8
# vec4s: ops/conv.py choose_pix has the figures): llvmpipe is bound by loads, not registers.
# No tiled GEMM and no implicit-GEMM convolution (GPUs' defaults: shared-memory tiles with
# barriers, which llvmpipe runs as coroutines, one SIMD batch of a work group after the other):
# interleaved runs on the 2-core machine, GFLOP/s median (best): conv 3x3 1x56x56x64->64 30.5
# (32.6) against 3.3 (3.7) as an implicit GEMM, 3.2 (3.9) in 128x128 tiles of 8x8; 1x1
# 1x28x28x128->512 26.7 (44.4) against 3.0 (4.6) / 5.6 (8.7); 3x3 1x14x14x256->256 53.6 (64.5)
# against 2.3 (2.6) / 5.9 (6.1); GEMM 1024^3 15.6 (26.9) on the convolution kernel, 11.9 (13.1)
# on matmul.comp, 1.5 (2.2) tiled 64x64, 4.5 (5.7) tiled 128x128 (a busy machine: every figure
# about half the quiet one's, the ratios as measured).
# No tiled depthwise kernel either (GPUs' default: the input tile staged in shared memory behind a
# barrier, shaders/depthwise_conv2d_tiled.glsl): the row kernel, each invocation loading the
# input columns of 8-16 outputs through image views, is 1.5-7x faster here. 3x3 MobileNetV2
# shapes, batch 1, ms per call (kg.profile, %FMA / %BW of the device peak 93.5 GFLOP/s, 20.6
# GB/s; load average 0.9-1.0 on the 2-core machine): 112x112x32 1.42 (5.5% / 11.0%) against
# 6.46 tiled 8x8 pixels x 4 vec4s x 1 (1.2% / 2.4%) and 2.94 with 4 outputs per invocation;
# 112x112x96 stride 2 1.04 against 7.22 / 4.06; 56x56x144 0.99 against 3.37 / 2.28; 14x14x576
# 0.50 against 1.13 / 0.73; 7x7x960 0.19 against 0.70 / 0.74.
# float16 weights decoded with integer vector operations (shaders/half_weights.glsl): llvmpipe runs
# unpackHalf2x16 lane by lane (a 3x3 convolution over 56x56x64 with float16 weights 18.7 ms with
# the built-in, 7.9 with the integer decode, 7.4 with float32 weights; load average about 6).
# Its image stores to r16f textures truncate toward zero (measured: one unit in the last place
# below numpy's round-to-nearest-even on about half the values), where GPUs round to nearest
# even: activation_dtype="float16" results are rounded in the shader first.
TUNING_DEFAULTS = {
    "conv_weights_image": True, "conv_input_image": True, "matmul_views": True,
    "window_views": True, "depthwise_views": True, "elementwise_views": True,
    "matmul_as_conv": True, "conv_local_size": 8, "conv_weights_not_power_of_two": True,
    "conv_pix": 16, "conv_cout_vec": 8, "matmul_tiled": False, "conv_gemm": False,
    "depthwise_tiled": False, "half_decode_integer": True, "half_store_rounding": True,
}


class LlvmpipePolicy(DevicePolicy):
    name = "llvmpipe"
    # Whether the workers can be moved (placement.available()): known once they are pinned, which
    # happens only here, and asked on every dispatch (three calls saved each time).
    placing = False

    def context_created(self, facts: ContextFacts) -> None:
        threads.pin_new_workers(facts.threads_before)
        self.placing = placement.available()

    def compute_threads(self) -> int | None:
        return threads.count()

    def pinned_cpus(self) -> tuple:
        return threads.pinned_cpus()

    def driver_notes(self) -> tuple:
        count, pinned = self.compute_threads(), self.pinned_cpus()
        if count == 0:
            where = " (inline: each dispatch runs on the calling thread)"
        elif pinned:
            where = (f", pinned to CPUs {', '.join(map(str, pinned))}; huddled on the caller's "
                     "CPU for small dispatches")
        else:
            where = ", not pinned"
        return (f"llvmpipe threads: {count}{where} (docs/performance.md)",)

    def tuning_defaults(self) -> dict:
        return dict(TUNING_DEFAULTS)

    def dispatch(self, run, groups: tuple) -> None:
        if groups == (1, 1, 1) and self.placing:
            # One work group runs on one worker: wake it on this CPU (placement.py).
            placement.run_huddled(run, groups)
        else:
            placement.spread()
            run(*groups)

    def plan_built(self, steps: list) -> PlanReplay:
        return PlacementReplay(steps) if self.placing else SpreadReplay(steps)

    def model_loaded(self, path, spec, describe):
        # A helper process compiles the shaders from the last layer backwards while the first
        # predict compiles them forwards (compile_ahead.py).
        return compile_ahead.maybe_start(path, compile_ahead.layer_count(spec), describe)


class SpreadReplay(PlanReplay):
    """Where the workers cannot be moved: every replay with them on their own CPUs (an eager
    one-group dispatch may have left them huddled)."""

    def replay(self, run) -> None:
        placement.spread()
        run(self.steps)


class PlacementReplay(PlanReplay):
    """The first replays try where the driver's workers wait during each step, timing each
    (placement.PlacementTrials), and the fastest placement is kept: later replays run with the
    caller pinned and Placement steps moving the workers where the choice changes."""

    def __init__(self, steps: list):
        super().__init__(steps)
        self.dispatches = sum(1 for step in steps if step.is_dispatch)
        self.trials: placement.PlacementTrials | None = placement.PlacementTrials(len(steps))
        self.placed: list | None = None       # the steps with placements, once chosen
        self.placement = self.trials.progress()
        self.cpu: int | None = None           # the caller's CPU during a pinned replay
        self._to_huddle = Placement(self._huddle)
        self._to_spread = Placement(placement.spread)

    def _huddle(self) -> None:
        placement.huddle(self.cpu)

    def replay(self, run) -> None:
        if self.placed is not None:
            with placement.caller_pinned() as cpu:
                self.cpu = cpu
                run(self.placed)
        elif self.trials is not None:
            self._trial(run)
        else:
            placement.spread()
            run(self.steps)

    def _trial(self, run) -> None:
        """One of the first replays: every dispatch timed, with the workers placed as the current
        trial says; when the trials are over, their choice is kept."""
        trials = self.trials
        with placement.caller_pinned() as cpu:
            if cpu is None:                   # the thread cannot be pinned: never place
                self.trials, self.placement = None, ""
                run(self.steps)
                return
            self.cpu = cpu
            start = time.perf_counter()
            placed = self.with_placement(trials.current)
            times = run(placed, timed=True)
            total = time.perf_counter() - start
        trials.record([t for step, t in zip(placed, times) if not isinstance(step, Placement)],
                      total)
        self.placement = trials.progress()
        if trials.done():
            self.trials = None
            huddled = sum(1 for step, h in zip(self.steps, trials.choice) if h and step.is_dispatch)
            self.placement = (f"{huddled} of {self.dispatches} dispatches huddled" if huddled
                              else "all dispatches spread")
            if huddled:
                self.placed = self.with_placement(trials.choice)

    def with_placement(self, huddle: list[bool]) -> list:
        """The steps with a Placement step before each dispatch that changes where the workers
        should be: huddled for the dispatches flagged in `huddle`, spread for the rest."""
        placed, huddled = [self._to_spread], False
        for step, wanted in zip(self.steps, huddle):
            if step.is_dispatch and wanted != huddled:
                placed.append(self._to_huddle if wanted else self._to_spread)
                huddled = wanted
            placed.append(step)
        return placed


__all__ = ["LlvmpipePolicy", "PlacementReplay", "SpreadReplay", "TUNING_DEFAULTS"]
