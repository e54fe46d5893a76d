"""Scripted annotators work through HITs (paper 3.4, G.2-G.3): the careful one passes; the
random one and the one who always agrees with the AI are caught, blocked after K failures, and their labels do not
count."""

import random
import re

import pytest

from annotation.models import Annotator, Assignment, Decision, Grade, Label
from annotation.quality.policy import apply_policy, bonuses_earned
from annotation.quality.selectors import counted_labels
from annotation.services.answers import save_answers
from annotation.services.assignment import WorkRefused, reserve_next_hit, submit_assignment
from tests.quality import scripted
from tests.work import annotator_for, crowd_annotator, qualify, status_of

pytestmark = pytest.mark.django_db


def work(annotator, project, strategy, rng, task="fv", limit=12) -> list[Assignment]:
    """Take and submit HITs until none is left, `limit` is reached or the annotator is refused."""
    done = []
    for _ in range(limit):
        try:
            assignment = reserve_next_hit(annotator, project, task, confirmed=True)
        except WorkRefused:
            break
        if assignment is None:
            break
        save_answers(assignment=assignment, answers=scripted.answers(assignment, strategy, rng))
        submit_assignment(assignment=assignment)
        done.append(assignment)
    return done


def test_careful_work_passes_and_cheaters_are_caught_blocked_and_not_counted(big_project):
    rng = random.Random(5)
    # The cheater who answers every check wrongly, not a random clicker: where a random clicker's third failure
    # falls depends on where each build puts its checks, and in about one build in seven it falls after 12 HITs.
    careful, clicker, follower = (crowd_annotator(name) for name in ("careful", "contrary", "follower"))
    careful_done = work(careful, big_project, scripted.careful, rng)
    clicker_done = work(clicker, big_project, scripted.contrary, rng)
    follower_done = work(follower, big_project, scripted.agrees_with_ai, rng)

    assert len(careful_done) == 12
    assert all(Grade.objects.get(assignment=a).passed for a in careful_done)
    for cheater, done in ((clicker, clicker_done), (follower, follower_done)):
        grades = [Grade.objects.get(assignment=a) for a in done]
        assert [g.passed for g in grades].count(False) == 3  # Blocked at the third failure, no later HIT.
        assert status_of(cheater, big_project) == Annotator.Status.BLOCKED
        with pytest.raises(WorkRefused):
            reserve_next_hit(cheater, big_project, "fv", confirmed=True)
        assert Decision.objects.filter(idempotency_key=f"block:{cheater.public_id}:{big_project.slug}").count() == 1
        for grade in grades:
            key = ("approve:" if grade.passed else "reject:") + str(grade.assignment.public_id)
            assert Decision.objects.get(idempotency_key=key).annotator == cheater
        failed = [g.assignment for g in grades if not g.passed]
        # Their failed labels are kept, but excluded from what counts.
        assert Label.objects.filter(assignment__in=failed).exists()
        assert not counted_labels().filter(assignment__in=failed).exists()
    assert status_of(careful, big_project) == Annotator.Status.ACTIVE
    assert Decision.objects.filter(annotator=careful, kind="approve").count() == 12
    assert not Decision.objects.filter(annotator=careful).exclude(kind="approve").exists()
    # What counts: the careful annotator's real units, never a check.
    counted = counted_labels(Label.objects.filter(annotator=careful))
    assert counted.count() == Label.objects.filter(annotator=careful, unit__attention_check__isnull=True).count()
    assert not counted_labels().filter(unit__attention_check__isnull=False).exists()


def test_the_follower_is_caught_by_the_checks_where_the_ai_is_wrong(big_project):
    follower = crowd_annotator("follower")
    done = work(follower, big_project, scripted.agrees_with_ai, random.Random(1))
    failed = [a.grade for a in done if not Grade.objects.get(assignment=a).passed]
    assert failed
    for grade in failed:
        # With the offline labeler every foreign sentence is flagged: the AI is wrong on a name exchanged.
        assert re.search(r"Sentence \d+ names [A-Z][a-z]+( [A-Z][a-z]+)? where the document has [A-Z][a-z]+"
                         r"( [A-Z][a-z]+)?, so it has an error; you answered 'no error'\.", grade.reason), grade.reason
        check = grade.assignment.hit.units.get(position=int(re.search(r"Sentence (\d+)", grade.reason)[1]) - 1)
        assert check.attention_check.kind == "fv_name_swapped"
        assert check.ai_category == "no_error" and check.text not in check.hit.document.text


