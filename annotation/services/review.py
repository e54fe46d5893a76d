"""Review: a reviewer settles a unit the annotators disagree on (an adjudicated label, kept apart from theirs), and a
manager sends a HIT back for more labels."""

from django.db import transaction
from django.db.models import F

from corpus.storable_text import unstorable

from ..models import Adjudication, AttentionCheck, ErrorType, Hit, Task, Unit

QUESTION = {Task.FACT_VERIFICATION: "has_error", Task.KEYFACT_VALIDATION: "useful",
            Task.KEYFACT_ALIGNMENT: "aligned"}
MAX_REASON = 2000


class ReviewRefused(Exception):
    """The adjudication or the send-back cannot be made as asked; the message says why."""


def adjudicate(*, unit: Unit, reviewer, answer: str, error_types: list[str], reason: str) -> Adjudication:
    """Record (or replace) the adjudicated label of `unit`: `answer` "yes" or "no" to the unit's question, the
    error types when an FV sentence has an error, and why."""
    if AttentionCheck.objects.filter(unit=unit).exists():
        raise ReviewRefused("An attention check is not reviewed: its answer is known.")
    if answer not in ("yes", "no"):
        raise ReviewRefused("Choose yes or no.")
    value = answer == "yes"
    types = list(dict.fromkeys(error_types))
    if unit.task == Task.FACT_VERIFICATION and value:
        if not types or not set(types) <= set(ErrorType.values):
            raise ReviewRefused(f"Name the error type(s): {', '.join(ErrorType.values)}.")
    else:
        types = []
    reason = reason.strip()
    if not reason:
        raise ReviewRefused("Say why: the reason is kept with the adjudicated label.")
    if len(reason) > MAX_REASON:
        raise ReviewRefused(f"The reason is {len(reason):,} characters; the limit is {MAX_REASON:,}.")
    if problem := unstorable(reason):
        raise ReviewRefused(f"The reason {problem}.")
    fields = {"has_error": None, "error_types": types, "useful": None, "aligned": None, QUESTION[unit.task]: value}
    adjudication, _ = Adjudication.objects.update_or_create(unit=unit, defaults={
        **fields, "reviewer": reviewer, "reason": reason})
    return adjudication


def withdraw(*, unit: Unit) -> None:
    Adjudication.objects.filter(unit=unit).delete()


def send_back(*, hit: Hit) -> Hit:
    """One more place on the HIT, so each of its units gets one more label (from an annotator who has not had it)."""
    with transaction.atomic():
        Hit.lock(hit.pk)
        Hit.objects.filter(pk=hit.pk).update(extra_places=F("extra_places") + 1)
    hit.refresh_from_db(fields=["extra_places"])
    return hit
