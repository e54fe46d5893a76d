"""Per-annotator quality numbers for the manager's dashboard (paper 3.4, 3.5, G.3).

Per annotator of a project: attention checks passed and failed, the pass rate of graded submissions over time (by
day), agreement with the leave-one-out majority on real units (the majority of the *other* annotators' counted
labels; ties left out), blind endorsement (of the FV checks whose AI judgment was wrong, the share where the
annotator accepted it, paper 3.4: "annotators who blindly endorse AI decisions"), the median time per item (items
whose time was not measured are left out) with a flag below `Project.fast_seconds_per_item`, and the share of
"no error" (FV) and "not aligned" (KA) answers next to the crowd's. A handful of grouped queries per page.
"""

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date

from corpus.models import Project

from ..models import Annotator, Assignment, AttentionCheck, Grade, Label, ProjectAnnotator, Task
from .selectors import label_counts_q

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
    whose identity is confirmed: an unconfirmed crowd arrival may be somebody else's use of the worker id."""
    submitted = Assignment.objects.filter(hit__project=project, status=Assignment.Status.SUBMITTED,
                                          confirmed_at__isnull=False)
    if annotators is not None:
        submitted = submitted.filter(annotator__in=annotators)
    ids = set(submitted.values_list("annotator_id", flat=True))
    people = {a.pk: AnnotatorQuality(a) for a in Annotator.objects.filter(pk__in=ids).order_by("created", "pk")}
    for annotator_id, n in Counter(submitted.values_list("annotator_id", flat=True)).items():
        people[annotator_id].submissions = n
    for annotator_id, status in ProjectAnnotator.objects.filter(project=project, annotator_id__in=ids).values_list(
            "annotator_id", "status"):
        people[annotator_id].status = status
    days: dict[int, dict[date, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for annotator_id, passed, override, total, failed, at in (
            Grade.objects.filter(assignment__in=submitted).values_list(
                "assignment__annotator_id", "passed", "override_passed", "checks_total", "checks_failed",
                "assignment__submitted_at")):
        row = people[annotator_id]
        counts = passed if override is None else override
        row.graded, row.counted = row.graded + 1, row.counted + int(counts)
        row.checks_passed, row.checks_failed = row.checks_passed + total - failed, row.checks_failed + failed
        day = days[annotator_id][at.date()]
        day[0], day[1] = day[0] + 1, day[1] + int(counts)
    for annotator_id, by_day in days.items():
        people[annotator_id].by_day = [(day, graded, counted) for day, (graded, counted) in sorted(by_day.items())]
    _real_unit_numbers(project, people)
    crowd = _crowd_shares(project)
    _check_numbers(project, people)
    return Dashboard(rows=list(people.values()), crowd_no_error_share=crowd[0], crowd_not_aligned_share=crowd[1])


def _real_unit_numbers(project: Project, people: dict[int, AnnotatorQuality]) -> None:
    """Agreement with the leave-one-out majority, answer shares and time per item."""
    labels = Label.objects.filter(unit__hit__project=project, assignment__status=Assignment.Status.SUBMITTED,
                                  assignment__confirmed_at__isnull=False, unit__attention_check__isnull=True)
    counted_ids = set(labels.filter(label_counts_q()).values_list("pk", flat=True))
    votes: dict[int, list[tuple[int, bool]]] = defaultdict(list)  # unit -> counted (annotator, answer)
    own: list[tuple[int, int, str, bool | None]] = []
    for pk, unit_id, annotator_id, task, has_error, useful, aligned in labels.values_list(
            "pk", "unit_id", "annotator_id", "unit__task", "has_error", "useful", "aligned"):
        answer = {"has_error": has_error, "useful": useful, "aligned": aligned}[MAIN_ANSWER[task]]
        if annotator_id in people:
            own.append((unit_id, annotator_id, task, answer))
        if pk in counted_ids and answer is not None:
            votes[unit_id].append((annotator_id, answer))
    shares: dict[int, dict[str, list[int]]] = defaultdict(lambda: {"fv": [0, 0], "ka": [0, 0]})
    for unit_id, annotator_id, task, answer in own:
        if answer is None:
            continue
        others = [vote for who, vote in votes[unit_id] if who != annotator_id]
        yes = sum(others)
        if others and yes * 2 != len(others):
            row = people[annotator_id]
            row.agreement_total += 1
            row.agreement_hits += int(answer == (yes * 2 > len(others)))
        if task in ("fv", "ka"):
            share = shares[annotator_id][task]
            share[0] += int(answer is False)
            share[1] += 1
    for annotator_id, share in shares.items():
        people[annotator_id].no_error = tuple(share["fv"])
        people[annotator_id].not_aligned = tuple(share["ka"])
    seconds = defaultdict(list)
    for annotator_id, value in (Label.objects.filter(unit__hit__project=project, annotator_id__in=people,
                                                     assignment__status=Assignment.Status.SUBMITTED,
                                                     assignment__confirmed_at__isnull=False, seconds_on_item__gt=0)
                                .values_list("annotator_id", "seconds_on_item")):
        seconds[annotator_id].append(value)
    for annotator_id, values in seconds.items():
        row = people[annotator_id]
        row.median_seconds = statistics.median(values)
        row.too_fast = row.median_seconds < project.fast_seconds_per_item


def _crowd_shares(project: Project) -> tuple[float | None, float | None]:
    labels = Label.objects.filter(label_counts_q(), unit__hit__project=project)
    fv = list(labels.filter(unit__task=Task.FACT_VERIFICATION, has_error__isnull=False)
              .values_list("has_error", flat=True))
    ka = list(labels.filter(unit__task=Task.KEYFACT_ALIGNMENT, aligned__isnull=False)
              .values_list("aligned", flat=True))
    return _share(fv.count(False), len(fv)), _share(ka.count(False), len(ka))


def _check_numbers(project: Project, people: dict[int, AnnotatorQuality]) -> None:
    """Blind endorsement: FV checks whose AI judgment was wrong ("no error"), accepted by the annotator."""
    rows = (Label.objects.filter(unit__hit__project=project, annotator_id__in=people,
                                 assignment__status=Assignment.Status.SUBMITTED, assignment__confirmed_at__isnull=False,
                                 unit__attention_check__kind__in=(AttentionCheck.Kind.FV_AI_SAYS_CORRECT,
                                                                  AttentionCheck.Kind.FV_NAME_SWAPPED))
            .exclude(unit__ai_category="")
            .values_list("annotator_id", "ai_right", "has_error"))
    for annotator_id, ai_right, has_error in rows:
        accepted = ai_right if ai_right is not None else has_error is False
        if accepted is None:
            continue
        row = people[annotator_id]
        row.endorsement_total += 1
        row.endorsed += int(bool(accepted))


def sort_rows(rows: list[AnnotatorQuality], key: str) -> list[AnnotatorQuality]:
    """Sort by a SORT_KEYS name, "-name" for descending; annotators without the number go last either way."""
    descending, name = key.startswith("-"), key.lstrip("-")
    if name not in SORT_KEYS:
        raise ValueError(f"Unknown sort key {name!r}")
    present = [row for row in rows if getattr(row, name) is not None]
    missing = [row for row in rows if getattr(row, name) is None]
    return sorted(present, key=lambda row: getattr(row, name), reverse=descending) + missing
