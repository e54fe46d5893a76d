"""Reconciling a project's batches with the providers (`sync_crowd`), before MTurk's auto-approval delay.

For each batch: list the provider's submissions (paginated); confirm each claim's worker with the provider's own
answer, which is when a crowd submission starts to count and the quality policy acts on it (annotation/quality's
policy, idempotent); recover assignments the provider shows and we lack, or flag them; ask the provider about the
unconfirmed submissions its list did not show, and discard those it does not know (kept with the reason, never
counted, their place released); release reservations the provider never received; then carry out the outbox.

When "not known" is final: Prolific creates a submission when the participant starts the study, before they reach
us, so a session Prolific does not know now never will be. MTurk lists and returns an assignment only once the worker
submitted it to MTurk, which they can do until the assignment's deadline (AssignmentDurationInSeconds after they
accepted, which is no later than our reservation's end); so an MTurk claim is discarded only after its reservation
ended.
"""

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from corpus.models import Project

from ..models import Assignment, CrowdBatch, CrowdClaim, CrowdHit, Decision, Hit
from ..services.assignment import release_expired
from ..services.grades import settle_after_count_change
from . import outbox
from .base import ProviderTransientError
from .registry import get_provider

PENDING_REMOTE = {"Submitted", "AWAITING REVIEW"}


@dataclass
class SyncResult:
    batches: int = 0
    remote: int = 0
    verified: int = 0
    graded: int = 0
    recovered: int = 0
    flagged: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    released: int = 0
    decisions: dict = field(default_factory=dict)


def grade_and_decide(assignment: Assignment) -> None:
    """The quality engineer's grading and policy (annotation/quality): idempotent, so a re-run writes nothing."""
    from annotation.quality.policy import grade_and_apply_policy  # noqa: PLC0415

    grade_and_apply_policy(assignment)


def assignment_confirm(*, assignment: Assignment, provider: str) -> Assignment:
    """The provider said the assignment is its claimed worker's: it counts from now on (if its grade passes), and
    what depends on the count follows: the key-fact validation of its document may be complete, and an MTurk worker
    has passed MTurk's copy of the screening test (MTurk let them accept only with it). Under the HIT's lock, as a
    submission. Raises IntegrityError if the worker already holds another confirmed assignment of the HIT."""
    from annotation.quality.qualification import qualification_record  # noqa: PLC0415

    with transaction.atomic():
        Hit.lock(assignment.hit_id)
        locked = Assignment.objects.select_for_update().select_related("hit__project", "annotator").get(
            pk=assignment.pk)
        if locked.confirmed_at is None and locked.status != Assignment.Status.DISCARDED:
            locked.confirmed_at = timezone.now()
            locked.save(update_fields=["confirmed_at"])
            if provider == "mturk":
                qualification_record(annotator=locked.annotator, project=locked.hit.project)
            if locked.status == Assignment.Status.SUBMITTED:
                settle_after_count_change(locked.hit)
    return locked


def assignment_discard(*, assignment: Assignment, reason: str) -> bool:
    """Set an unconfirmed crowd assignment aside: kept (labels, grade, claim) with the reason, never counted, its
    place released; decisions written for it and not carried out are withdrawn. False if it was confirmed meanwhile."""
    with transaction.atomic():
        Hit.lock(assignment.hit_id)
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.confirmed_at is not None or locked.status == Assignment.Status.DISCARDED:
            return False
        locked.status, locked.discarded_reason = Assignment.Status.DISCARDED, reason[:2000]
        locked.save(update_fields=["status", "discarded_reason"])
        Decision.objects.filter(status=Decision.Status.PENDING).filter(
            pk__in=Decision.objects.filter(rests_on=locked).values("pk")).update(
            status=Decision.Status.CANCELLED, last_error=f"It rests on a discarded submission: {reason}"[:2000])
        Decision.objects.filter(assignment=locked, status=Decision.Status.PENDING).update(
            status=Decision.Status.CANCELLED, last_error=f"Its submission was discarded: {reason}"[:2000])
    return True


def _recover(batch: CrowdBatch, remote, result: SyncResult) -> CrowdClaim | None:
    """An assignment the provider shows and we lack a claim for: bind it if we hold that worker's work."""
    crowd_hit = CrowdHit.objects.filter(batch=batch, external_id=remote.external_hit_id).first()
    hit_filter = {"hit_id": crowd_hit.hit_id} if crowd_hit else {"hit__crowd_hits__batch": batch}
    assignment = (Assignment.objects.filter(annotator__provider=batch.provider,
                                            annotator__external_id=remote.worker_id, crowd_claim__isnull=True,
                                            **hit_filter).first())
    if assignment is None:
        result.flagged.append(f"{remote.external_assignment_id}: worker {remote.worker_id} submitted on "
                              f"{batch.provider} but no work of theirs is here")
        return None
    result.recovered += 1
    return CrowdClaim.objects.create(assignment=assignment, batch=batch, provider=batch.provider,
                                     external_assignment_id=remote.external_assignment_id,
                                     external_hit_id=remote.external_hit_id, worker_id=remote.worker_id)


