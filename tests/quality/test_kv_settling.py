"""Key-fact validation is settled by the labels that count: a submission that failed its checks does not vote."""

import random

import pytest

from annotation.models import Grade, KeyFact, Task
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from tests.quality import scripted
from tests.work import crowd_annotator

pytestmark = pytest.mark.django_db


def doubter(unit, asked, rng):
    """Careful on the checks, but finds the document's first candidate key-fact not useful."""
    answer = scripted.careful(unit, asked, rng)
    if unit.keyfact_id is not None and unit.keyfact.index == 0:
        answer = {"useful": False}
    return answer


def test_a_failed_submission_does_not_vote_on_key_facts(checked_project):
    project = checked_project
    rng = random.Random(1)
    people = [(crowd_annotator("keen"), scripted.careful), (crowd_annotator("doubter"), doubter),
              (crowd_annotator("yes-to-all"), scripted.agrees_with_ai)]
    hit = None
    for annotator, strategy in people:
        assignment = reserve_next_hit(annotator, project, Task.KEYFACT_VALIDATION)
        assert hit is None or assignment.hit == hit  # the same KV HIT for all three
        hit = assignment.hit
        save_answers(assignment=assignment, answers=scripted.answers(assignment, strategy, rng))
        submit_assignment(assignment=assignment)

    grades = {grade.assignment.annotator.external_id: grade.passed for grade in Grade.objects.all()}
    assert grades == {"keen": True, "doubter": True, "yes-to-all": False}
    first = KeyFact.objects.get(document=hit.document, index=0)
    # Counted votes: keen yes, doubter no -> a tie, which rejects. With the failed "yes" it would have been 2 of 3.
    assert first.status == KeyFact.Status.REJECTED
    others = KeyFact.objects.filter(document=hit.document, index__gt=0).exclude(origin=KeyFact.Origin.HUMAN)
    assert others.exists() and all(fact.status == KeyFact.Status.ACCEPTED for fact in others)