def test_a_careful_annotator_passes_through_the_pages_and_a_careless_account_is_blocked(big_project, client,
                                                                                        django_user_model):
    from corpus.models import Membership

    rng = random.Random(2)
    # The careless account misses every check: with answers at random, whether it misses three in eight HITs would
    # turn on where the checks fell, which each build seeds afresh.
    for name, strategy in (("carla", scripted.careful), ("carl", scripted.contrary)):
        user = django_user_model.objects.create_user(name, password="pw-" + name)
        Membership.objects.create(project=big_project, user=user, role=Membership.Role.ANNOTATOR)
        client.force_login(user)
        for _ in range(8):
            response = client.post(f"/work/{big_project.slug}/fv/next/")
            if "/work/hits/" not in response.get("Location", ""):
                break
            assignment = Assignment.objects.get(public_id=response["Location"].rstrip("/").split("/")[-1])
            assert client.get(response["Location"]).status_code == 200
            response = client.post(f"/work/hits/{assignment.public_id}/submit/",
                                   scripted.form_data(assignment, strategy, rng))
            assert response.status_code == 302
        annotator = annotator_for(user)
        grades = Grade.objects.filter(assignment__annotator=annotator)
        if strategy is scripted.careful:
            assert grades.count() == 8 and all(g.passed for g in grades)
            assert status_of(annotator, big_project) == Annotator.Status.ACTIVE
        else:
            assert [g.passed for g in grades].count(False) == 3
            assert status_of(annotator, big_project) == Annotator.Status.BLOCKED
            response = client.post(f"/work/{big_project.slug}/fv/next/", follow=True)
            assert b"blocked" in response.content
        # In-house accounts are not paid through a provider: no approve, reject, bonus or block decisions.
        assert not Decision.objects.filter(annotator=annotator).exists()


def test_decisions_are_written_once_however_often_the_policy_runs(big_project):
    clicker = crowd_annotator("random")
    done = work(clicker, big_project, scripted.at_random, random.Random(3))
    before = Decision.objects.count()
    for assignment in done:
        apply_policy(assignment.grade)
        apply_policy(assignment.grade)
    assert Decision.objects.count() == before
    keys = list(Decision.objects.values_list("idempotency_key", flat=True))
    assert len(keys) == len(set(keys))


def test_bonuses_follow_runs_of_consecutive_good_submissions():
    assert bonuses_earned([True] * 5, 2) == 2
    assert bonuses_earned([True, False, True, True, True], 2) == 1
    assert bonuses_earned([True, True, False, True, True], 2) == 2
    assert bonuses_earned([True] * 3, 0) == 0


def test_a_bonus_is_decided_for_every_run_and_never_twice(big_project):
    big_project.bonus_every_hits = 2
    big_project.save()
    careful = crowd_annotator("careful")
    work(careful, big_project, scripted.careful, random.Random(4), limit=5)
    bonuses = Decision.objects.filter(annotator=careful, kind="bonus").order_by("idempotency_key")
    assert [d.idempotency_key for d in bonuses] == [f"bonus:{careful.public_id}:{big_project.slug}:{n}"
                                                    for n in (1, 2)]
    assert all(d.amount_usd == big_project.bonus_usd for d in bonuses)


def test_a_low_pass_rate_pauses_before_blocking(big_project):
    big_project.block_after_failures = 50
    big_project.pass_rate_window = 4
    big_project.save()
    # Every check answered wrongly: the pass rate is 0 whatever the build (a random clicker stayed active in 3 builds
    # of 20).
    clicker = crowd_annotator("contrary")
    done = work(clicker, big_project, scripted.contrary, random.Random(6))
    assert status_of(clicker, big_project) == Annotator.Status.PAUSED
    assert len(done) >= 4
    assert not Decision.objects.filter(annotator=clicker, kind="block").exists()


def test_failed_crowd_work_is_approved_but_not_counted_when_the_project_does_not_reject(big_project):
    big_project.reject_failed = False
    big_project.save()
    clicker = crowd_annotator("contrary")
    done = work(clicker, big_project, scripted.contrary, random.Random(7), limit=2)
    assert not Decision.objects.filter(kind="reject").exists()
    assert Decision.objects.filter(kind="approve", annotator=clicker).count() == len(done) == 2
    failed = [a for a in done if not a.grade.passed]
    assert len(failed) == 2 and not counted_labels().filter(assignment__in=failed).exists()


def test_an_unqualified_crowd_worker_gets_no_hit(big_project):
    newcomer = Annotator.objects.create(provider=Annotator.Provider.PROLIFIC, external_id="new")
    with pytest.raises(WorkRefused, match="screening test"):
        reserve_next_hit(newcomer, big_project, "fv", confirmed=True)
    qualify(newcomer, big_project)
    assert reserve_next_hit(newcomer, big_project, "fv", confirmed=True) is not None
