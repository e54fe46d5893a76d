"""The crowd-provider interface: everything the platform asks of MTurk, Prolific or a private link.

Every outbound decision (approve, reject, bonus, block, add a place) is a Decision row executed by the outbox
(outbox.py); providers answer "already done" as success (`AlreadyDone`) and raise `ProviderTransientError` for what a
retry may fix.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from ..models import ProviderResource

CENT = Decimal("0.01")


def usd(value) -> Decimal:
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


class ProviderError(Exception):
    """The provider refused; `code` is its error code. Not retried: a person must look."""

    def __init__(self, message: str, code: str = ""):
        self.code = code
        super().__init__(f"{code}: {message}" if code else message)


class ProviderTransientError(ProviderError):
    """The provider failed in a way a retry may fix (a service fault, a timeout, a 5xx, a 429)."""


class AlreadyDone(Exception):
    """The provider says the action was carried out before: success, never a second payment."""

    def __init__(self, response: dict | None = None):
        self.response = response or {}
        super().__init__("already done")


@dataclass
class CostEstimate:
    hits: int
    assignments_per_hit: int
    reward_usd: Decimal
    fee_rate: Decimal
    expected_bonuses: int
    bonus_usd: Decimal
    # Every HIT's own places added up, where HITs ask for different numbers (a top-up HIT asks for its own).
    places: int | None = None

    @property
    def assignments(self) -> int:
        return self.hits * self.assignments_per_hit if self.places is None else self.places

    @property
    def rewards(self) -> Decimal:
        return usd(self.reward_usd * self.assignments)

    @property
    def reward_fees(self) -> Decimal:
        return usd(self.rewards * self.fee_rate)

    @property
    def bonuses(self) -> Decimal:
        return usd(self.bonus_usd * self.expected_bonuses)

    @property
    def bonus_fees(self) -> Decimal:
        return usd(self.bonuses * self.fee_rate)

    @property
    def total(self) -> Decimal:
        return self.rewards + self.reward_fees + self.bonuses + self.bonus_fees

    def as_dict(self) -> dict:
        return {"hits": self.hits, "assignments_per_hit": self.assignments_per_hit,
                "assignments": self.assignments, "reward_usd": str(self.reward_usd),
                "fee_rate": str(self.fee_rate), "rewards": str(self.rewards), "reward_fees": str(self.reward_fees),
                "expected_bonuses": self.expected_bonuses, "bonuses": str(self.bonuses),
                "bonus_fees": str(self.bonus_fees), "total": str(self.total)}


@dataclass
class RemoteSubmission:
    """An assignment as the provider lists it."""

    external_assignment_id: str
    external_hit_id: str
    worker_id: str
    status: str  # the provider's word: Submitted/Approved/Rejected, or AWAITING REVIEW/APPROVED/...
    submitted: bool
    raw: dict = field(default_factory=dict)


@dataclass
class PublishItem:
    """One HIT to create: what the dry run prints and what publish sends."""

    hit_id: int
    url: str
    units: int
    # The submissions its round asks for (Hit.places): the first round's places, never N up front.
    places: int


class CrowdProvider(ABC):
    """One crowd platform. Every provider (MTurk, Prolific, private links) has this shape; what a platform cannot do
    raises NotImplementedError. Methods raise ProviderError / ProviderTransientError, or AlreadyDone where relevant."""

    name = ""
    #: Resources (qualification types, groups) made once per platform account; MTurk keeps its sandbox apart.
    sandbox = False
    #: Whether the platform has a sandbox where nothing is paid (only MTurk: a Prolific study is always real).
    has_sandbox = False
    #: The day the platform stopped taking work for good, if it did; its integration stays for the work published
    #: before (syncing, payments, the protocol's record).
    closed_on: date | None = None
    #: Origins allowed to frame the HIT pages (CSP frame-ancestors); empty: never framed.
    frame_ancestors: tuple[str, ...] = ()
    #: How the top-up HITs of a live batch reach its workers (annotation/crowd/topups.py): "hits", as HITs of a new
    #: batch, each paid for its own size; "places", as more places in the batch (a Prolific study has one reward and
    #: serves any HIT of its task); "", nothing to call (private links serve the platform's own pool).
    topups = ""

    def fee_rate(self, assignments_per_hit: int) -> Decimal:
        return Decimal("0")

    def estimate(self, *, hits: int, assignments_per_hit: int, reward_usd: Decimal, expected_bonuses: int,
                 bonus_usd: Decimal, places: int | None = None) -> CostEstimate:
        return CostEstimate(hits=hits, assignments_per_hit=assignments_per_hit, reward_usd=usd(reward_usd),
                            fee_rate=self.fee_rate(assignments_per_hit), expected_bonuses=expected_bonuses,
                            bonus_usd=usd(bonus_usd), places=places)

    # --- Publishing
    def describe(self, plan) -> list[str]:
        """The requests publishing `plan` would send (the dry run), without sending any."""
        return [f"{len(plan.items)} HITs at {plan.entry_url or 'private links'}"]

    def prepare(self, batch, *, entry_url: str) -> None:
        """Create what the batch needs once (qualification types, a HIT type, a study at `entry_url`)."""
        return None  # Nothing to create for a platform without such resources (private links).

    def _resource(self, key: str, create) -> str:
        """The id of a resource made once on the platform (`create()` makes it), recorded so it is never made twice."""
        found = ProviderResource.objects.filter(provider=self.name, sandbox=self.sandbox, key=key).first()
        if found:
            return found.external_id
        external_id = create()
        ProviderResource.objects.get_or_create(provider=self.name, sandbox=self.sandbox, key=key,
                                               defaults={"external_id": external_id})
        return external_id

    @abstractmethod
    def publish_hit(self, batch, crowd_hit, url: str) -> str:
        """Create one HIT; returns its external id. Must be safe to call again with the same request token."""
        raise NotImplementedError

    def finish_publish(self, batch) -> None:
        """Called once every HIT exists (Prolific publishes the study here)."""
        return None  # Most platforms publish HIT by HIT.

    # --- Workers
    @abstractmethod
    def list_submissions(self, batch) -> list[RemoteSubmission]:
        raise NotImplementedError

    def lookup(self, external_assignment_id: str) -> RemoteSubmission | None:
        """The provider's own record of one assignment (MTurk) or submission (Prolific); None when it does not know
        it as ours. Raises ProviderTransientError when it cannot say now."""
        raise NotImplementedError

    def approve(self, claim, feedback: str, *, reverse_rejection: bool = False) -> dict:
        """Approve and pay the reward. `reverse_rejection`: a rejection of ours may stand on the provider (a manager
        overturned a failed grade after the reject was sent); if it does, it is reversed and the work approved."""
        raise NotImplementedError

    def reject(self, claim, feedback: str) -> dict:
        raise NotImplementedError

    def pay_bonus(self, *, worker_id: str, claim, amount: Decimal, reason: str, token: str, state: dict,
                  checkpoint) -> dict:
        """Pay once. `state` is what earlier attempts recorded; `checkpoint(state)` saves it at once, so a
        crash between two provider calls never leads to a second payment. The answer may carry "fees"."""
        raise NotImplementedError

    def block(self, *, worker_id: str, reason: str, project) -> dict:
        """Stop the worker from taking `project`'s HITs, and only those: a block is the project's (a provider-wide
        block would carry one project's judgment into every other)."""
        raise NotImplementedError

    def unblock(self, *, worker_id: str, reason: str, project) -> dict:
        """Lift what `block` did in `project`; lifting a block that is not there succeeds."""
        raise NotImplementedError

    def add_place(self, claim, *, rejected: bool, token: str, state: dict, checkpoint) -> dict:
        """Open one more place on the HIT of `claim` (its submission failed its checks), once. `rejected`: the
        provider holds that submission rejected (our rejection was carried out, no approval since). `token` is the
        decision's key; `state` and `checkpoint` as in `pay_bonus`, so a repeated attempt never adds a second place.
        Raises ProviderError, with words a person can act on, when the provider cannot add one."""
        raise NotImplementedError

    def add_places(self, batch, *, places: int, token: str) -> dict:
        """Open `places` more places in the live `batch` for a top-up HIT, once for `token`: a retry, even after a
        crash between the provider's answer and our record of it, adds none again. For `topups == "places"`."""
        raise NotImplementedError

    def notify(self, *, worker_ids: list[str], subject: str, message: str) -> dict:
        raise NotImplementedError

    def expire(self, batch) -> None:
        raise NotImplementedError

    def extend_expiry(self, batch, *, hours: int) -> None:
        raise NotImplementedError

