"""The reviewer's list, tallied by a job: which units are split or flagged, by how much, and who labelled them.

Finding the split units reads every counted label of a task (1.7M labels at 10x UniSumEval: tens of seconds), so it
never runs inside a request. `review_tally_compute` groups the counted labels per unit once and stores the split
units in `SplitUnit` (with the order's and the filters' columns; once per annotator in `SplitUnitLabel`), with the
units an annotator flagged as broken or unclear even where the labels agree (a flag asks for a reviewer), and the
pairs of agreeing answers per task in `ReviewTally`, with the fingerprint taken before anything was read. A request
asks `current_tally`: the stored tally is current only while the fingerprint still matches; otherwise the page shows
the stored list marked "as of HH:MM, updating" and the request starts (or finds) the job. Adjudications are not
tallied: the list reads them live, so a unit a reviewer settles leaves the "not yet" list at once.

Why a fingerprint, not counts kept by every writer: labels start and stop counting through submission,
confirmation, grading, overrides, discards and the bulk writers (simulation, restore), which bulk-insert rows no
signal sees; one writer missed would show a wrong list as current. The fingerprint (`review_fingerprint`) reads the
aggregates of the counted submissions, the HITs and the corpus, as exports.figures does, not the labels: a label is
written only while its assignment is open, and counts only once the assignment enters the counted set, which moves
those aggregates. The standing flags (annotation.selectors.standing_flag_q) are read the same way: a flag stands
once its annotator leaves the HIT, submitted, returned or lapsed, which moves their aggregates.
"""

import hashlib
import time

from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from assist.job_kinds import ASSIST
from corpus.models import Document, Job, Project, Summary, job_start
from corpus.snapshots import job_for_fingerprint
from corpus.uploads import IMPORT

from ..job_kinds import HITS_BUILD
from ..job_kinds import REVIEW_TALLY as KIND
from ..models import (
    Assignment,
    AttentionCheck,
    Hit,
    ItemFlag,
    Label,
    ReviewTally,
    SplitUnit,
    SplitUnitLabel,
    Task,
    Unit,
)
from ..models.assignment import counted_submission_q
from ..selectors import REVIEW_QUESTION, standing_flag_q

TASKS = (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT)
BATCH = 2000


def review_fingerprint(project: Project) -> str:
    """A digest of what the tally reads; it changes when a submission enters or leaves the counted set (submitted,
    confirmed, discarded, graded, overridden, deleted), when a grade's missed checks change, when a flag starts or
    stops standing (its HIT submitted or returned, the flag withdrawn), when HITs or the corpus change, and when a
    job that rewrites units (HIT building, AI assistance) finishes."""
    parts = [
        Assignment.objects.filter(counted_submission_q(), hit__project=project).aggregate(
            n=Count("pk"), ids=Sum("pk"), last=Max("pk"), submitted=Max("submitted_at"),
            confirmed=Max("confirmed_at"), missed=Sum("grade__checks_failed")),
        ItemFlag.objects.filter(standing_flag_q(), unit__hit__project=project).aggregate(
            n=Count("pk"), ids=Sum("pk"), last=Max("pk")),
        Hit.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("pk")),
        Document.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("pk")),
        Summary.objects.filter(document__project=project).aggregate(n=Count("pk"), last=Max("pk")),
        project.jobs.filter(kind__in=[HITS_BUILD, ASSIST, IMPORT]).aggregate(
            n=Count("pk"), finished=Max("finished")),
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def current_tally(project: Project) -> tuple[ReviewTally | None, bool, str]:
    """The stored tally (None before the first), whether it is current, and the fingerprint of the database now."""
    fingerprint = review_fingerprint(project)
    tally = ReviewTally.objects.filter(project=project).first()
    return tally, tally is not None and tally.fingerprint == fingerprint, fingerprint


def review_tally_job(project: Project, *, fingerprint: str, user=None) -> Job:
    """The job tallying this project's list: the open one, the one that failed on these very labels (shown with its
    error, not retried on every page view), or a new one."""
    return job_for_fingerprint(project, KIND, fingerprint=fingerprint, start=lambda: review_tally_start(
        project=project, user=user, fingerprint=fingerprint))


def review_tally_start(*, project: Project, user=None, fingerprint: str = "") -> Job:
    return job_start(kind=KIND, project=project, user=user, total=len(TASKS), params={"fingerprint": fingerprint})


def review_tally_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_compute)


def _compute(job: Job) -> None:
    started = time.perf_counter()
    tally = review_tally_compute(job.project, progress=lambda task: job.advance(1, f"tallied {task}"))
    job.finish({"split_units": SplitUnit.objects.filter(project=job.project).count(),
                "seconds": round(tally.seconds or time.perf_counter() - started, 2)})


