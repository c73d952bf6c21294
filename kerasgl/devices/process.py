"""This process's threads as Linux lists them: what a device policy may want to know from just
before the GL context is made (a driver's worker threads appear while it is created). Generic:
no driver is named here. Elsewhere than Linux the list is empty."""
from __future__ import annotations

import os


def thread_names() -> dict[int, str]:
    """Thread id -> name of this process's threads ({} where /proc is not there)."""
    names = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return names
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
                names[int(tid)] = f.read().strip()
        except (OSError, ValueError):
            continue          # a thread that ended meanwhile
    return names
