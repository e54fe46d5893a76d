"""Per-annotator quality numbers for the manager's dashboard (paper 3.4, 3.5, G.3).

Per annotator of a project: attention checks passed and failed, the pass rate of graded submissions over time (by
day), agreement with the leave-one-out majority on real units (the majority of the *other* annotators' counted
labels; ties left out), blind endorsement (of the FV checks whose AI judgment was wrong, the share where the
annotator accepted it, paper 3.4: "annotators who blindly endorse AI decisions"), the median time per item (items
whose time was not measured are left out) with a flag below `Project.fast_seconds_per_item`, and the share of
"no error" (FV) and "not aligned" (KA) answers next to the crowd's. A handful of grouped queries per page.
"""

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date

from django.db import connection
from django.db.models import Aggregate, BooleanField, Case, Count, Exists, F, FloatField, OuterRef, Q, Sum, Value, When
from django.db.models.functions import TruncDate

from corpus.models import Project

from ..models import Annotator, Assignment, AttentionCheck, Grade, Label, ProjectAnnotator, Task
from ..models.assignment import counted_submission_q, passing_q

MAIN_ANSWER = {Task.FACT_VERIFICATION: "has_error", Task.KEYFACT_VALIDATION: "useful",
               Task.KEYFACT_ALIGNMENT: "aligned"}
SORT_KEYS = ("pass_rate", "checks_failed", "agreement", "blind_endorsement", "median_seconds", "submissions",
             "no_error_share", "not_aligned_share")


