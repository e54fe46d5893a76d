"""Carrying out decisions (the outbox): approve, reject, bonus, block, unblock, add a place, each a Decision row.

The quality policy (or a manager) writes a Decision with a deterministic idempotency key; `execute_decision`
claims it with a conditional UPDATE (one executor per attempt, no transaction held across the provider call),
calls the provider, and records the outcome and the money in the ledger. "Already done" answers count as
success; a transient failure leaves it pending for the Celery task's retry; anything else fails it for a person.

A manager may overturn a grade after its decision was carried out. Failed to passed: a rejection still pending is
withdrawn by the policy and never sent; one already sent is reversed by the approval (MTurk's OverrideRejection,
Prolific's UNREJECT). Passed to failed: an approval cannot be taken back on either platform, so the rejection is
withdrawn here with the reason. A reward enters the ledger once per provider assignment, whatever approves it.

Confirmed submissions only. A policy decision cites the submissions it rests on (`Decision.rests_on`); it is carried
out only while all of them are confirmed by the provider, withdrawn if one was discarded (annotation/crowd/sync.py),
and a bonus is paid against one of them. A worker's block or unblock is the decision's project's, on the provider
(its own MTurk qualification type, its own Prolific blocklist group) and here (`ProjectAnnotator`).

Adding a place (a failed submission's HIT is offered again): after the submission's own rejection, if one is pending,
since on Prolific that rejection frees the place by itself; one place per batch at a time, since Prolific takes a new
total, not an increment; never for a HIT that N counted submissions already fill (withdrawn, with the reason).
Nothing enters the ledger: a place is not money until the work in it is approved.
"""

import logging
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F, Q, Sum
from django.utils import timezone

from corpus.models import Project

from ..models import (
    Annotator,
    Assignment,
    CrowdBatch,
    CrowdClaim,
    CrowdHit,
    Decision,
    LedgerEntry,
    ProjectAnnotator,
    Provider,
)
from .base import AlreadyDone, ProviderError, ProviderTransientError, usd
from .registry import get_provider

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 8


class RetryLater(Exception):
    """A transient provider failure: the task retries with a backoff."""


def _claim_of(decision: Decision) -> CrowdClaim | None:
    if decision.assignment_id:
        return CrowdClaim.objects.select_related("batch").filter(assignment_id=decision.assignment_id).first()
    # A bonus: MTurk pays bonuses against one of the worker's assignments, the latest of those the decision rests
    # on; a manager's decision rests on none, so the worker's latest confirmed one in the project. Never an
    # unconfirmed claim: it may be somebody else's use of the worker id.
    confirmed = (CrowdClaim.objects.select_related("batch")
                 .filter(verified=True, assignment__annotator=decision.annotator,
                         assignment__hit__project=decision.project, assignment__confirmed_at__isnull=False)
                 .order_by("-created", "-pk"))
    return (confirmed.filter(assignment__in=decision.rests_on.all()).first()
            or confirmed.first())


def _provider_for(decision: Decision, claim: CrowdClaim | None, providers: dict | None = None):
    name = decision.annotator.provider
    if name not in Provider.values:
        return None  # an in-house account: nothing to tell a platform
    sandbox = claim.batch.sandbox if claim is not None and claim.batch is not None else None
    injected = (providers or {}).get((name, sandbox))
    return injected or get_provider(name, sandbox=sandbox)


def _checkpoint(decision: Decision):
    def save(state: dict) -> None:
        decision.provider_response = state
        Decision.objects.filter(pk=decision.pk).update(provider_response=state)
    return save


def _rejection_sent(decision: Decision) -> bool:
    """Whether a rejection of this decision's assignment reached the provider, or may have: carried out, or
    attempted (withdrawn by an override while its provider call was under way, or failed in an unknown state)."""
    return decision.assignment_id is not None and Decision.objects.filter(
        assignment_id=decision.assignment_id, kind=Decision.Kind.REJECT).filter(
        Q(status=Decision.Status.DONE) | Q(attempts__gt=0)).exclude(pk=decision.pk).exists()


