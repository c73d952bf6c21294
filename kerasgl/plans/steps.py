"""The steps a plan replays, each with everything it needs resolved when the plan was built:

    Dispatch    bind buffers, images and views, set uniforms, run the program, barrier
    Copy        a GPU-to-GPU buffer copy
    Upload      data written into a buffer the call wrote before (not a constant)
    Placement   put in by the device policy (kerasgl/devices/policy.py), not recorded: it moves
                where the driver runs the next steps

Every step has run(replay) and run_timed(replay) (the seconds the program's dispatch took, for a
Dispatch; None for the others) and says whether it is_dispatch. `replay` is the one Replay state
of the plan: the buffer bound at each binding so far in this replay (a binding left as it is is
not bound again), the context's barrier and copy. Steps are on the replay's hot path: plain
classes with __slots__, no per-step allocation.
"""
from __future__ import annotations

import time

from ..devices.policy import Placement
from ..runtime.shaders import set_uniforms

_clock = time.perf_counter


class Replay:
    """What the steps of one replay share (made once per plan, `bound` emptied per replay)."""
    __slots__ = ("bound", "barrier", "copy_buffer")

    def __init__(self, ctx):
        self.bound: dict = {}
        self.barrier = ctx.memory_barrier
        self.copy_buffer = ctx.copy_buffer


class Dispatch:
    __slots__ = ("dispatch", "binds", "images", "views", "settings", "groups")
    is_dispatch = True

    def __init__(self, dispatch, binds, images, views, settings, groups):
        self.dispatch = dispatch          # the moderngl program's run
        self.binds = binds                # (binding, buffer)
        self.images = images              # (unit, texture, read, write, format)
        self.views = views                # (unit, texture view)
        self.settings = settings          # (moderngl uniform member, value)
        self.groups = groups

    def _prepare(self, replay) -> None:
        bound = replay.bound
        for binding, handle in self.binds:
            if bound.get(binding) is not handle:
                handle.bind_to_storage_buffer(binding)
                bound[binding] = handle
        for unit, texture, read, write, fmt in self.images:
            texture.bind_to_image(unit, read=read, write=write, format=fmt)
        for unit, view in self.views:
            view.bind(unit)
        set_uniforms(self.settings)

    def run(self, replay) -> None:
        # _prepare's body, inline: this is the one loop every replayed dispatch runs.
        bound = replay.bound
        for binding, handle in self.binds:
            if bound.get(binding) is not handle:
                handle.bind_to_storage_buffer(binding)
                bound[binding] = handle
        for unit, texture, read, write, fmt in self.images:
            texture.bind_to_image(unit, read=read, write=write, format=fmt)
        for unit, view in self.views:
            view.bind(unit)
        set_uniforms(self.settings)
        self.dispatch(*self.groups)
        replay.barrier()

    def run_timed(self, replay) -> float:
        """As run; returns the seconds the dispatch itself took (on llvmpipe it returns when its
        work is done)."""
        self._prepare(replay)
        start = _clock()
        self.dispatch(*self.groups)
        seconds = _clock() - start
        replay.barrier()
        return seconds


class Copy:
    __slots__ = ("dst", "src", "size", "read_offset", "write_offset")
    is_dispatch = False

    def __init__(self, dst, src, size, read_offset, write_offset):
        self.dst, self.src, self.size = dst, src, size
        self.read_offset, self.write_offset = read_offset, write_offset

    def run(self, replay) -> None:
        replay.copy_buffer(self.dst, self.src, size=self.size, read_offset=self.read_offset,
                           write_offset=self.write_offset)

    def run_timed(self, replay) -> None:
        self.run(replay)


class Upload:
    __slots__ = ("handle", "data")
    is_dispatch = False

    def __init__(self, handle, data: bytes):
        self.handle, self.data = handle, data

    def run(self, replay) -> None:
        self.handle.write(self.data)

    def run_timed(self, replay) -> None:
        self.run(replay)


__all__ = ["Copy", "Dispatch", "Placement", "Replay", "Upload"]
