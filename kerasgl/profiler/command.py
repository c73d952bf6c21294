"""`kerasgl profile MODEL [INPUT]`: a model's predict profiled, printed as the profile's table.

Without INPUT the model runs on random data (zeros for integer inputs: token ids must be in
range) of its input shapes at --batch-size samples. Before the profiled calls, predict runs until
every plan it uses is compiled (--no-warm-up profiles the cold first call instead, compiles and
recordings included), so the table shows the steady state a service sees.
"""
from __future__ import annotations

import numpy as np

from .. import cli_io
from ..compiler.feeding import DEFAULT_BATCH_SIZE
from ..errors import ShapeError
from ..model import load_model
from . import profile

WARM_UP_CALLS = 12


def random_inputs(model, batch_size: int) -> list:
    rng = np.random.default_rng(0)
    arrays = []
    for spec in model.inputs:
        if any(d is None for d in spec.shape[1:]):
            raise ShapeError(f"Model '{model.name}' input '{spec.name}' has shape {spec.shape}: "
                             "give an INPUT file to profile a model with free dimensions.")
        shape = (batch_size, *spec.shape[1:])
        arrays.append(rng.random(shape, dtype=np.float32) if spec.dtype == "float32"
                      else np.zeros(shape, spec.dtype))
    return arrays


def warm_up(model, x, batch_size: int | None) -> int:
    """Predict until no plan the call uses is still recording or choosing its placement; returns
    the calls made."""
    for calls in range(1, WARM_UP_CALLS + 1):
        model.predict(x, batch_size=batch_size, verbose=0)
        if all(i.status != "recording" and not i.placement.startswith("trying")
               for i in model.plan_info()):
            return calls
    return WARM_UP_CALLS


def run(args) -> int:
    if args.input is not None:
        cli_io.check_paths(args.input, None)
    with load_model(args.model, **cli_io.dtype_options(args)) as model:
        if args.input is not None:
            x = cli_io.read_inputs(args.input, model, getattr(args, "array", None))
        else:
            arrays = random_inputs(model, args.batch_size or 1)
            x = arrays if len(arrays) > 1 else arrays[0]
        batch_size = args.batch_size
        calls = 0 if args.no_warm_up else warm_up(model, x, batch_size)
        with profile(gpu_timing=not args.cpu_only) as p:
            for _ in range(args.runs):
                model.predict(x, batch_size=batch_size, verbose=0)
        shapes = ", ".join(str(list(np.shape(a))) for a in (x if isinstance(x, list) else [x]))
        samples = int(np.shape(x[0] if isinstance(x, list) else x)[0])
        ran = (f"batch size {batch_size}" if batch_size else
               f"batch size {min(samples, DEFAULT_BATCH_SIZE)} (predict's default: up to "
               f"{DEFAULT_BATCH_SIZE} samples a batch)")
        print(f"model '{model.name}' ({args.model}){half_note(model)}, input {shapes}, {ran}; "
              f"{args.runs} profiled predict call(s) after {calls} warm-up call(s)")
        print(p.table(sort_by=args.sort_by, limit=args.limit))
        if args.trace:
            print(f"wrote {p.export_chrome_trace(args.trace)} (open it in ui.perfetto.dev)")
        if args.plot:
            print(f"wrote {p.plot(args.plot, title=f'{model.name}: ' + shapes)}")
    return 0


def half_note(model) -> str:
    """The header's note of what the model keeps as float16 (load_model's storage_dtype and
    activation_dtype): ", float16 weights and activations", either alone, or nothing."""
    halves = [what for what, dtype in (("weights", model.storage_dtype),
                                       ("activations", model.activation_dtype))
              if dtype == "float16"]
    return f", float16 {' and '.join(halves)}" if halves else ""


__all__ = ["half_note", "random_inputs", "run", "warm_up"]
