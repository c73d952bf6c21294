"""Time each step of a model's execution plan (one glFinish per step), to see which dispatches a
batch-1 predict spends its time in. Usage: python scripts/probe_plan_steps.py MODEL.keras 1,224,224,3"""
import sys
import time

import numpy as np

import kerasgl as kg
from kerasgl.runtime import context


def main(path: str, shape: tuple, repeats: int = 20) -> None:
    model = kg.load_model(path)
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    for _ in range(4):
        model.predict(x, verbose=0)
    plan = next(e.plan for e in model._plans._entries.values() if e.plan is not None)
    ctx = context.get_context()
    steps = plan.steps
    names = getattr(plan, "step_names", [None] * len(steps))
    times = np.zeros(len(steps))
    full = plan.steps
    # Each step alone, run `repeats` times in a row, one glFinish at the end: llvmpipe runs a compute
    # dispatch synchronously, so this is the step's own cost (a step re-run on its own outputs
    # computes the same amount of work).
    for i, step in enumerate(full):
        plan.run_only([step] * repeats)
        ctx.finish()
        start = time.perf_counter()
        plan.run_only([step] * repeats)
        ctx.finish()
        times[i] = (time.perf_counter() - start) / repeats
    ctx.finish()
    start = time.perf_counter()
    for _ in range(repeats):
        plan.run_steps()
    ctx.finish()
    whole = (time.perf_counter() - start) / repeats
    for i, (step, t) in enumerate(zip(full, times)):
        groups = step.groups if step.is_dispatch else ""
        print(f"{i:3d} {type(step).__name__} groups={groups} {t * 1e3:8.3f} ms  {names[i] or ''}")
    print(f"sum {times.sum() * 1e3:.3f} ms over {len(full)} steps; whole plan {whole * 1e3:.3f} ms")
    model.dispose()


if __name__ == "__main__":
    main(sys.argv[1], tuple(int(s) for s in sys.argv[2].split(",")))
