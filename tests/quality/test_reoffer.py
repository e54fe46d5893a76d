"""A HIT whose places went to submissions that failed their attention checks is offered again until N of its
submissions count (paper 3.4: N independent annotators per unit; G.3), to annotators who have not had
it; a manager's override that flips a grade takes the place again or frees it."""

import random

import pytest

from annotation.models import Assignment, Grade, Hit, Label, Task
from annotation.quality.selectors import counted_labels
from annotation.selectors import available_hits, task_progress
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from annotation.services.grades import grade_override
from corpus.models import KeyFact, Project
from tests.quality import scripted
from tests.quality.scripted import contrary
from tests.work import build_all, crowd_annotator, import_generated, may_create_projects

pytestmark = pytest.mark.django_db


def submit(annotator, project, strategy, task=Task.FACT_VERIFICATION, rng=None) -> Assignment:
    assignment = reserve_next_hit(annotator, project, task, confirmed=True)
    assert assignment is not None
    save_answers(assignment=assignment, answers=scripted.answers(assignment, strategy, rng or random.Random(0)))
    submit_assignment(assignment=assignment)
    return assignment


def counted_per_real_unit(hit: Hit) -> set[int]:
    real = hit.units.filter(attention_check__isnull=True)
    return {counted_labels(Label.objects.filter(unit=unit)).count() for unit in real}


def fv_total(project) -> dict:
    return next(entry for entry in task_progress(project) if entry["task"] == Task.FACT_VERIFICATION)["total"]


@pytest.fixture
def first_hit(big_project) -> Hit:
    return Hit.objects.filter(project=big_project, task=Task.FACT_VERIFICATION).order_by("position", "pk").first()


def test_a_failed_submission_gives_its_place_to_a_fourth_annotator(big_project, first_hit):
    keen, sloppy, steady, fourth = (crowd_annotator(name) for name in ("keen", "sloppy", "steady", "fourth"))
    done = [submit(keen, big_project, scripted.careful), submit(sloppy, big_project, contrary),
            submit(steady, big_project, scripted.careful)]
    assert {assignment.hit for assignment in done} == {first_hit}  # HITs go out in order: all three got the first
    assert [Grade.objects.get(assignment=a).passed for a in done] == [True, False, True]
    assert counted_per_real_unit(first_hit) == {2}
    # Three submissions, two that count: the HIT is not complete and is offered again.
    assert fv_total(big_project)["hits_done"] == 0
    assert (fv_total(big_project)["submissions"], fv_total(big_project)["failed"]) == (2, 1)
    assert first_hit in available_hits(fourth, big_project, Task.FACT_VERIFICATION)

    again = submit(fourth, big_project, scripted.careful)
    assert again.hit == first_hit and again.grade.passed
    assert counted_per_real_unit(first_hit) == {big_project.annotators_per_unit}
    total = fv_total(big_project)
    assert (total["hits_done"], total["submissions"], total["failed"]) == (1, 3, 1)
    # The failed labels are kept, apart.
    assert Label.objects.filter(assignment=done[1]).exists()
    # Now N submissions count: nobody else gets it.
    latecomer = crowd_annotator("latecomer")
    assert first_hit not in available_hits(latecomer, big_project, Task.FACT_VERIFICATION)
    assert reserve_next_hit(latecomer, big_project, Task.FACT_VERIFICATION, confirmed=True).hit != first_hit


def test_the_annotator_who_failed_never_gets_the_hit_again(big_project, first_hit):
    sloppy = crowd_annotator("sloppy")
    failed = submit(sloppy, big_project, contrary)
    assert failed.hit == first_hit and not failed.grade.passed
    assert first_hit not in available_hits(sloppy, big_project, Task.FACT_VERIFICATION)
    assert first_hit in available_hits(crowd_annotator("other"), big_project, Task.FACT_VERIFICATION)
    seen = []
    for _ in range(4):
        assignment = reserve_next_hit(sloppy, big_project, Task.FACT_VERIFICATION, confirmed=True)
        seen.append(assignment.hit)
        save_answers(assignment=assignment, answers=scripted.answers(assignment, scripted.careful,
                                                                     random.Random(1)))
        submit_assignment(assignment=assignment)
    assert first_hit not in seen and len(set(seen)) == 4
    assert Assignment.objects.filter(hit=first_hit, annotator=sloppy).count() == 1