def _share(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


@dataclass
class AnnotatorQuality:
    annotator: Annotator
    submissions: int = 0
    graded: int = 0
    counted: int = 0
    checks_passed: int = 0
    checks_failed: int = 0
    by_day: list[tuple[date, int, int]] = field(default_factory=list)  # (day, graded, counted)
    agreement_hits: int = 0
    agreement_total: int = 0
    endorsed: int = 0
    endorsement_total: int = 0
    median_seconds: float | None = None
    too_fast: bool = False
    no_error: tuple[int, int] = (0, 0)  # ("no error" answers, FV answers) on real units
    not_aligned: tuple[int, int] = (0, 0)
    status: str = Annotator.Status.ACTIVE  # in this project

    @property
    def status_label(self) -> str:
        return Annotator.Status(self.status).label

    @property
    def pass_rate(self) -> float | None:
        return _share(self.counted, self.graded)

    @property
    def agreement(self) -> float | None:
        return _share(self.agreement_hits, self.agreement_total)

    @property
    def blind_endorsement(self) -> float | None:
        return _share(self.endorsed, self.endorsement_total)

    @property
    def no_error_share(self) -> float | None:
        return _share(*self.no_error)

    @property
    def not_aligned_share(self) -> float | None:
        return _share(*self.not_aligned)

    def sparkline(self, width: int = 120, height: int = 24) -> str:
        """SVG polyline points of the daily pass rate (top = 100%)."""
        rates = [counted / graded for _, graded, counted in self.by_day if graded]
        if not rates:
            return ""
        step = width / max(1, len(rates) - 1)
        return " ".join(f"{i * step:.1f},{(1 - rate) * (height - 2) + 1:.1f}" for i, rate in enumerate(rates))


@dataclass
class Dashboard:
    rows: list[AnnotatorQuality]
    crowd_no_error_share: float | None
    crowd_not_aligned_share: float | None


def project_quality(project: Project, annotators=None) -> Dashboard:
    """The numbers of every annotator who submitted work in `project` (or of `annotators` only). Only submissions
    whose identity is confirmed: an unconfirmed crowd arrival may be somebody else's use of the worker id.

    Every number is a grouped query (per annotator, per day, per answer): the rows read do not grow with the number
    of HITs or labels."""
    submitted = Assignment.objects.filter(hit__project=project, status=Assignment.Status.SUBMITTED,
                                          confirmed_at__isnull=False)
    if annotators is not None:
        submitted = submitted.filter(annotator__in=annotators)
    counts = dict(submitted.order_by().values("annotator_id").annotate(n=Count("pk")).values_list("annotator_id", "n"))
    people = {a.pk: AnnotatorQuality(a) for a in Annotator.objects.filter(pk__in=counts).order_by("created", "pk")}
    for annotator_id, n in counts.items():
        people[annotator_id].submissions = n
    for annotator_id, status in ProjectAnnotator.objects.filter(project=project, annotator_id__in=counts).values_list(
            "annotator_id", "status"):
        people[annotator_id].status = status
    days: dict[int, list] = defaultdict(list)
    passes = Q(override_passed=True) | Q(override_passed__isnull=True, passed=True)
    for annotator_id, day, graded, counted, total, failed in (
            Grade.objects.filter(assignment__in=submitted)
            .annotate(day=TruncDate("assignment__submitted_at", tzinfo=UTC))
            .order_by().values("assignment__annotator_id", "day")
            .annotate(graded=Count("pk"), counted=Count("pk", filter=passes), total=Sum("checks_total"),
                      failed=Sum("checks_failed"))
            .values_list("assignment__annotator_id", "day", "graded", "counted", "total", "failed")):
        row = people[annotator_id]
        row.graded, row.counted = row.graded + graded, row.counted + counted
        row.checks_passed, row.checks_failed = row.checks_passed + total - failed, row.checks_failed + failed
        days[annotator_id].append((day, graded, counted))
    for annotator_id, by_day in days.items():
        people[annotator_id].by_day = sorted(by_day)
    _real_unit_numbers(project, people)
    crowd = _crowd_shares(project)
    _check_numbers(project, people)
    return Dashboard(rows=list(people.values()), crowd_no_error_share=crowd[0], crowd_not_aligned_share=crowd[1])


def _main_answer():
    """The label's answer to its task's question (MAIN_ANSWER), as an expression."""
    return Case(*[When(unit__task=task, then=F(name)) for task, name in MAIN_ANSWER.items()],
                output_field=BooleanField())


def _real_unit_numbers(project: Project, people: dict[int, AnnotatorQuality]) -> None:
    """Agreement with the leave-one-out majority, answer shares and time per item."""
    if not people:
        return  # (and no SQL to write for an empty IN)
    # Real units as NOT EXISTS rather than a left join on the checks: PostgreSQL estimates the join's "IS NULL" at
    # one row and then joins the votes below in a nested loop (minutes at UniSumEval size).
    real = ~Exists(AttentionCheck.objects.filter(unit_id=OuterRef("unit_id")))
    labels = Label.objects.filter(real, unit__hit__project=project, assignment__status=Assignment.Status.SUBMITTED,
                                  assignment__confirmed_at__isnull=False)
    own = (labels.filter(annotator_id__in=people).annotate(answer=_main_answer())
           .filter(answer__isnull=False))
    # Leave-one-out majority: each unit's counted votes (how many, how many yes) joined to the annotators' own answers;
    # grouped by (annotator, answer, whether it counts, votes, yes), which are a handful of combinations per annotator.
    counts = passing_q("assignment__")  # with `labels`' own conditions, label_counts_q
    votes = (labels.filter(counts).annotate(answer=_main_answer()).filter(answer__isnull=False)
             .order_by().values("unit_id").annotate(votes=Count("pk"), yes=Count("pk", filter=Q(answer=True))))
    mine = own.annotate(counts=Case(When(counts, then=Value(1)), default=Value(0))).order_by().values(
        "unit_id", "annotator_id", "answer", "counts")
    mine_sql, mine_params = mine.query.sql_with_params()
    votes_sql, votes_params = votes.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT o.annotator_id, o.answer, o.counts, COALESCE(v.votes, 0), COALESCE(v.yes, 0), COUNT(*) "
            f"FROM ({mine_sql}) o LEFT JOIN ({votes_sql}) v ON v.unit_id = o.unit_id "
            f"GROUP BY o.annotator_id, o.answer, o.counts, v.votes, v.yes", (*mine_params, *votes_params))
        grouped = cursor.fetchall()
    for annotator_id, answer, counts, all_votes, all_yes, n in grouped:
        answer = bool(answer)
        # The others' votes: the unit's counted votes without the annotator's own (if it counts).
        others, yes = all_votes - counts, all_yes - counts * int(answer)
        if others and yes * 2 != others:
            row = people[annotator_id]
            row.agreement_total += n
            row.agreement_hits += n * int(answer == (yes * 2 > others))
    for annotator_id, fv_no, fv, ka_no, ka in (
            own.order_by().values("annotator_id").annotate(
                fv_no=Count("pk", filter=Q(unit__task=Task.FACT_VERIFICATION, answer=False)),
                fv=Count("pk", filter=Q(unit__task=Task.FACT_VERIFICATION)),
                ka_no=Count("pk", filter=Q(unit__task=Task.KEYFACT_ALIGNMENT, answer=False)),
                ka=Count("pk", filter=Q(unit__task=Task.KEYFACT_ALIGNMENT)))
            .values_list("annotator_id", "fv_no", "fv", "ka_no", "ka")):
        if fv or ka:
            people[annotator_id].no_error = (fv_no, fv)
            people[annotator_id].not_aligned = (ka_no, ka)
    timed = Label.objects.filter(unit__hit__project=project, annotator_id__in=people,
                                 assignment__status=Assignment.Status.SUBMITTED,
                                 assignment__confirmed_at__isnull=False, seconds_on_item__gt=0)
    for annotator_id, median in _medians(timed, "annotator_id", "seconds_on_item"):
        row = people[annotator_id]
        row.median_seconds = median
        row.too_fast = row.median_seconds < project.fast_seconds_per_item


