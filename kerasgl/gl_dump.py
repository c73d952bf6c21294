"""The GL-object dump: counts and bytes of live GL objects by kind, from kerasgl's registry and
from the driver, and every byte by owner (tensors, model weights, plan buffers, programs, views,
queries: tensors/gl_owners.py), as a table or JSON. `scripts/gl_objects.py` and `kerasgl gl-objects` run main().

    python scripts/gl_objects.py            # table
    python scripts/gl_objects.py --json     # JSON
    python scripts/gl_objects.py --demo     # the memory guide's loop, with and without tidy
"""
from __future__ import annotations

import argparse
import json
import sys

from .ops.random import random_normal
from .runtime.driver_objects import PROBED_KINDS, driver_objects
from .tensors import ownership


def gl_objects() -> dict:
    """{'tensors': {...}, 'registry': {kind: {count, bytes}}, 'driver': {kind: {count, bytes}},
    'owners': {owner: {count, bytes}}, 'total_bytes': every GL byte kerasgl holds}."""
    usage = ownership.memory()
    found = driver_objects()
    registry = {kind: {"count": usage.gl_objects.get(kind, ownership.KindUsage(0, 0)).count,
                       "bytes": usage.gl_objects.get(kind, ownership.KindUsage(0, 0)).bytes}
                for kind in PROBED_KINDS}
    driver = {kind: {"count": found.count(kind), "bytes": found.bytes.get(kind, 0)}
              for kind in PROBED_KINDS}
    owners = {owner: {"count": u.count, "bytes": u.bytes} for owner, u in usage.by_owner.items()}
    return {"tensors": {"count": usage.num_tensors, "bytes": usage.num_bytes},
            "registry": registry, "driver": driver, "owners": owners,
            "total_bytes": usage.num_bytes_in_gpu}


def format_table(snapshot: dict, title: str = "") -> str:
    lines = [title] if title else []
    lines.append(f"live tensors: {snapshot['tensors']['count']} ({snapshot['tensors']['bytes']} bytes)")
    lines.append(f"{'GL objects':<14}{'kerasgl':>10}{'bytes':>14}{'driver':>10}{'bytes':>14}")
    for kind in PROBED_KINDS:
        ours, theirs = snapshot["registry"][kind], snapshot["driver"][kind]
        plural = "queries" if kind == "query" else kind + "s"
        lines.append(f"{plural:<14}{ours['count']:>10}{ours['bytes']:>14}"
                     f"{theirs['count']:>10}{theirs['bytes']:>14}")
    lines.append("(program and query bytes are not reported by GL: 0)")
    if "owners" in snapshot:
        lines.append(f"GL bytes by owner, {snapshot['total_bytes']:,} in all:")
        for owner, usage in snapshot["owners"].items():
            lines.append(f"  {owner:<14}{usage['count']:>8} objects{usage['bytes']:>16,} bytes")
    return "\n".join(lines)


def _demo_step(seed: int):
    """random_normal -> a small computation; every intermediate is a new tensor."""
    x = random_normal([64, 64], seed=seed)
    return (x * 2.0 + 1.0).relu().mean()


def run_demo(iterations: int = 100) -> list[tuple[str, dict]]:
    """The memory guide's loop, once inside tidy and once without; snapshots before, between,
    after, and after cleaning up what the second loop leaked."""
    alive_before = {id(t) for t in ownership.live_tensors()}
    stages = [("before", gl_objects())]
    for i in range(iterations):
        with ownership.tidy():
            y = _demo_step(i)
            y.dispose()
    stages.append((f"after {iterations} iterations inside tidy", gl_objects()))
    for i in range(iterations):
        y = _demo_step(i)
        y.dispose()              # only the result: x and the intermediates stay alive (a leak)
    stages.append((f"after {iterations} iterations without tidy (leaked)", gl_objects()))
    ownership.dispose([t for t in ownership.live_tensors() if id(t) not in alive_before])
    stages.append(("after disposing the leaked tensors", gl_objects()))
    return stages


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="kerasgl gl-objects",
        description="Live GL objects by kind, from kerasgl's registry and from the driver.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--demo", action="store_true",
                        help="run 100 iterations of a small computation inside tidy and without, "
                             "printing the counts before, between and after")
    parser.add_argument("--iterations", type=int, default=100, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.demo:
        stages = run_demo(args.iterations)
        if args.json:
            print(json.dumps([{"stage": name, **snap} for name, snap in stages], indent=2))
        else:
            print("\n\n".join(format_table(snap, f"== {name}") for name, snap in stages))
    else:
        snapshot = gl_objects()
        print(json.dumps(snapshot, indent=2) if args.json else format_table(snapshot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