def review_tally_compute(project: Project, progress=None) -> ReviewTally:
    """Tally every task's counted answers per unit and replace the stored split units, in one transaction (a page
    reads the old list or the new one, never half of each)."""
    started = time.perf_counter()
    # Taken before anything is read: a label that arrives meanwhile makes the stored tally stale, never the reverse.
    fingerprint = review_fingerprint(project)
    rows, annotators, pairs = [], [], {}
    for task in TASKS:
        task_rows, task_annotators, pairs[task] = _tally_task(project, task)
        rows += task_rows
        annotators += task_annotators
        if progress is not None:
            progress(task)
    labelled_by = sorted(Label.objects.filter(unit__hit__project=project).order_by()
                         .values_list("annotator", flat=True).distinct())
    columns = [field.attname for field in SplitUnit._meta.concrete_fields]
    by_unit = {row.unit_id: row for row in rows}
    labelled = [SplitUnitLabel(annotator_id=annotator, **{name: getattr(by_unit[unit], name) for name in columns})
                for unit, annotator in annotators]
    with transaction.atomic():
        SplitUnitLabel.objects.filter(project=project).delete()
        SplitUnit.objects.filter(project=project).delete()
        SplitUnit.objects.bulk_create(rows, batch_size=BATCH)
        SplitUnitLabel.objects.bulk_create(labelled, batch_size=BATCH)
        tally, _ = ReviewTally.objects.update_or_create(project=project, defaults={
            "fingerprint": fingerprint, "computed": timezone.now(), "pairs": pairs, "annotators": labelled_by,
            "seconds": round(time.perf_counter() - started, 3)})
    return tally


def _tally_task(project: Project, task: str) -> tuple[list[SplitUnit], list[tuple[int, int]], list[int]]:
    """The task's split and flagged units, their (unit, annotator) pairs, and [pairs, agreeing pairs] over units
    with two or more counted answers: one grouped pass over the counted labels (as
    annotation.selectors.counted_votes), and one over the few flagged units that are not split."""
    field = REVIEW_QUESTION[task]
    counted = (Label.objects.filter(counted_submission_q("assignment__"), unit__hit__project=project,
                                    unit__task=task, **{f"{field}__isnull": False})
               .exclude(Exists(AttentionCheck.objects.filter(unit=OuterRef("unit")))))
    # A top-up's labels are its first-round unit's (Unit.origin): one item, one tally.
    counted = counted.annotate(root=Coalesce("unit__origin_id", "unit_id"))
    per_unit = (counted.order_by().values("root")
                .annotate(votes=Count("pk"), yes=Count("pk", filter=Q(**{field: True})),
                          missed=Count("pk", filter=Q(assignment__grade__checks_failed__gt=0)))
                .filter(votes__gte=2).values_list("root", "votes", "yes", "missed"))
    all_pairs = agreeing = 0
    split: dict[int, tuple[int, int, int]] = {}
    for unit, votes, yes, missed in per_unit.iterator(chunk_size=BATCH):
        no = votes - yes
        all_pairs += votes * (votes - 1) // 2
        agreeing += yes * (yes - 1) // 2 + no * (no - 1) // 2
        if 0 < yes < votes:
            split[unit] = (votes, yes, missed)
    # Flagged units whose labels agree, or are too few to disagree (none at all when every annotator returned it).
    flagged = set(ItemFlag.objects.filter(standing_flag_q(), unit__hit__project=project, unit__task=task)
                  .exclude(Exists(AttentionCheck.objects.filter(unit=OuterRef("unit"))))
                  .annotate(root=Coalesce("unit__origin_id", "unit_id")).order_by().values_list("root", flat=True)
                  .distinct()) - set(split)
    flagged_ids = sorted(flagged)
    for start in range(0, len(flagged_ids), BATCH):
        found = dict.fromkeys(flagged_ids[start:start + BATCH], (0, 0, 0))
        found.update((unit, (votes, yes, missed)) for unit, votes, yes, missed in (
            counted.filter(root__in=list(found)).order_by().values("root")
            .annotate(votes=Count("pk"), yes=Count("pk", filter=Q(**{field: True})),
                      missed=Count("pk", filter=Q(assignment__grade__checks_failed__gt=0)))
            .values_list("root", "votes", "yes", "missed")))
        split.update(found)
    rows, annotators = [], []
    ids = sorted(split)
    for start in range(0, len(ids), BATCH):
        chunk = ids[start:start + BATCH]
        for unit, hit_position, position, domain, model in (
                Unit.objects.filter(pk__in=chunk).values_list("pk", "hit__position", "position",
                                                              "hit__document__domain", "hit__summary__model")):
            votes, yes, missed = split[unit]
            rows.append(SplitUnit(unit_id=unit, project=project, task=task, votes=votes, yes=yes,
                                  majority=max(yes, votes - yes) / votes if votes else 1.0, missed_check=missed > 0,
                                  hit_position=hit_position, position=position, domain=domain or "",
                                  summarizer=model or ""))
        annotators += list(counted.filter(Q(unit__in=chunk) | Q(unit__origin__in=chunk)).order_by()
                           .values_list("root", "annotator").distinct())
    return rows, annotators, [all_pairs, agreeing]