def test_a_manager_override_takes_the_place_again_or_frees_it(big_project, first_hit, django_user_model):
    manager = django_user_model.objects.create_user("overrider")
    keen, sloppy, steady = (crowd_annotator(name) for name in ("keen", "sloppy", "steady"))
    submit(keen, big_project, scripted.careful)
    failed = submit(sloppy, big_project, contrary)
    passed = submit(steady, big_project, scripted.careful)
    waiting = crowd_annotator("waiting")
    assert first_hit in available_hits(waiting, big_project, Task.FACT_VERIFICATION)

    # Failed, then overridden to pass: its labels count again, and so does its place.
    grade_override(grade=failed.grade, passed=True, reason="The check was ambiguous.", user=manager)
    assert first_hit not in available_hits(waiting, big_project, Task.FACT_VERIFICATION)
    assert counted_per_real_unit(first_hit) == {3}
    assert fv_total(big_project)["hits_done"] == 1

    # Passed, then overridden to fail: its place is free again, for somebody who has not had the HIT.
    grade_override(grade=Grade.objects.get(assignment=passed), passed=False, reason="Copied answers.", user=manager)
    assert fv_total(big_project)["hits_done"] == 0
    assert first_hit not in available_hits(steady, big_project, Task.FACT_VERIFICATION)
    assert reserve_next_hit(waiting, big_project, Task.FACT_VERIFICATION, confirmed=True).hit == first_hit


def test_key_fact_validation_waits_for_n_counted_submissions(db):
    project = import_generated(Project.objects.create(slug="kv-wait", name="KV"), documents=2, summarizers=1,
                               sentences=2)
    project.attention_check_rate = 0.5
    project.save(update_fields=["attention_check_rate"])
    build_all(project)
    document = Hit.objects.filter(project=project, task=Task.KEYFACT_VALIDATION).order_by("position").first().document
    candidates = KeyFact.objects.filter(document=document)
    first = [submit(crowd_annotator(name), project, strategy, Task.KEYFACT_VALIDATION)
             for name, strategy in (("a", scripted.careful), ("b", contrary), ("c", scripted.careful))]
    assert {a.hit.document for a in first} == {document}
    # Three submissions, one failed: not settled, no KA work yet.
    assert set(candidates.values_list("status", flat=True)) == {KeyFact.Status.CANDIDATE}
    assert not Hit.objects.filter(document=document, task=Task.KEYFACT_ALIGNMENT).exists()
    fourth = submit(crowd_annotator("d"), project, scripted.careful, Task.KEYFACT_VALIDATION)
    assert fourth.hit == first[0].hit
    assert set(candidates.values_list("status", flat=True)) == {KeyFact.Status.ACCEPTED}
    assert Hit.objects.filter(document=document, task=Task.KEYFACT_ALIGNMENT).exists()


def test_an_override_to_pass_completes_key_fact_validation(db, django_user_model):
    project = import_generated(Project.objects.create(slug="kv-override", name="KV"), documents=2, summarizers=1,
                               sentences=2)
    project.attention_check_rate = 0.5
    project.save(update_fields=["attention_check_rate"])
    build_all(project)
    done = [submit(crowd_annotator(name), project, strategy, Task.KEYFACT_VALIDATION)
            for name, strategy in (("a", scripted.careful), ("b", contrary), ("c", scripted.careful))]
    document = done[0].hit.document
    assert not Hit.objects.filter(document=document, task=Task.KEYFACT_ALIGNMENT).exists()
    grade_override(grade=done[1].grade, passed=True, reason="Ambiguous key-fact.",
                   user=django_user_model.objects.create_user("overrider"))
    assert Hit.objects.filter(document=document, task=Task.KEYFACT_ALIGNMENT).exists()
    assert set(KeyFact.objects.filter(document=document).values_list("status", flat=True)) == {
        KeyFact.Status.ACCEPTED}


def test_the_hit_list_counts_only_the_submissions_that_count(client, big_project, first_hit, django_user_model):
    from django.urls import reverse

    from corpus.models import Membership

    submit(crowd_annotator("keen"), big_project, scripted.careful)
    submit(crowd_annotator("sloppy"), big_project, contrary)
    manager = may_create_projects(django_user_model.objects.create_user("lead", password="pw-lead-12345"))
    Membership.objects.create(project=big_project, user=manager, role=Membership.Role.MANAGER)
    client.force_login(manager)
    html = client.get(reverse("hit_list", args=[big_project.slug]) + "?task=fv").content.decode()
    row = html[html.index(str(first_hit.public_id)):]
    row = row[:row.index("</tr>")]
    assert f"1 / {big_project.annotators_per_unit}" in row and "+ 1 failed" in row
