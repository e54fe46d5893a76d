"""The crowd providers by name. The interface (base.py) knows none of its implementations; this module knows them
all, so that adding a provider is one module and one line here."""

from ..models import Provider
from .base import CrowdProvider
from .links import LinkProvider
from .mturk import PREVIEW_ASSIGNMENT_ID, WORKER_ORIGINS, MTurkProvider
from .prolific import COMPLETE_URL, ProlificProvider

# What pages need to know of a platform's own addresses and ids, so that they need no provider module.
__all__ = ["COMPLETE_URL", "NAMES", "PREVIEW_ASSIGNMENT_ID", "WORKER_ORIGINS", "closure_notice", "get_provider",
           "offered"]

NAMES = ("prolific", "link", "mturk")  # The order a manager is offered them in: MTurk closed on 2026-09-30.


def get_provider(name: str, *, sandbox: bool | None = None) -> CrowdProvider:
    if name == "mturk":
        return MTurkProvider(sandbox=sandbox)
    if name == "prolific":
        return ProlificProvider()
    if name == "link":
        return LinkProvider()
    raise ValueError(f"Unknown provider {name!r}: use {', '.join(NAMES)}")


def closure_notice(name: str) -> str:
    """What a manager choosing `name` must know when the platform closed for good; "" when it did not."""
    closed_on = get_provider(name).closed_on
    if closed_on is None:
        return ""
    return (f"{Provider(name).label} closed for good on {closed_on:%Y-%m-%d}: it takes no new HITs. Its "
            "integration stays for what was published there before (sync, payments, the record of the study); "
            "publish new work on Prolific or with private links.")


def offered() -> list[tuple[str, str]]:
    """(name, label) in the order a manager is offered them (NAMES), the first the default; a closed platform is
    labelled with its closing day."""
    choices = []
    for name in NAMES:
        closed_on = get_provider(name).closed_on
        label = Provider(name).label
        choices.append((name, f"{label} (closed {closed_on:%Y-%m-%d})" if closed_on else label))
    return choices
