"""Saving an annotator's answers: validated in full first, then written together, or not at all.

Pages send answers as form fields named `u<position>-<question>` (one item at a time from htmx, every item at once
from the plain form); the API sends one item as JSON. Both end in `save_answers`, which checks each item with
`clean_answers`: the same rules and the same words wherever the answers come from.
"""

import math
import re
from collections.abc import Mapping
from enum import Enum

from django.db import transaction
from django.utils import timezone

from ..ai_agreement import ai_right_for, contradiction, has_error_for
from ..models import Assignment, ErrorType, Hit, Label, Task, Unit
from ..selectors import assignment_labels
from ..wording import describe_unit
from .assignment import ReservationLapsed, lock_open_assignment, renew_reservation

ANSWER_FIELDS = ("has_error", "error_types", "ai_right", "useful", "aligned", "seconds_on_item")
FORM_FIELD = re.compile(r"^u(\d{1,6})-([a-z_]+)$")
TASK_QUESTIONS = {
    Task.FACT_VERIFICATION: {"has_error", "error_types", "ai_right"},
    Task.KEYFACT_VALIDATION: {"useful"},
    Task.KEYFACT_ALIGNMENT: {"aligned"},
}
# Nobody looks at one item for more than an hour; a longer time is a tab left open.
MAX_SECONDS_ON_ITEM = 3600.0
# Yes/no answers as forms and JSON clients spell them (the spellings Django REST framework reads, which the API's
# schema documents); 1 also stands for 1.0 and True, 0 for False.
TRUE_VALUES = {"t", "y", "yes", "true", "on", "1", 1}
FALSE_VALUES = {"f", "n", "no", "false", "off", "0", 0}
# A number written with more characters than this is refused before parsing it.
MAX_NUMBER_CHARS = 1000


class InvalidAnswers(Exception):
    """Answers that cannot be stored; `errors` maps an item's name to what is wrong with it."""

    status_code = 400

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("Nothing was saved: " + "; ".join(f"{item}: {' '.join(problems)}"
                                                           for item, problems in errors.items()))


def read_form(data, units: list[Unit]) -> dict[Unit, dict]:
    """Answers from form fields `u<position>-<question>`; fields of other names (the CSRF token...) are ignored."""
    by_position = {unit.position: unit for unit in units}
    answers: dict[Unit, dict] = {}
    errors: dict[str, list[str]] = {}
    for key in data:
        match = FORM_FIELD.match(key)
        if not match:
            continue
        position, name = int(match[1]), match[2]
        if name == "flag":
            continue  # A note for the manager, not an answer (read_flags).
        if name == "seconds":
            name = "seconds_on_item"
        unit = by_position.get(position)
        if unit is None:
            errors.setdefault(f"item {position + 1}", []).append("There is no such item in this HIT.")
            continue
        if name not in ANSWER_FIELDS:
            errors.setdefault(describe_unit(unit), []).append(f"{name} is not a question.")
            continue
        if name == "error_types":
            value = [item for item in data.getlist(key) if item]
        else:
            value = data.get(key)
            if value == "":  # An unanswered question, e.g. time not measured: nothing to store.
                continue
        answers.setdefault(unit, {})[name] = value
    if errors:
        raise InvalidAnswers(errors)
    return answers


class _Refused(Exception):
    """One answer's problems, in words."""

    def __init__(self, *problems: str):
        self.problems = list(problems)


def _yes_no(value) -> bool:
    word = value.lower() if isinstance(value, str) else value
    try:
        if word in TRUE_VALUES:
            return True
        if word in FALSE_VALUES:
            return False
    except TypeError:  # A list or an object: not hashable, not a yes or a no.
        pass
    raise _Refused("Must be a valid boolean.")


def _error_types(value) -> list[str]:
    if isinstance(value, (str, Mapping)) or not hasattr(value, "__iter__"):
        raise _Refused(f'Expected a list of items but got type "{type(value).__name__}".')
    chosen, problems = [], []
    for item in value:
        item = item.value if isinstance(item, Enum) else item
        if item is None:
            problems.append("This field may not be null.")
        elif str(item) not in ErrorType.values:
            problems.append(f'"{item}" is not a valid choice.')
        else:
            chosen.append(str(item))
    if problems:
        raise _Refused(*problems)
    if len(chosen) > len(ErrorType.values):
        raise _Refused(f"Ensure this field has no more than {len(ErrorType.values)} elements.")
    return chosen


def _seconds(value) -> float:
    if isinstance(value, str) and len(value) > MAX_NUMBER_CHARS:
        raise _Refused("String value too large.")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise _Refused("A valid number is required.") from None
    except OverflowError:
        raise _Refused("Integer value too large to convert to float") from None
    if not math.isfinite(seconds):
        raise _Refused("A valid number is required.")
    if seconds < 0:
        raise _Refused("Ensure this value is greater than or equal to 0.")
    return seconds


READERS = {"has_error": _yes_no, "error_types": _error_types, "ai_right": _yes_no, "useful": _yes_no,
           "aligned": _yes_no, "seconds_on_item": _seconds}