def _approved_before(decision: Decision) -> bool:
    return decision.assignment_id is not None and Decision.objects.filter(
        assignment_id=decision.assignment_id, kind=Decision.Kind.APPROVE, status=Decision.Status.DONE).exists()


def _block_outstanding(unblock: Decision) -> bool:
    """Whether a block of the same worker, decided before this unblock, is still to be carried out (the drain
    task comes back to the unblock later)."""
    return Decision.objects.filter(annotator_id=unblock.annotator_id, kind=Decision.Kind.BLOCK,
                                   status=Decision.Status.PENDING, pk__lt=unblock.pk).exists()


def _rejection_pending(place: Decision) -> bool:
    return Decision.objects.filter(assignment_id=place.assignment_id, kind=Decision.Kind.REJECT,
                                   status=Decision.Status.PENDING).exists()


def _hit_complete(place: Decision) -> bool:
    """Whether the place is no longer needed: N submissions of its HIT count (another channel filled it, or an
    override made one count again)."""
    hit = place.assignment.hit if place.assignment_id else None
    return hit is not None and Assignment.objects.filter(hit=hit).counted().count() >= hit.places


def _stands_rejected(place: Decision) -> bool:
    """Whether the provider holds the submission rejected: the last approval or rejection carried out for it is a
    rejection (an approval after it reversed it)."""
    last = (Decision.objects.filter(assignment_id=place.assignment_id, status=Decision.Status.DONE,
                                    kind__in=[Decision.Kind.APPROVE, Decision.Kind.REJECT])
            .order_by("-executed_at", "-pk").first())
    return last is not None and last.kind == Decision.Kind.REJECT


def places_in_flight(batch_id: int, *, besides: int | None = None) -> bool:
    """Whether places for a top-up HIT (other than `besides`) are being added to the batch (attempted, not recorded,
    not refused): a study takes a new total, so nothing else changes its places meanwhile
    (annotation/crowd/topups.py)."""
    return CrowdHit.objects.filter(batch_id=batch_id, batch__status=CrowdBatch.Status.PUBLISHED, attempts__gt=0,
                                   published_at__isnull=True, failed_at__isnull=True).exclude(pk=besides).exists()


def _claim_place(decision: Decision, claim: CrowdClaim) -> bool:
    """Claim an attempt at adding a place, unless another place of the same batch is being added (attempted and not
    finished, a failed submission's or a top-up HIT's): under the batch row's lock, so two executors never add
    places to one study at once."""
    with transaction.atomic():
        CrowdBatch.objects.select_for_update().filter(pk=claim.batch_id).first()
        if Decision.objects.filter(kind=Decision.Kind.ADD_PLACE, status=Decision.Status.PENDING, attempts__gt=0,
                                   assignment__crowd_claim__batch_id=claim.batch_id).exclude(pk=decision.pk).exists():
            return False
        if places_in_flight(claim.batch_id):
            return False
        return bool(Decision.objects.filter(pk=decision.pk, status=Decision.Status.PENDING,
                                            attempts=decision.attempts).update(attempts=F("attempts") + 1))


def _perform(decision: Decision, provider, claim: CrowdClaim | None) -> dict:
    kind = decision.kind
    if provider is None:
        return {"local": True}
    if kind in (Decision.Kind.APPROVE, Decision.Kind.REJECT):
        if claim is None:
            if decision.annotator.provider == Provider.LINK:
                return {"local": True}
            raise ProviderError("No provider assignment is recorded for this decision's assignment.")
        feedback = decision.reason or ("Thank you for your careful work." if kind == Decision.Kind.APPROVE else "")
        if kind == Decision.Kind.APPROVE:
            return provider.approve(claim, feedback, reverse_rejection=_rejection_sent(decision))
        return provider.reject(claim, feedback)
    if kind == Decision.Kind.ADD_PLACE:
        if decision.annotator.provider == Provider.LINK:
            return {"local": True}  # a private link has no places on a provider: the local re-offer is all there is
        if claim is None or claim.batch is None:
            raise ProviderError("No provider assignment is recorded for this decision's assignment: its HIT's place "
                                "cannot be reopened on the provider.")
        return provider.add_place(claim, rejected=_stands_rejected(decision), token=decision.idempotency_key,
                                  state=dict(decision.provider_response or {}), checkpoint=_checkpoint(decision))
    if kind == Decision.Kind.BONUS:
        if decision.annotator.provider == Provider.LINK:
            return {"local": True}
        if claim is None:
            raise ProviderError("A bonus needs one of the worker's assignments on the provider.")
        return provider.pay_bonus(worker_id=decision.annotator.external_id, claim=claim,
                                  amount=decision.amount_usd, reason=decision.reason or "Bonus for good work",
                                  token=decision.idempotency_key, state=dict(decision.provider_response or {}),
                                  checkpoint=_checkpoint(decision))
    if decision.annotator.provider == Provider.LINK:
        return {"local": True}
    method = provider.block if kind == Decision.Kind.BLOCK else provider.unblock
    # The project names the blocklist on Prolific (one participant group per project); MTurk blocks per requester.
    return method(worker_id=decision.annotator.external_id, reason=decision.reason or "Repeated failed checks",
                  project=decision.project)


