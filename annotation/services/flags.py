"""An annotator's flag on an item of their open HIT: a comment for the manager that the item is broken or unclear."""

from django.db import transaction

from corpus.storable_text import unstorable

from ..models import Assignment, ItemFlag, Unit
from ..wording import describe_unit
from .answers import InvalidAnswers
from .assignment import ReservationLapsed, lock_open_assignment, renew_reservation


def read_flags(data, units: list[Unit]) -> dict[Unit, str]:
    """The flags a plain form carries: `u<position>-flag` fields, one per item (blank: no flag)."""
    by_position = {unit.position: unit for unit in units}
    return {by_position[position]: data.get(f"u{position}-flag", "") for position in by_position
            if f"u{position}-flag" in data}


def save_flags(*, assignment: Assignment, flags: dict[Unit, str]) -> None:
    """Bring the flags in line with a plain form's: only the items whose comment changed are written."""
    stored = dict(ItemFlag.objects.filter(assignment=assignment).values_list("unit_id", "comment"))
    for unit, comment in flags.items():
        if comment.strip() != stored.get(unit.pk, ""):
            flag_item(assignment=assignment, unit=unit, comment=comment)


def flag_item(*, assignment: Assignment, unit: Unit, comment: str) -> ItemFlag | None:
    """Store or change the flag on `unit`, or withdraw it when `comment` is blank; returns the flag (None when
    withdrawn). Only while the HIT is the annotator's open work: a submitted HIT is not changed afterwards."""
    comment = comment.strip()
    problems = []
    if len(comment) > ItemFlag.MAX_COMMENT:
        problems.append(f"The comment is {len(comment):,} characters; the limit is {ItemFlag.MAX_COMMENT:,}.")
    elif problem := unstorable(comment):
        problems.append(f"The comment {problem}.")
    if unit.hit_id != assignment.hit_id:
        problems.append("This item belongs to another HIT.")
    if problems:
        raise InvalidAnswers({describe_unit(unit): problems})
    try:
        return _flag(assignment, unit, comment)
    except ReservationLapsed:
        renew_reservation(assignment)
        return _flag(assignment, unit, comment)


def _flag(assignment: Assignment, unit: Unit, comment: str) -> ItemFlag | None:
    with transaction.atomic():
        locked = lock_open_assignment(assignment)
        if not comment:
            ItemFlag.objects.filter(assignment=locked, unit=unit).delete()
            return None
        flag, _ = ItemFlag.objects.update_or_create(assignment=locked, unit=unit, defaults={"comment": comment})
        return flag
