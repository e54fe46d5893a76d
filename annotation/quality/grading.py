"""Grading a submitted assignment's attention checks (paper G.3: a failed check fails the submission).

A check is one unit for FV and KV, and one line for KA: a fake key-fact row, or a fake sentence column (the
paraphrase column is graded on its one cell, the paraphrased key-fact's). Only the questions the annotator was
asked are graded: "is the AI right?" only where the AI judgment was shown. The submission passes when the share of
failed checks is at most `Project.max_failed_check_share` (0 by default: every check must pass). The reason names
what was missed in words a worker can read; it is shown with a rejection.
"""

from dataclasses import dataclass, field

from django.db import transaction

from ..ai_agreement import contradiction
from ..models import Assignment, AttentionCheck, Grade, Label, Task, Unit

Kind = AttentionCheck.Kind


@dataclass
class CheckResult:
    passed: bool
    problem: str = ""  # Why it failed, one sentence.


@dataclass
class Outcome:
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]


def _yes_no(value) -> str:
    return "no answer" if value is None else ("yes" if value else "no")


def _check_lines(units: list[Unit]) -> dict[tuple, list[Unit]]:
    """The graded units of each check: one unit (FV, KV), or a KA row or column."""
    lines: dict[tuple, list[Unit]] = {}
    for unit in units:
        check = unit.attention_check
        if not check.expected:  # The paraphrase column's cells other than the paraphrased key-fact's.
            continue
        if check.kind == Kind.KA_FAKE_KEYFACT:
            key = (check.kind, "row", unit.row)
        elif check.kind in (Kind.KA_PARAPHRASE, Kind.KA_UNRELATED_SENTENCE):
            key = (check.kind, "column", unit.column)
        else:
            key = (check.kind, "unit", unit.position)
        lines.setdefault(key, []).append(unit)
    return lines


GRADED_ORDER = ("has_error", "ai_right", "useful", "aligned")  # Fixed: PostgreSQL's jsonb does not keep key order.


def _graded_fields(unit: Unit, hit) -> list[str]:
    asked, expected = unit.question_fields(hit), unit.attention_check.expected
    return [name for name in GRADED_ORDER if name in expected and name in asked]


def _problem(kind: str, unit: Unit, label: Label | None, name: str) -> str:
    given = getattr(label, name, None) if label else None
    number = unit.position + 1
    if kind == Kind.FV_AI_SAYS_CORRECT and name == "ai_right":
        return (f"Sentence {number} was taken from another document, so the AI's \"no error\" judgment was wrong; "
                f"you answered that the AI was right.")
    if kind == Kind.FV_AI_SAYS_ERROR and name == "ai_right":
        return (f"Sentence {number} was taken from another document, so the AI was right to flag it; "
                f"you answered that the AI was wrong.")
    if kind == Kind.FV_NAME_SWAPPED:
        wrong = f"Sentence {number} {unit.attention_check.note or 'names someone the document does not'}"
        if name == "ai_right":
            return f"{wrong}, so the AI's \"no error\" judgment was wrong; you answered that the AI was right."
        return f"{wrong}, so it has an error; you answered '{'no error' if given is False else _yes_no(given)}'."
    if kind in (Kind.FV_AI_SAYS_CORRECT, Kind.FV_AI_SAYS_ERROR):
        answer = "no error" if given is False else _yes_no(given)
        return f"Sentence {number} was taken from another document and has an error; you answered '{answer}'."
    if kind == Kind.KV_IRRELEVANT:
        answer = "useful" if given else _yes_no(given)
        return f"Key-fact {number} comes from another document and is not useful here; you answered '{answer}'."
    if kind == Kind.KA_FAKE_KEYFACT:
        return (f"Key-fact {unit.row + 1} does not come from this document, so no summary sentence supports it; "
                f"you answered '{_yes_no(given)}' for sentence {unit.column + 1}.")
    if kind == Kind.KA_PARAPHRASE:
        return (f"Sentence {unit.column + 1} restates key-fact {unit.row + 1}, so the key-fact can be inferred from "
                f"it; you answered '{_yes_no(given)}'.")
    return (f"Sentence {unit.column + 1} is unrelated to the document, so no key-fact can be inferred from it; "
            f"you answered '{_yes_no(given)}' for key-fact {unit.row + 1}.")


def check_outcome(assignment: Assignment) -> Outcome:
    """Each check of the assignment's HIT, passed or failed, from the assignment's labels."""
    hit = assignment.hit
    units = list(Unit.objects.filter(hit=hit, attention_check__isnull=False).select_related("attention_check")
                 .order_by("position"))
    labels = {label.unit_id: label for label in assignment.labels.filter(unit__in=units)}
    outcome = Outcome()
    for (kind, _, _), line in sorted(_check_lines(units).items(), key=lambda item: item[1][0].position):
        problems = []
        for unit in line:
            label = labels.get(unit.pk)
            # A pair that contradicts itself is wrong whatever its halves say: the rule the page and the API
            # refuse it by, for labels written before it or by the bulk writers.
            if label is not None and "ai_right" in unit.question_fields(hit) and (problem := contradiction(
                    unit.ai_category, has_error=label.has_error, ai_right=label.ai_right)):
                problems.append(f"Sentence {unit.position + 1}: {problem}")
                continue
            for name in _graded_fields(unit, hit):
                if getattr(label, name, None) != unit.attention_check.expected[name]:
                    problems.append(_problem(kind, unit, label, name))
                    break
        if problems and hit.task == Task.KEYFACT_ALIGNMENT and len(problems) > 1:
            problems = [problems[0] + f" ({len(problems) - 1} more cell(s) of the same line were wrong too.)"]
        outcome.checks.append(CheckResult(passed=not problems, problem=" ".join(problems)))
    return outcome


def grade_assignment(assignment: Assignment) -> Grade:
    """Grade a submitted assignment and store the Grade (grading again updates it; a manager's override stays)."""
    if assignment.status != Assignment.Status.SUBMITTED:
        raise ValueError("Only a submitted assignment can be graded")
    project = assignment.hit.project
    outcome = check_outcome(assignment)
    total, failed = len(outcome.checks), len(outcome.failed)
    passed = total == 0 or failed / total <= project.max_failed_check_share + 1e-9
    if failed:
        reason = f"{failed} of {total} attention check(s) failed. " + " ".join(c.problem for c in outcome.failed)
    else:
        reason = f"All {total} attention check(s) passed." if total else "This HIT had no attention checks."
    with transaction.atomic():
        grade, _ = Grade.objects.update_or_create(
            assignment=assignment,
            defaults={"passed": passed, "checks_total": total, "checks_failed": failed, "reason": reason})
    return grade