def _reconcile(batch: CrowdBatch, claim: CrowdClaim, remote, result: SyncResult) -> None:
    """What the provider says about one claim: the worker (and HIT or study) it names confirms the claim, or
    contradicts it."""
    place = remote.external_hit_id or claim.external_hit_id
    if claim.worker_id != remote.worker_id or (claim.external_hit_id and place != claim.external_hit_id):
        result.flagged.append(f"{remote.external_assignment_id}: the page claimed worker {claim.worker_id} on "
                              f"{claim.external_hit_id}, {batch.provider} says {remote.worker_id} on {place}")
        CrowdClaim.objects.filter(pk=claim.pk).update(verified=False, provider_status="worker_mismatch")
        if assignment_discard(assignment=claim.assignment, reason=(
                f"{batch.provider} says {remote.external_assignment_id} is worker {remote.worker_id}'s on {place}, "
                f"not worker {claim.worker_id}'s on {claim.external_hit_id}.")):
            result.discarded.append(remote.external_assignment_id)
        return
    assignment = claim.assignment
    if assignment.status == Assignment.Status.DISCARDED:
        result.flagged.append(f"{remote.external_assignment_id}: discarded here ({assignment.discarded_reason}) "
                              f"but {batch.provider} now shows it as worker {remote.worker_id}'s")
        return
    try:
        if assignment.confirmed_at is None:
            assignment = assignment_confirm(assignment=assignment, provider=batch.provider)
    except IntegrityError:
        result.flagged.append(f"{remote.external_assignment_id}: worker {remote.worker_id} already has another "
                              "confirmed assignment of this HIT here")
        return
    CrowdClaim.objects.filter(pk=claim.pk).update(verified=True, provider_status=remote.status)
    result.verified += 1
    if not remote.submitted or remote.status not in PENDING_REMOTE:
        return
    if assignment.status != Assignment.Status.SUBMITTED:
        result.flagged.append(f"{remote.external_assignment_id}: submitted on {batch.provider} but not here")
        return
    grade_and_decide(assignment)
    result.graded += 1


def _unconfirmed_to_ask(batch: CrowdBatch, seen: set[int], now):
    """The batch's unconfirmed claims the provider's list did not show and whose answer would be final now."""
    claims = (CrowdClaim.objects.filter(batch=batch, assignment__confirmed_at__isnull=True)
              .exclude(pk__in=seen).select_related("assignment").order_by("pk"))
    if batch.provider == "mturk":
        # Submitted here, and past the deadline by which MTurk would have had to receive it.
        return claims.filter(assignment__status=Assignment.Status.SUBMITTED, assignment__expires_at__lte=now)
    # Prolific: submitted here, or still holding a place here (a reservation of a session it may not know).
    return claims.filter(assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.RESERVED])


def sync_batch(batch: CrowdBatch, provider, result: SyncResult) -> None:
    remote_items = provider.list_submissions(batch)
    result.batches += 1
    result.remote += len(remote_items)
    claims = {claim.external_assignment_id: claim for claim in
              CrowdClaim.objects.filter(provider=batch.provider, external_assignment_id__in=[
                  item.external_assignment_id for item in remote_items]).select_related("assignment__hit__project")}
    seen = set()
    for remote in remote_items:
        claim = claims.get(remote.external_assignment_id) or _recover(batch, remote, result)
        if claim is None:
            continue
        seen.add(claim.pk)
        _reconcile(batch, claim, remote, result)
    for claim in _unconfirmed_to_ask(batch, seen, timezone.now()):
        try:
            remote = provider.lookup(claim.external_assignment_id)
        except ProviderTransientError as error:
            result.flagged.append(f"{claim.external_assignment_id}: {batch.provider} could not say ({error}); "
                                  "asked again at the next sync")
            continue
        if remote is not None:
            _reconcile(batch, claim, remote, result)
            continue
        reason = (f"{batch.provider} has no {'assignment' if batch.provider == 'mturk' else 'submission'} "
                  f"{claim.external_assignment_id} for worker {claim.worker_id} on {claim.external_hit_id}: the "
                  "arrival's worker id was not confirmed.")
        CrowdClaim.objects.filter(pk=claim.pk).update(provider_status="unknown")
        if assignment_discard(assignment=claim.assignment, reason=reason):
            result.discarded.append(claim.external_assignment_id)


def sync_project(project: Project, *, providers: dict | None = None) -> SyncResult:
    """Reconcile every published batch of `project`; `providers` maps (name, sandbox) to an instance (tests)."""
    result = SyncResult()
    for batch in project.crowd_batches.exclude(provider="link").exclude(status=CrowdBatch.Status.PUBLISHING):
        provider = (providers or {}).get((batch.provider, batch.sandbox)) or get_provider(batch.provider,
                                                                                          sandbox=batch.sandbox)
        sync_batch(batch, provider, result)
    # In-house link work has no platform to list it: grade what was submitted here.
    for assignment in Assignment.objects.filter(hit__project=project, status=Assignment.Status.SUBMITTED,
                                                annotator__provider="link", grade__isnull=True):
        grade_and_decide(assignment)
        result.graded += 1
    # Reservations the provider never received back (the worker left): their places return to the pool.
    result.released = release_expired(project=project)
    result.decisions = outbox.execute_pending(project, providers=providers)
    return result
