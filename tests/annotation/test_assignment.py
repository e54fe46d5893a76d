"""Reservations, expiry, returns, answers and submissions (the services behind the pages and the API)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, Hit, Label
from annotation.selectors import available_hits
from annotation.services.answers import InvalidAnswers, save_answers
from annotation.services.assignment import (
    MissingAnswers,
    WorkRefused,
    release_expired,
    reserve_next_hit,
    return_assignment,
    submit_assignment,
)
from annotation.tasks import release_expired as release_expired_task
from tests.work import answers_for, complete, crowd_annotator, set_status

pytestmark = pytest.mark.django_db


def _expire(assignment):
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


def test_it_gives_each_hit_to_at_most_n_annotators(corpus):
    workers = [crowd_annotator(f"w{i}") for i in range(5)]
    first_hit = Hit.objects.filter(project=corpus, task="fv").order_by("position").first()
    got = [reserve_next_hit(worker, corpus, "fv", confirmed=True).hit for worker in workers]
    assert got[:3] == [first_hit] * 3
    assert got[3] == got[4] != first_hit


def test_it_hands_back_the_open_reservation_instead_of_a_second_one(corpus):
    worker = crowd_annotator("w")
    first = reserve_next_hit(worker, corpus, "fv", confirmed=True)
    assert reserve_next_hit(worker, corpus, "fv", confirmed=True) == first
    assert Assignment.objects.count() == 1
    # One open HIT per task: a KV reservation is separate.
    assert reserve_next_hit(worker, corpus, "kv", confirmed=True).hit.task == "kv"


def test_it_never_gives_an_annotator_a_hit_they_submitted_or_returned(corpus):
    worker = crowd_annotator("w")
    seen = []
    while (assignment := reserve_next_hit(worker, corpus, "fv", confirmed=True)) is not None:
        seen.append(assignment.hit_id)
        if len(seen) % 2:
            complete(assignment)
        else:
            return_assignment(assignment=assignment)
    assert len(seen) == len(set(seen)) == Hit.objects.filter(task="fv").count()
    assert available_hits(worker, corpus, "fv").count() == 0


def test_an_expired_reservation_returns_to_the_pool(corpus):
    corpus.annotators_per_unit = 1
    corpus.save()
    early, late = crowd_annotator("early"), crowd_annotator("late")
    taken = reserve_next_hit(early, corpus, "kv", confirmed=True)
    assert reserve_next_hit(late, corpus, "kv", confirmed=True) is None  # the only KV HIT is taken
    _expire(taken)
    assert reserve_next_hit(late, corpus, "kv", confirmed=True).hit == taken.hit
    # The periodic task marks what lapsed (the late annotator's request only released their own).
    assert release_expired_task.delay().get() == 1
    assert release_expired_task.delay().get() == 0
    _expire(Assignment.objects.get(annotator=late))
    assert release_expired_task.delay().get() == 1
    assert set(Assignment.objects.values_list("status", flat=True)) == {"expired"}


def test_an_annotator_gets_their_own_expired_hit_back_with_its_answers(corpus):
    worker = crowd_annotator("w")
    assignment = reserve_next_hit(worker, corpus, "kv", confirmed=True)
    unit = assignment.hit.units.first()
    save_answers(assignment=assignment, answers={unit: {"useful": True}})
    _expire(assignment)
    assert release_expired(now=timezone.now()) == 1
    again = reserve_next_hit(worker, corpus, "kv", confirmed=True)
    assert again.pk == assignment.pk and again.status == "reserved" and again.expires_at > timezone.now()
    assert again.labels.get().useful is True


def test_answering_after_expiry_renews_the_reservation_while_a_place_is_free(corpus):
    corpus.annotators_per_unit = 1
    corpus.save()
    slow, quick = crowd_annotator("slow"), crowd_annotator("quick")
    assignment = reserve_next_hit(slow, corpus, "kv", confirmed=True)
    unit = assignment.hit.units.first()
    _expire(assignment)
    save_answers(assignment=assignment, answers={unit: {"useful": False}})
    assignment.refresh_from_db()
    assert assignment.status == "reserved" and assignment.expires_at > timezone.now()
    # Once the place has gone to somebody else, the late answer is refused and nothing is written.
    _expire(assignment)
    assert reserve_next_hit(quick, corpus, "kv", confirmed=True).hit == assignment.hit
    with pytest.raises(WorkRefused, match="went to another annotator"):
        save_answers(assignment=assignment, answers={unit: {"useful": True}})
    assert Label.objects.get(assignment=assignment).useful is False
    assert Assignment.objects.get(pk=assignment.pk).has_expired()


def test_paused_and_blocked_annotators_get_no_work(corpus, other_project):
    for status in ("paused", "blocked"):
        worker = crowd_annotator(status)
        set_status(worker, corpus, status)
        with pytest.raises(WorkRefused, match=status):
            reserve_next_hit(worker, corpus, "fv", confirmed=True)
    assert not Assignment.objects.exists()
    # A status is the project's: blocked in another project, an annotator still works here.
    elsewhere = crowd_annotator("elsewhere")
    set_status(elsewhere, other_project, "blocked")
    assert reserve_next_hit(elsewhere, corpus, "fv", confirmed=True) is not None


def test_a_submit_with_missing_answers_is_refused_listing_them(corpus):
    assignment = reserve_next_hit(crowd_annotator("w"), corpus, "fv", confirmed=True)
    first, second = assignment.hit.units.all()[:2]
    save_answers(assignment=assignment, answers={first: {"has_error": True}})
    with pytest.raises(MissingAnswers) as refusal:
        submit_assignment(assignment=assignment)
    message = str(refusal.value)
    assert "sentence 1: which error types?" in message  # "Is the AI right?" follows from the error answer.
    assert "sentence 2: is the AI right?, does it have a factual error?" in message
    assert Assignment.objects.get(pk=assignment.pk).status == "reserved"


def test_submitting_twice_submits_once(corpus):
    assignment = reserve_next_hit(crowd_annotator("w"), corpus, "fv", confirmed=True)
    first = complete(assignment)
    submitted_at = Assignment.objects.get(pk=assignment.pk).submitted_at
    second = submit_assignment(assignment=assignment, submission_key="other")
    assert (first.already_submitted, second.already_submitted) == (False, True)
    assert Assignment.objects.get(pk=assignment.pk).submitted_at == submitted_at
    with pytest.raises(WorkRefused, match="already submitted"):
        save_answers(assignment=assignment, answers={assignment.hit.units.first(): {"has_error": True}})


def test_bad_answers_are_refused_and_nothing_is_written(corpus):
    assignment = reserve_next_hit(crowd_annotator("w"), corpus, "fv", confirmed=True)
    first, second = assignment.hit.units.all()[:2]
    with pytest.raises(InvalidAnswers) as invalid:
        save_answers(assignment=assignment, answers={first: {"has_error": True},
                                                     second: {"error_types": ["entity", "made_up"]}})
    assert "sentence 2" in invalid.value.errors and "made_up" in str(invalid.value)
    for bad in ({"has_error": "maybe"}, {"useful": True}, {"seconds_on_item": -1}):
        with pytest.raises(InvalidAnswers):
            save_answers(assignment=assignment, answers={first: bad})
    assert not Label.objects.exists()


def test_ai_right_is_refused_when_the_ai_judgment_is_not_shown(corpus):
    corpus.assistance = "highlights"
    corpus.save()
    assignment = reserve_next_hit(crowd_annotator("w"), corpus, "fv", confirmed=True)
    unit = assignment.hit.units.first()
    with pytest.raises(InvalidAnswers, match="does not show an AI judgment"):
        save_answers(assignment=assignment, answers={unit: {"ai_right": True}})
    save_answers(assignment=assignment, answers={unit: answers_for(unit)})
    assert Label.objects.get().ai_right is None


def test_error_types_follow_the_error_answer(corpus):
    assignment = reserve_next_hit(crowd_annotator("w"), corpus, "fv", confirmed=True)
    unit = assignment.hit.units.first()
    labels = save_answers(assignment=assignment, answers={unit: {"error_types": ["out_of_article", "entity"]}})
    assert (labels[unit.pk].has_error, labels[unit.pk].error_types) == (True, ["entity", "out_of_article"])
    labels = save_answers(assignment=assignment, answers={unit: {"has_error": False, "error_types": ["entity"]}})
    assert labels[unit.pk].error_types == []
    with pytest.raises(InvalidAnswers, match="no error"):
        save_answers(assignment=assignment, answers={unit: {"error_types": ["entity"]}})


def test_time_on_an_item_is_clamped_and_never_decreases(corpus):
    assignment = reserve_next_hit(crowd_annotator("w"), corpus, "kv", confirmed=True)
    Assignment.objects.filter(pk=assignment.pk).update(reserved_at=timezone.now() - timedelta(seconds=30))
    assignment.refresh_from_db()
    unit = assignment.hit.units.first()
    label = save_answers(assignment=assignment, answers={unit: {"seconds_on_item": 12.5}})[unit.pk]
    assert label.seconds_on_item == 12.5
    label = save_answers(assignment=assignment, answers={unit: {"seconds_on_item": 3}})[unit.pk]
    assert label.seconds_on_item == 12.5
    label = save_answers(assignment=assignment, answers={unit: {"seconds_on_item": 99999}})[unit.pk]
    assert 30 <= label.seconds_on_item < 40


def test_a_returned_hit_cannot_be_changed_or_submitted(corpus):
    assignment = reserve_next_hit(crowd_annotator("w"), corpus, "kv", confirmed=True)
    return_assignment(assignment=assignment)
    with pytest.raises(WorkRefused, match="returned"):
        submit_assignment(assignment=assignment)
    complete_other = reserve_next_hit(crowd_annotator("x"), corpus, "kv", confirmed=True)
    assert complete_other.hit == assignment.hit