class _Median(Aggregate):
    """PostgreSQL's median (the mean of the two middle values of an even count, as statistics.median)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def _medians(queryset, by: str, field_name: str):
    """(value of `by`, median of `field_name`) per group: in the database on PostgreSQL, else read and computed."""
    if connection.vendor == "postgresql":
        return queryset.order_by().values(by).annotate(median=_Median(field_name)).values_list(by, "median")
    values = defaultdict(list)
    for key, value in queryset.values_list(by, field_name).iterator(chunk_size=10000):
        values[key].append(value)
    return [(key, statistics.median(found)) for key, found in values.items()]


def _crowd_shares(project: Project) -> tuple[float | None, float | None]:
    # label_counts_q, with "a real unit" as NOT EXISTS (see _real_unit_numbers).
    labels = Label.objects.filter(~Exists(AttentionCheck.objects.filter(unit_id=OuterRef("unit_id"))),
                                  counted_submission_q("assignment__"), unit__hit__project=project)
    fv = labels.filter(unit__task=Task.FACT_VERIFICATION, has_error__isnull=False)
    ka = labels.filter(unit__task=Task.KEYFACT_ALIGNMENT, aligned__isnull=False)
    shares = {}
    for name, queryset, field_name in (("fv", fv, "has_error"), ("ka", ka, "aligned")):
        counted = queryset.aggregate(no=Count("pk", filter=Q(**{field_name: False})), all=Count("pk"))
        shares[name] = _share(counted["no"], counted["all"])
    return shares["fv"], shares["ka"]


def _check_numbers(project: Project, people: dict[int, AnnotatorQuality]) -> None:
    """Blind endorsement: FV checks whose AI judgment was wrong ("no error"), accepted by the annotator."""
    rows = (Label.objects.filter(unit__hit__project=project, annotator_id__in=people,
                                 assignment__status=Assignment.Status.SUBMITTED, assignment__confirmed_at__isnull=False,
                                 unit__attention_check__kind__in=(AttentionCheck.Kind.FV_AI_SAYS_CORRECT,
                                                                  AttentionCheck.Kind.FV_NAME_SWAPPED))
            .exclude(unit__ai_category="")
            .order_by().values("annotator_id", "ai_right", "has_error").annotate(n=Count("pk"))
            .values_list("annotator_id", "ai_right", "has_error", "n"))
    for annotator_id, ai_right, has_error, n in rows:
        accepted = ai_right if ai_right is not None else has_error is False
        if accepted is None:
            continue
        row = people[annotator_id]
        row.endorsement_total += n
        row.endorsed += n * int(bool(accepted))


def sort_rows(rows: list[AnnotatorQuality], key: str) -> list[AnnotatorQuality]:
    """Sort by a SORT_KEYS name, "-name" for descending; annotators without the number go last either way."""
    descending, name = key.startswith("-"), key.lstrip("-")
    if name not in SORT_KEYS:
        raise ValueError(f"Unknown sort key {name!r}")
    present = [row for row in rows if getattr(row, name) is not None]
    missing = [row for row in rows if getattr(row, name) is None]
    return sorted(present, key=lambda row: getattr(row, name), reverse=descending) + missing
