"""Saving an annotator's answers: validated in full first, then written together, or not at all.

Pages send answers as form fields named `u<position>-<question>` (one item at a time from htmx, every item at once
from the plain form); the API sends one item as JSON. Both end in `save_answers`.
"""

import re

from django.db import transaction
from django.utils import timezone

from ..models import Assignment, Label, Unit
from ..serializers import MAX_SECONDS_ON_ITEM, AnswerSerializer
from .assignment import ReservationLapsed, describe_unit, lock_open_assignment, renew_reservation

ANSWER_FIELDS = ("has_error", "error_types", "ai_right", "useful", "aligned", "seconds_on_item")
FORM_FIELD = re.compile(r"^u(\d{1,6})-([a-z_]+)$")


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


def _problems(errors) -> list[str]:
    if isinstance(errors, dict):  # Field names, or the indices of a list's bad items.
        return [f"{name}: {problem}" if isinstance(name, str) and name != "non_field_errors" else problem
                for name, value in errors.items() for problem in _problems(value)]
    if isinstance(errors, list):
        return [problem for value in errors for problem in _problems(value)]
    return [str(errors)]


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
        labels = {label.unit_id: label for label in locked.labels.filter(unit_id__in=[unit.pk for unit in answers])}
        valid: dict[Unit, dict] = {}
        errors: dict[str, list[str]] = {}
        for unit, data in answers.items():
            if unit.hit_id != hit.pk:
                errors.setdefault(describe_unit(unit), []).append("This item belongs to another HIT.")
                continue
            serializer = AnswerSerializer(data=data, context={"unit": unit, "hit": hit,
                                                              "label": labels.get(unit.pk)})
            if serializer.is_valid():
                valid[unit] = serializer.validated_data
            else:
                errors.setdefault(describe_unit(unit), []).extend(_problems(serializer.errors))
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