def _set_standing(decision: Decision, status: str) -> None:
    """The annotator's status in the decision's project, and there only."""
    with transaction.atomic():
        standing = ProjectAnnotator.locked(decision.annotator, decision.project)
        if standing.status != status:
            standing.set_status(status, reason=decision.reason, user=decision.created_by,
                                rests_on=decision.rests_on.all())


def _record(decision: Decision, claim: CrowdClaim | None, provider, response: dict) -> None:
    """The decision's effects here: the annotator's status in the project and the money it moved."""
    if decision.kind == Decision.Kind.BLOCK:
        _set_standing(decision, Annotator.Status.BLOCKED)
    elif decision.kind == Decision.Kind.UNBLOCK:
        _set_standing(decision, Annotator.Status.ACTIVE)
    if provider is None or response.get("local"):
        return
    batch = claim.batch if claim is not None else None
    entries = []
    if decision.kind == Decision.Kind.APPROVE and batch is not None and not LedgerEntry.objects.filter(
            kind=LedgerEntry.Kind.REWARD, provider=provider.name, external_ref=claim.external_assignment_id).exclude(
            decision=decision).exists():  # another approval of this assignment (a manager's, a repeat) paid it
        rate = provider.fee_rate(batch.assignments_per_hit)
        entries = [(LedgerEntry.Kind.REWARD, batch.reward_usd), (LedgerEntry.Kind.REWARD_FEE,
                                                                  usd(batch.reward_usd * rate))]
    elif decision.kind == Decision.Kind.BONUS:
        rate = provider.fee_rate(batch.assignments_per_hit if batch else 1)
        fee = response.get("fees")
        entries = [(LedgerEntry.Kind.BONUS, decision.amount_usd),
                   (LedgerEntry.Kind.BONUS_FEE, usd(fee) if fee is not None else usd(decision.amount_usd * rate))]
    for kind, amount in entries:
        try:
            with transaction.atomic():
                LedgerEntry.objects.create(project=decision.project, batch=batch, annotator=decision.annotator,
                                           decision=decision, provider=provider.name, kind=kind,
                                           amount_usd=amount, external_ref=claim.external_assignment_id if claim
                                           else "")
        except IntegrityError:
            pass  # recorded by an earlier attempt


