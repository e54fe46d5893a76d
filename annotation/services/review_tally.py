"""The reviewer's list, tallied by a job: which units are split or flagged, by how much, and who labelled them.

Finding the split units reads every counted label of a task (1.7M labels at 10x UniSumEval: tens of seconds), so it
never runs inside a request: the list is one kind of stored numbers (corpus.snapshots, registered in
annotation.tasks). `review_tally_compute` groups the counted labels per unit once and stores the split units in
`SplitUnit` (with the order's and the filters' columns; once per annotator in `SplitUnitLabel`), with the units an
annotator flagged as broken or unclear even where the labels agree (a flag asks for a reviewer); the snapshot keeps
per task the pairs of agreeing answers and the annotators with labels. While the labels have changed since, the page
shows the stored list marked as of when it was tallied, and a reviewer asks for a new tally with a button.
Adjudications are not tallied: the list reads them live, so a unit a reviewer settles leaves the "not yet" list at
once.

The basis (`review_basis`, from the parts in annotation.fingerprints) moves when a submission enters or leaves the
counted set or its missed checks change, when a flag starts or stops standing (its HIT submitted or returned, the
flag withdrawn), when HITs or the corpus change, and when a job that changes data finishes.
"""

from django.db.models import Count, Exists, OuterRef, Q
from django.db.models.functions import Coalesce

from corpus.models import Job, Project
from corpus.snapshots import corpus_parts, data_jobs

from .. import fingerprints
from ..job_kinds import REVIEW_TALLY as KIND  # noqa: F401 (the kind's code, for the pages)
from ..models import AttentionCheck, ItemFlag, Label, SplitUnit, SplitUnitLabel, Task, Unit
from ..models.assignment import counted_submission_q
from ..selectors import REVIEW_QUESTION, standing_flag_q

TASKS = (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT)
BATCH = 2000


def review_basis(project: Project, variant: str = "") -> dict:
    parts = corpus_parts(project)
    return {"submissions": fingerprints.counted_submissions(project), "flags": fingerprints.standing_flags(project),
            "hits": fingerprints.hits(project), "documents": parts["documents"], "summaries": parts["summaries"],
            "jobs": data_jobs(project)}


def review_tally_compute(job: Job):
    """Tally every task's counted answers per unit: the snapshot's numbers, and the split units that replace the
    stored ones in the snapshot's transaction (a page reads the old list or the new one, never half of each)."""
    project = job.project
    rows, annotators, pairs = [], [], {}
    for task in TASKS:
        task_rows, task_annotators, pairs[task] = _tally_task(project, task)
        rows += task_rows
        annotators += task_annotators
        job.advance(0, f"tallied {Task(task).label}")
    labelled_by = sorted(Label.objects.filter(unit__hit__project=project).order_by()
                         .values_list("annotator", flat=True).distinct())
    columns = [field.attname for field in SplitUnit._meta.concrete_fields]
    by_unit = {row.unit_id: row for row in rows}
    labelled = [SplitUnitLabel(annotator_id=annotator, **{name: getattr(by_unit[unit], name) for name in columns})
                for unit, annotator in annotators]

    def write() -> None:
        SplitUnitLabel.objects.filter(project=project).delete()
        SplitUnit.objects.filter(project=project).delete()
        SplitUnit.objects.bulk_create(rows, batch_size=BATCH)
        SplitUnitLabel.objects.bulk_create(labelled, batch_size=BATCH)

    return {"pairs": pairs, "annotators": labelled_by, "summary": {"split_units": len(rows)}}, write


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
