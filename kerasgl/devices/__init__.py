"""Device policies: what one driver needs that no other may run (llvmpipe/), behind one seam.
Imports nothing of kerasgl above the leaves (errors, settings).

The GL context picks one policy when it is made (`policy_for(GL_RENDERER)`) and the core calls
only that policy's hooks (policy.py lists them): the plain DevicePolicy for every driver but
Mesa's llvmpipe, which gets LlvmpipePolicy (llvmpipe/policy.py). KERASGL_DEVICE_POLICY=plain
(settings.py) gives any driver the plain one: on llvmpipe, none of llvmpipe/ then runs (no thread
pinning, no worker placement, no compile-ahead helper; results are the same, only slower).
"""
from __future__ import annotations

from .. import settings
from .llvmpipe.policy import LlvmpipePolicy
from .policy import ContextFacts, DevicePolicy, Placement, PlanReplay
from .process import thread_names


def policy_for(renderer: str) -> DevicePolicy:
    """The policy for a driver, by its GL_RENDERER (and the device_policy setting)."""
    if settings.get("device_policy") == "plain":
        return DevicePolicy()
    if "llvmpipe" in renderer.lower():
        return LlvmpipePolicy()
    return DevicePolicy()


__all__ = ["ContextFacts", "DevicePolicy", "LlvmpipePolicy", "Placement", "PlanReplay",
           "policy_for", "thread_names"]
