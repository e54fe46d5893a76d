"""Reconciling a project's batches with the providers (`sync_crowd`), before MTurk's auto-approval delay.

For each batch: list the provider's submissions (paginated); confirm each claim's worker with the provider's own
answer; grade submitted assignments and turn grades into decisions (annotation/quality's policy, idempotent);
recover assignments the provider shows and we lack, or flag them; release reservations the provider never
received; then carry out the outbox.
"""

from dataclasses import dataclass, field

from ..models import Assignment, CrowdBatch, CrowdClaim, CrowdHit, Project
from ..services.assignment import release_expired
from . import outbox
from .base import get_provider

PENDING_REMOTE = {"Submitted", "AWAITING REVIEW"}


@dataclass
class SyncResult:
    batches: int = 0
    remote: int = 0
    verified: int = 0
    graded: int = 0
    recovered: int = 0
    flagged: list[str] = field(default_factory=list)
    released: int = 0
    decisions: dict = field(default_factory=dict)


def grade_and_decide(assignment: Assignment) -> None:
    """The quality engineer's grading and policy (annotation/quality): idempotent, so a re-run writes nothing."""
    from annotation.quality.policy import grade_and_apply_policy  # noqa: PLC0415

    grade_and_apply_policy(assignment)


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


def sync_batch(batch: CrowdBatch, provider, result: SyncResult) -> None:
    remote_items = provider.list_submissions(batch)
    result.batches += 1
    result.remote += len(remote_items)
    claims = {claim.external_assignment_id: claim for claim in
              CrowdClaim.objects.filter(provider=batch.provider, external_assignment_id__in=[
                  item.external_assignment_id for item in remote_items]).select_related("assignment__hit__project")}
    for remote in remote_items:
        claim = claims.get(remote.external_assignment_id) or _recover(batch, remote, result)
        if claim is None:
            continue
        if claim.worker_id != remote.worker_id:
            result.flagged.append(f"{remote.external_assignment_id}: the page claimed worker {claim.worker_id}, "
                                  f"{batch.provider} says {remote.worker_id}")
            CrowdClaim.objects.filter(pk=claim.pk).update(verified=False, provider_status="worker_mismatch")
            continue
        CrowdClaim.objects.filter(pk=claim.pk).update(verified=True, provider_status=remote.status)
        result.verified += 1
        assignment = claim.assignment
        if not remote.submitted or remote.status not in PENDING_REMOTE:
            continue
        if assignment.status != Assignment.Status.SUBMITTED:
            result.flagged.append(f"{remote.external_assignment_id}: submitted on {batch.provider} but not here")
            continue
        grade_and_decide(assignment)
        result.graded += 1


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