def clean_answers(*, unit: Unit, hit: Hit, data: dict, stored: Label | None) -> tuple[dict, list[str]]:
    """One unit's raw answers as its label stores them, or what is wrong with them (empty when nothing is).

    Every question is optional, since answers arrive one at a time, but only the unit's task's questions are
    allowed, and "is the AI right?" only where the AI judgment is shown, where it and "has an error?" are one
    decision: either gives the other, and a pair that contradicts itself is refused (annotation.ai_agreement).
    Error types follow the error answer, given now or stored before: "no error" clears them, choosing a type says
    the sentence has an error. Names that are not questions are left out (the callers refuse them first).
    """
    values, problems = {}, []
    for name, read in READERS.items():
        if name not in data:
            continue
        try:
            if data[name] is None:
                raise _Refused("This field may not be null.")
            values[name] = read(data[name])
        except _Refused as refused:
            problems += [f"{name}: {problem}" for problem in refused.problems]
    if problems:
        return {}, problems
    foreign = sorted(set(values) - TASK_QUESTIONS[unit.task] - {"seconds_on_item"})
    if foreign:
        return {}, [f"{', '.join(foreign)} is not a question of {Task(unit.task).label.lower()}."]
    shows_ai = "ai_right" in unit.question_fields(hit)
    if "ai_right" in values and not shows_ai:
        return {}, ["ai_right: This item does not show an AI judgment to agree with."]
    # One decision, not two (annotation.ai_agreement): a pair that contradicts itself is refused, and either half
    # alone gives the other, over what was stored before.
    if shows_ai and "has_error" in values and "ai_right" in values:
        if problem := contradiction(unit.ai_category, has_error=values["has_error"], ai_right=values["ai_right"]):
            return {}, [f"ai_right: {problem}"]
    elif shows_ai and "ai_right" in values:
        values["has_error"] = has_error_for(unit.ai_category, values["ai_right"])
    if "error_types" in values:
        chosen = set(values["error_types"])
        values["error_types"] = [value for value in ErrorType.values if value in chosen]
    has_error = values["has_error"] if "has_error" in values else getattr(stored, "has_error", None)
    if "has_error" in values and has_error is False:
        values["error_types"] = []  # "No error" wins over types left ticked from an earlier answer.
    elif values.get("error_types") and has_error is None:
        values["has_error"] = True  # Choosing an error type says the sentence has an error.
    elif values.get("error_types") and has_error is False:
        return {}, ["error_types: The sentence is marked as having no error; answer yes first to choose types."]
    if shows_ai and "has_error" in values:
        values["ai_right"] = ai_right_for(unit.ai_category, values["has_error"])
    return values, []


def save_answers(*, assignment: Assignment, answers: dict[Unit, dict]) -> dict[int, Label]:
    """Upsert the labels of `answers` (unit -> raw answers) for `assignment`; returns them by unit id.

    The time on an item is clamped to the time since the reservation (and an hour) and never decreases.
    """
    try:
        return _save_answers(assignment, answers)
    except ReservationLapsed:
        renew_reservation(assignment)
        return _save_answers(assignment, answers)


def _save_answers(assignment: Assignment, answers: dict[Unit, dict]) -> dict[int, Label]:
    with transaction.atomic():
        locked = lock_open_assignment(assignment)
        hit = locked.hit
        # Only the answered units' labels: a page saves one item at a time, and a KA HIT has hundreds.
        labels = assignment_labels(locked.pk, [unit.pk for unit in answers])
        valid: dict[Unit, dict] = {}
        errors: dict[str, list[str]] = {}
        for unit, data in answers.items():
            if unit.hit_id != hit.pk:
                errors.setdefault(describe_unit(unit), []).append("This item belongs to another HIT.")
                continue
            values, problems = clean_answers(unit=unit, hit=hit, data=data, stored=labels.get(unit.pk))
            if problems:
                errors.setdefault(describe_unit(unit), []).extend(problems)
            else:
                valid[unit] = values
        if errors:
            raise InvalidAnswers(errors)
        now = timezone.now()
        ceiling = min(MAX_SECONDS_ON_ITEM, (now - locked.reserved_at).total_seconds() + 1)
        created, updated = [], []
        for unit, values in valid.items():
            label = labels.get(unit.pk)
            if label is None:
                label = Label(assignment=locked, unit=unit, annotator_id=locked.annotator_id)
                created.append(label)
            else:
                updated.append(label)
            seconds = values.pop("seconds_on_item", None)
            if seconds is not None:
                label.seconds_on_item = max(label.seconds_on_item, min(seconds, ceiling))
            for name, value in values.items():
                setattr(label, name, value)
            label.updated_at = now
            labels[unit.pk] = label
        Label.objects.bulk_create(created)
        if len(updated) == 1:  # The usual case, one answer from the page: a plain UPDATE.
            updated[0].save(update_fields=[*ANSWER_FIELDS, "updated_at"])
        elif updated:
            Label.objects.bulk_update(updated, [*ANSWER_FIELDS, "updated_at"])
        return labels
