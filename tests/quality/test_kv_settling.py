"""Key-fact validation is settled by the labels that count: a submission that failed its checks neither completes
the validation (its place goes to another annotator) nor votes."""

import random

import pytest

from annotation.models import Grade, Task
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from corpus.models import KeyFact
from tests.quality import scripted
from tests.work import crowd_annotator

pytestmark = pytest.mark.django_db


def doubter(unit, asked, rng):
    """Careful on the checks, but finds the document's first candidate key-fact not useful."""
    answer = scripted.careful(unit, asked, rng)
    if unit.keyfact_id is not None and unit.keyfact.index == 0:
        answer = {"useful": False}
    return answer


def careless_doubter(unit, asked, rng):
    """Says every key-fact is useful, checks included (so fails), except the document's first candidate."""
    answer = scripted.agrees_with_ai(unit, asked, rng)
    if unit.keyfact_id is not None and unit.keyfact.index == 0:
        answer = {"useful": False}
    return answer


def test_a_failed_submission_does_not_vote_on_key_facts(checked_project):
    project = checked_project
    rng = random.Random(1)
    people = [(crowd_annotator("keen"), scripted.careful), (crowd_annotator("careless"), careless_doubter),
              (crowd_annotator("steady"), scripted.careful), (crowd_annotator("doubter"), doubter)]
    hit = None
    for annotator, strategy in people:
        assignment = reserve_next_hit(annotator, project, Task.KEYFACT_VALIDATION, confirmed=True)
        assert hit is None or assignment.hit == hit  # the same KV HIT for all four: the failed one's place is free
        hit = assignment.hit
        first = KeyFact.objects.get(document=hit.document, index=0)
        assert first.status == KeyFact.Status.CANDIDATE  # not settled before N submissions count
        save_answers(assignment=assignment, answers=scripted.answers(assignment, strategy, rng))
        submit_assignment(assignment=assignment)

    grades = {grade.assignment.annotator.external_id: grade.passed for grade in Grade.objects.all()}
    assert grades == {"keen": True, "careless": False, "steady": True, "doubter": True}
    first.refresh_from_db()
    # Counted votes: keen yes, steady yes, doubter no -> accepted. With the failed "no" it would have been a tie,
    # which rejects.
    assert first.status == KeyFact.Status.ACCEPTED
    others = KeyFact.objects.filter(document=hit.document, index__gt=0).exclude(origin=KeyFact.Origin.HUMAN)
    assert others.exists() and all(fact.status == KeyFact.Status.ACCEPTED for fact in others)
