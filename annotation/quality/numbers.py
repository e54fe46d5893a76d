"""The annotators' quality numbers as a job computed them (stored numbers, corpus.snapshots): the dashboard's rows,
the crowd's shares, and the labels and seconds per item of the annotator list.

Computing them reads every label of the project (annotation.quality.dashboard): seconds at 10x UniSumEval scale, so
the pages show stored numbers and say plainly when they are older than the work, with how many submissions arrived
since, and a manager asks for new ones with a button. What is bounded stays live: each annotator's
status and provider (filters included), the grades and decisions on an annotator's page, the HITs submitted and
reserved, and the labels of HITs still open (the annotator list adds them to the stored ones). The quality policy
decides from live data (annotation.quality.policy), never from these.

The basis (`quality_basis`) moves whenever a stored number would. Labels are read through their assignments, as
annotation.fingerprints argues: a label is written only while its assignment is reserved, and the
numbers read the labels of the other assignments only, so an assignment that leaves "reserved" (submitted, expired,
returned), is discarded, confirmed, reassigned or deleted moves the assignments' aggregates, and so do a grade, a
regrade and an override; a new attention check, a HIT build and an AI assistance run move the rest.
"""

from dataclasses import dataclass
from datetime import date

from django.db.models import Count, Max, Q, Sum

from corpus.models import Job, Project
from corpus.snapshots import NumbersState, data_jobs, numbers_state

from ..job_kinds import QUALITY as KIND
from ..models import Annotator, Assignment, AttentionCheck, Label, ProjectAnnotator
from .dashboard import AnnotatorQuality, Dashboard, project_quality


def quality_basis(project: Project, variant: str = "") -> dict:
    closed = Assignment.objects.filter(hit__project=project).exclude(status=Assignment.Status.RESERVED)
    submitted = Q(status=Assignment.Status.SUBMITTED)
    return {
        # One pass over the project's closed assignments and their grades (a grade belongs to a submission).
        "assignments": closed.aggregate(
            n=Count("pk"), ids=Sum("pk"), last=Max("pk"), annotators=Sum("annotator_id"),
            submitted=Count("pk", filter=submitted), submitted_at=Max("submitted_at"),
            confirmed=Count("pk", filter=submitted & Q(confirmed_at__isnull=False)), confirmed_at=Max("confirmed_at"),
            discarded=Count("pk", filter=Q(status=Assignment.Status.DISCARDED)),
            grades=Count("grade"), grade_last=Max("grade__pk"), graded_at=Max("grade__graded_at"),
            passed=Count("grade", filter=Q(grade__passed=True)), checks=Sum("grade__checks_total"),
            checks_failed=Sum("grade__checks_failed"), overridden_at=Max("grade__overridden_at"),
            override_pass=Count("grade", filter=Q(grade__override_passed=True)),
            override_fail=Count("grade", filter=Q(grade__override_passed=False))),
        # Checks are written with their units, into HITs nobody has taken (annotation.quality.injection), so they
        # reach the numbers through submissions; the newest check of any project (an index lookup) and the jobs that
        # change data (HIT builds, AI assistance runs: a unit's AI judgment, read by blind endorsement) guard the rest.
        "checks": AttentionCheck.objects.aggregate(last=Max("pk")),
        "jobs": data_jobs(project),
    }


def quality_compute(job: Job) -> dict:
    project = job.project
    dashboard = project_quality(project)
    # The annotator list's labels and seconds, over every assignment that is no longer open (the open ones are
    # added live, see `open_labels`).
    labels = {annotator_id: (n, seconds) for annotator_id, n, seconds in (
        Label.objects.filter(unit__hit__project=project).exclude(assignment__status=Assignment.Status.RESERVED)
        .order_by().values("annotator_id").annotate(n=Count("pk"), seconds=Sum("seconds_on_item"))
        .values_list("annotator_id", "n", "seconds"))}
    return {"rows": [_row_data(row) for row in dashboard.rows],
            "crowd_no_error_share": dashboard.crowd_no_error_share,
            "crowd_not_aligned_share": dashboard.crowd_not_aligned_share,
            "labels": [[annotator_id, n, seconds] for annotator_id, (n, seconds) in labels.items()]}


