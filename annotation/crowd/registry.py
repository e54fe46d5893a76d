"""The crowd providers by name. The interface (base.py) knows none of its implementations; this module knows them
all, so that adding a provider is one module and one line here."""

from .base import CrowdProvider
from .links import LinkProvider
from .mturk import PREVIEW_ASSIGNMENT_ID, WORKER_ORIGINS, MTurkProvider
from .prolific import COMPLETE_URL, ProlificProvider

# What pages need to know of a platform's own addresses and ids, so that they need no provider module.
__all__ = ["COMPLETE_URL", "NAMES", "PREVIEW_ASSIGNMENT_ID", "WORKER_ORIGINS", "get_provider"]

NAMES = ("prolific", "link", "mturk")  # The order a manager is offered them in: MTurk closed on 2026-09-30.


def get_provider(name: str, *, sandbox: bool | None = None) -> CrowdProvider:
    if name == "mturk":
        return MTurkProvider(sandbox=sandbox)
    if name == "prolific":
        return ProlificProvider()
    if name == "link":
        return LinkProvider()
    raise ValueError(f"Unknown provider {name!r}: use {', '.join(NAMES)}")