def execute_decision(decision_id: int, *, providers: dict | None = None) -> str:
    """Carry out one pending decision; returns its status. Raises RetryLater on a transient failure."""
    decision = Decision.objects.select_related("annotator", "project").filter(pk=decision_id).first()
    if decision is None or decision.status != Decision.Status.PENDING:
        return decision.status if decision else "missing"
    unconfirmed = decision.rests_on.filter(confirmed_at__isnull=True)
    if unconfirmed.filter(status=Assignment.Status.DISCARDED).exists():
        return _finish(decision, Decision.Status.CANCELLED,
                       error="It rests on a submission the provider does not know; it was discarded.")
    if unconfirmed.exists():
        return Decision.Status.PENDING  # the provider has not confirmed what it rests on yet (sync)
    claim = _claim_of(decision)
    if (claim is not None and claim.provider in (Provider.MTURK, Provider.PROLIFIC)
            and not claim.verified):
        # The worker id came from unsigned query parameters: nobody is paid, rejected or blocked until the
        # provider's own API has confirmed it (sync), and never when it contradicted it.
        if claim.provider_status == "worker_mismatch":
            return _finish(decision, Decision.Status.FAILED,
                           error="The provider names another worker for this assignment; a person must check.")
        return Decision.Status.PENDING
    if decision.kind == Decision.Kind.REJECT and claim is not None and _approved_before(decision):
        return _finish(decision, Decision.Status.CANCELLED,
                       error=f"This assignment was approved and paid on {claim.provider} before; neither MTurk nor "
                             "Prolific can take an approval back. The failed grade still keeps its labels out.")
    if decision.kind == Decision.Kind.UNBLOCK and _block_outstanding(decision):
        return Decision.Status.PENDING  # lifted after the block it lifts, or the block would land last
    if decision.kind == Decision.Kind.ADD_PLACE and _rejection_pending(decision):
        return Decision.Status.PENDING  # on Prolific the rejection frees the place: it must be known first
    if decision.kind == Decision.Kind.ADD_PLACE and _hit_complete(decision):
        return _finish(decision, Decision.Status.CANCELLED,
                       error="Its HIT already has all the submissions that count it needs: no place is reopened.")
    # Claim this attempt: if another executor got here first, the UPDATE matches nothing.
    if decision.kind == Decision.Kind.ADD_PLACE and claim is not None and claim.batch_id:
        claimed = _claim_place(decision, claim)
    else:
        claimed = Decision.objects.filter(pk=decision.pk, status=Decision.Status.PENDING,
                                          attempts=decision.attempts).update(attempts=F("attempts") + 1)
    if not claimed:
        return Decision.Status.PENDING
    decision.attempts += 1
    provider = _provider_for(decision, claim, providers)
    try:
        response = _perform(decision, provider, claim)
    except AlreadyDone as done:
        response = {"already_done": True, **done.response}
    except ProviderTransientError as error:
        return _transient(decision, error)
    except ProviderError as error:
        return _finish(decision, Decision.Status.FAILED, error=str(error))
    _record(decision, claim, provider, response)
    return _finish(decision, Decision.Status.DONE, response=response)


def _transient(decision: Decision, error: Exception) -> str:
    if decision.attempts >= MAX_ATTEMPTS:
        return _finish(decision, Decision.Status.FAILED, error=f"Gave up after {decision.attempts} attempts: {error}")
    Decision.objects.filter(pk=decision.pk).update(last_error=str(error)[:2000])
    raise RetryLater(str(error))


def _finish(decision: Decision, status: str, *, error: str = "", response: dict | None = None) -> str:
    values = {"status": status, "last_error": error[:2000], "executed_at": timezone.now()}
    if response is not None:
        values["provider_response"] = {**(decision.provider_response or {}), **_jsonable(response)}
    Decision.objects.filter(pk=decision.pk).update(**values)
    if status == Decision.Status.FAILED:
        logger.warning("Decision %s (%s) failed: %s", decision.pk, decision.idempotency_key, error)
    return status


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def execute_pending(project: Project, *, providers: dict | None = None) -> dict[str, int]:
    """Carry out every pending decision of `project` now (the sync command's last step)."""
    counts: dict[str, int] = {}
    for pk in Decision.objects.filter(project=project, status=Decision.Status.PENDING).values_list("pk", flat=True):
        try:
            status = execute_decision(pk, providers=providers)
        except RetryLater:
            status = "retry"
        counts[status] = counts.get(status, 0) + 1
    return counts


def spend(project: Project) -> dict[str, Decimal]:
    """What the ledger says was spent, per kind and in total."""
    rows = dict(LedgerEntry.objects.filter(project=project).values_list("kind").annotate(total=Sum("amount_usd")))
    totals = {kind: usd(rows.get(kind, 0) or 0) for kind in LedgerEntry.Kind.values}
    totals["total"] = usd(sum(totals.values()))
    return totals