_ROW_FIELDS = ("submissions", "graded", "counted", "checks_passed", "checks_failed", "agreement_hits",
               "agreement_total", "endorsed", "endorsement_total", "median_seconds")


def _row_data(row: AnnotatorQuality) -> dict:
    return {"annotator": row.annotator.pk, **{name: getattr(row, name) for name in _ROW_FIELDS},
            "by_day": [[day.isoformat(), graded, counted] for day, graded, counted in row.by_day],
            "no_error": list(row.no_error), "not_aligned": list(row.not_aligned)}


def _row_from(data: dict, annotator: Annotator, project: Project, status: str) -> AnnotatorQuality:
    by_day = [(date.fromisoformat(day), graded, counted) for day, graded, counted in data["by_day"]]
    row = AnnotatorQuality(annotator, **{name: data[name] for name in _ROW_FIELDS}, by_day=by_day,
                           no_error=tuple(data["no_error"]), not_aligned=tuple(data["not_aligned"]), status=status)
    # The project's threshold as it is now: changing it changes no stored number.
    row.too_fast = row.median_seconds is not None and row.median_seconds < project.fast_seconds_per_item
    return row


def newer_submissions(state: NumbersState) -> str:
    """What the numbers page says changed since (the kind's `since`)."""
    n = QualityNumbers(state.project, state).newer_submissions
    if n:
        return f"{n} newer submission{'' if n == 1 else 's'}"
    return "the latest grades, overrides, confirmations or discards"


@dataclass
class QualityNumbers:
    """The stored numbers of a project and how they stand against the work as it is now."""

    project: Project
    state: NumbersState

    @property
    def data(self) -> dict | None:
        return self.state.data

    @property
    def current(self) -> bool:
        return self.state.current

    @property
    def computed(self):
        return self.state.stored.computed if self.state.stored is not None else None

    @property
    def job(self) -> Job | None:
        return self.state.job

    @property
    def newer_submissions(self) -> int:
        """Submissions that arrived after the stored numbers were computed (0 when only grades, overrides,
        confirmations or discards changed)."""
        if self.state.stored is None:
            return 0
        now, then = (basis["assignments"]["submitted"] for basis in (self.state.basis, self.state.stored.basis))
        return max(0, now - then)

    def dashboard(self, annotators=None) -> Dashboard | None:
        """The stored dashboard (None before the first computation), of `annotators` only if given (a queryset:
        their status and provider are read now)."""
        if self.data is None:
            return None
        rows = {data["annotator"]: data for data in self.data["rows"]}
        people = ((Annotator.objects.all() if annotators is None else annotators).filter(pk__in=rows)
                  .select_related("user"))
        people = {annotator.pk: annotator for annotator in people}
        statuses = dict(ProjectAnnotator.objects.filter(project=self.project, annotator_id__in=people)
                        .values_list("annotator_id", "status"))
        return Dashboard(
            rows=[_row_from(data, people[pk], self.project, statuses.get(pk, Annotator.Status.ACTIVE))
                  for pk, data in rows.items() if pk in people],
            crowd_no_error_share=self.data["crowd_no_error_share"],
            crowd_not_aligned_share=self.data["crowd_not_aligned_share"])

    def labels(self) -> dict[int, tuple[int, float]]:
        """Per annotator: (labels, seconds on them) of the assignments no longer open, as stored."""
        if self.data is None:
            return {}
        return {annotator_id: (n, seconds) for annotator_id, n, seconds in self.data["labels"]}



def quality_numbers(project: Project) -> QualityNumbers:
    """The stored numbers and how they stand; a job brings them up to date when a manager asks (a POST)."""
    return QualityNumbers(project, numbers_state(project, KIND))


def open_labels(project: Project, annotator_ids) -> dict[int, tuple[int, float]]:
    """Per annotator: (labels, seconds on them) of the assignments still reserved, live: a handful of HITs each."""
    return {annotator_id: (n, seconds or 0.0) for annotator_id, n, seconds in (
        Label.objects.filter(assignment__hit__project=project, assignment__status=Assignment.Status.RESERVED,
                             annotator_id__in=annotator_ids)
        .order_by().values("annotator_id").annotate(n=Count("pk"), seconds=Sum("seconds_on_item"))
        .values_list("annotator_id", "n", "seconds"))}
