"""A profile as Chrome trace event JSON (the "JSON Object Format" of the Trace Event Format),
which ui.perfetto.dev and chrome://tracing open.

One process ("kerasgl"), three tracks (threads): the CPU time of each dispatch call, the GPU time
between its two timestamps (where the driver gave them), and the layers (one span from a layer's
first dispatch to its last, on the CPU's clock). Each is a complete event ("ph": "X": ts and dur
in microseconds from the profile's start), named by its kernel, with the layer, shapes, work
groups, work group size, invocations, declared flops and bytes (ops/work.py) and the GL bytes
allocated, freed and live in `args`. GL memory is a counter track ("ph": "C", "GL memory"): the
bytes kerasgl holds after each event. Track names are metadata events ("ph": "M").
"""
from __future__ import annotations

import json

PID = 1
CPU_TID, GPU_TID, LAYER_TID = 1, 2, 3


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def trace_events(profile) -> list[dict]:
    """The trace's events, metadata first."""
    events = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "ts": 0,
         "args": {"name": "kerasgl"}},
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": CPU_TID, "ts": 0,
         "args": {"name": "CPU: dispatch calls"}},
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": LAYER_TID, "ts": 0,
         "args": {"name": "layers"}},
    ]
    if profile.gpu_timing:
        events.append({"ph": "M", "name": "thread_name", "pid": PID, "tid": GPU_TID, "ts": 0,
                       "args": {"name": "GPU (timer queries)"}})
    events.append(_counter(0.0, profile.bytes_at_start))
    for e in profile.events:
        args = {"layer": e.layer, "shapes": [list(s) for s in e.shapes],
                "groups": list(e.groups) if e.groups else None, "plan": e.plan or None,
                "bytes_allocated": e.bytes_allocated, "bytes_freed": e.bytes_freed,
                "live_bytes": e.live_bytes, "local_size": e.local_size,
                "invocations": e.invocations, "flops": e.flops, "bytes": e.bytes}
        category = "replay" if e.replayed else "eager"
        events.append({"ph": "X", "name": e.kernel, "cat": category, "pid": PID, "tid": CPU_TID,
                       "ts": _us(e.cpu_start), "dur": _us(e.cpu_time), "args": args})
        if e.gpu_time is not None:
            events.append({"ph": "X", "name": e.kernel, "cat": category, "pid": PID,
                           "tid": GPU_TID, "ts": _us(e.gpu_start), "dur": _us(e.gpu_time),
                           "args": {"layer": e.layer}})
        events.append(_counter(e.cpu_start + e.cpu_time, e.live_bytes))
    events += _layer_spans(profile.events)
    events.append(_counter(profile.wall_time, profile.bytes_at_end))
    return events


def _counter(seconds: float, live_bytes: int) -> dict:
    return {"ph": "C", "name": "GL memory", "pid": PID, "tid": 0, "ts": _us(seconds),
            "args": {"live bytes": live_bytes}}


def _layer_spans(events) -> list[dict]:
    """One span per run of consecutive events of one layer."""
    spans, run = [], []
    for e in events + [None]:
        if run and (e is None or e.layer != run[0].layer):
            first, last = run[0], run[-1]
            spans.append({"ph": "X", "name": first.layer or "(no layer)", "cat": "layer",
                          "pid": PID, "tid": LAYER_TID, "ts": _us(first.cpu_start),
                          "dur": _us(last.cpu_start + last.cpu_time - first.cpu_start),
                          "args": {"dispatches": len(run)}})
            run = []
        if e is not None:
            run.append(e)
    return spans


def export(profile, path) -> str:
    """Write the trace to `path` (JSON); returns the path."""
    document = {"traceEvents": trace_events(profile), "displayTimeUnit": "ms",
                "otherData": {"producer": "kerasgl.profile", "gpu_timing": profile.gpu_timing,
                              "note": profile.note}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f)
    return str(path)


__all__ = ["export", "trace_events"]
