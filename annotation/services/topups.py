"""Top-up HITs: more labels for the units their project's redundancy policy found undecided (annotation.redundancy).

A unit needs a top-up when its state (annotation.services.settling) asks for more labels than the HITs it is in
promise: the first round's places, plus each top-up HIT's places, plus any place added in review. A top-up HIT asks
as many labels as its units still want (its extra places beyond the one a top-up has): after a 1-1 split under the
lead policy, two at once, since one more label could not settle the unit anyway.
Promised places are committed money, not evidence; the policy decides on counted labels alone.

- The undecided units of one summary (FV, KA) or one document (KV) that want as many more labels are gathered into
  a new HIT of the next round,
  built like any HIT: the same display snapshot as the unit's first HIT (an annotator sees a top-up HIT like any
  other), attention checks at the project's rate with at least one in every top-up HIT (a small HIT must not be
  check-free), never offered to anybody who labelled one of its units (annotation.selectors.available_hits).
- KA: a few scattered pairs of a grid do not fill a grid, so a KA HIT after the first round is a list of pairs (the
  HIT page shows one item per pair, annotation.quality.injection checks it with pairs). Its key-facts and sentences
  are numbered afresh, in the order the list shows them: a list of two pairs never names "key-fact 7".
- A project with a budget asks for no top-up that would take its expected cost (annotation.services.costs) past
  it: the units that would need one go to review with the labels they have (their state says escalated).

The work runs as a job (`topups_start`), queued when a submission leaves units undecided.
"""

from collections import defaultdict
from decimal import Decimal

from django.db import transaction
from django.db.models import Max, Q
from django.dispatch import Signal

from corpus.models import Job, Project, job_start

from ..job_kinds import TOPUPS
from ..models import Hit, Task, Unit, UnitState
from ..redundancy import Verdict, redundancy_of

# What a top-up unit copies from its first-round unit: the item and how it was shown.
SNAPSHOT = ("task", "summary_sentence_id", "keyfact_id", "text", "sentence_text", "row", "column", "highlighted",
            "ai_category", "ai_reason", "ai_source")


def promised_places(project: Project, states: list[UnitState]) -> dict[int, int]:
    """Per first-round unit, the labels its HITs promise: its own HIT's places and each top-up HIT's (one, and the
    extra places of a top-up that asks more or of one sent back in review)."""
    ids = [state.unit_id for state in states]
    first = redundancy_of(project).first_round
    promised = dict(Unit.objects.filter(pk__in=ids).values_list("pk", "hit__extra_places"))
    promised = {pk: first + extra for pk, extra in promised.items()}
    for origin, extra in Unit.objects.filter(origin__in=ids).values_list("origin_id", "hit__extra_places"):
        promised[origin] += 1 + extra
    return promised


def wanting(project: Project, task: str | None = None) -> list[UnitState]:
    """The states of `project` that ask for more labels than their HITs promise, each with `wanted`, how many more."""
    states = UnitState.objects.filter(project=project, verdict=Verdict.NEEDS_MORE)
    if task is not None:
        states = states.filter(task=task)
    states = list(states.order_by("unit_id"))
    promised = promised_places(project, states)
    for state in states:
        state.wanted = state.target - promised[state.unit_id]
    return [state for state in states if state.wanted > 0]


def topups_build(project: Project) -> dict[str, int]:
    """Build what the undecided units of `project` need now; returns the HITs made per task."""
    from ..quality.injection import Injection, write_new_hits

    made = dict.fromkeys(Task.values, 0)
    with transaction.atomic():
        # One build per project at a time, as build_hits (its lock): two top-up jobs never both give a unit a label.
        Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk", flat=True).first()
        states = wanting(project)
        if not states:
            return made
        if over_budget(project, states):
            # The project's cap: these units go to review with the labels they have.
            UnitState.objects.filter(pk__in=[state.pk for state in states]).update(verdict=Verdict.ESCALATED)
            made["escalated"] = len(states)
            return made
        units = {unit.pk: unit for unit in Unit.objects.filter(pk__in=[s.unit_id for s in states])
                 .select_related("hit")}
        groups: dict[tuple, list[Unit]] = defaultdict(list)
        for state in states:
            unit = units[state.unit_id]
            groups[unit.task, unit.hit.document_id, unit.hit.summary_id, state.wanted].append(unit)
        new: list[tuple[Hit, list[Unit]]] = []
        for key, members in sorted(groups.items(), key=lambda item: str(item[0])):
            new.append(_topup_hit(project, members, places=key[3]))
            made[key[0]] += 1
        if new:
            injection = Injection(project) if project.attention_check_rate > 0 else None
            write_new_hits(new, injection)
            if injection is not None:
                injection.finish()
            from .hits import recount_units

            recount_units(Hit.objects.filter(pk__in=[hit.pk for hit, _ in new]))
    return made


def _topup_hit(project: Project, members: list[Unit], *, places: int) -> tuple[Hit, list[Unit]]:
    first = members[0].hit
    same_item = Q(task=first.task, document_id=first.document_id, summary_id=first.summary_id)
    last_round = Hit.objects.filter(same_item).aggregate(last=Max("round"))["last"] or 0
    position = (Hit.objects.filter(project=project, task=first.task).aggregate(last=Max("position"))["last"] or 0)
    hit = Hit.objects.create(project=project, task=first.task, document_id=first.document_id,
                             summary_id=first.summary_id, position=position + 1, round=last_round + 1,
                             assistance=first.assistance, extra_places=places - 1)
    units = [Unit(hit=hit, origin_id=member.pk, position=position,
                  **{name: getattr(member, name) for name in SNAPSHOT})
             for position, member in enumerate(sorted(members, key=lambda unit: unit.position))]
    if hit.task == Task.KEYFACT_ALIGNMENT:
        from ..quality.injection import number_ka_pairs

        number_ka_pairs(units)
    return hit, units


def over_budget(project: Project, states: list[UnitState]) -> bool:
    """Whether the labels these units want would take the project's expected cost past its budget."""
    if project.budget_usd is None:
        return False
    from .costs import project_costs

    costs = project_costs(project)
    extra = costs.label_usd * sum(state.wanted for state in states) / Decimal(1 - costs.check_share)
    return costs.total["to_finish"] + extra > project.budget_usd


def topups_start(*, project: Project, user=None) -> Job:
    """Queue the top-up job, or give the one already queued: it has not read the units yet, so it will see these
    too. A running one may have read them already, so another is queued behind it (builds take the project's lock in
    turn and build only what is still wanting)."""
    queued = project.jobs.filter(kind=TOPUPS, status=Job.Status.QUEUED).first()
    if queued is not None:
        return queued
    return job_start(kind=TOPUPS, project=project, user=user)


# Sent by the top-up job once its HITs are built and committed, with `project`: the crowd side
# (annotation.crowd.topups) releases them to the project's live batches. A signal, because the crowd providers build
# on these services, never the reverse.
topups_built = Signal()


def topups_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_topups)


def _topups(job: Job) -> None:
    job.begin(total=1)
    made = topups_build(job.project)
    # Before the job finishes, so that a release that fails fails the job (run again, it releases what is missing).
    topups_built.send(sender=Project, project=job.project)
    job.advance(1, "top-ups built")
    job.finish({"made": made})


def queue_topups_if_needed(project: Project, states: list[UnitState]) -> None:
    """After settling: when a unit now wants a label more, queue the job once the transaction commits."""
    if any(state.verdict == Verdict.NEEDS_MORE for state in states):
        transaction.on_commit(lambda: topups_start(project=project))
