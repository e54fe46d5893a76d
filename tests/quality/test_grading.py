"""Grading a submission's attention checks: per unit for FV and KV, per line for KA; the pass threshold."""

import pytest

from annotation.models import Assignment, AttentionCheck, Hit, Label
from annotation.quality.grading import grade_assignment
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.models import Project
from tests.quality.conftest import with_checks
from tests.work import add_assistance, crowd_annotator, import_small

pytestmark = pytest.mark.django_db


def label_all(assignment, answer):
    for unit in assignment.hit.units.select_related("attention_check"):
        check = getattr(unit, "attention_check", None)
        Label.objects.create(assignment=assignment, unit=unit, annotator=assignment.annotator,
                             **answer(unit, check))
    assignment.status = Assignment.Status.SUBMITTED
    assignment.save()


@pytest.fixture
def ka_project(db):
    project = import_small(Project.objects.create(slug="ka", name="KA"))
    add_assistance(project)
    with_checks(project, 0.9)
    build_hits(project, "ka")
    return project


def test_a_ka_line_is_one_check_and_only_the_paraphrased_cell_is_graded(ka_project):
    hit = max(Hit.objects.filter(project=ka_project, task="ka"),
              key=lambda h: h.units.filter(attention_check__isnull=False).count())
    lines = {(c.kind, c.unit.row if c.kind == "ka_fake_keyfact" else c.unit.column)
             for c in AttentionCheck.objects.filter(unit__hit=hit) if c.expected}
    assignment = reserve_next_hit(crowd_annotator("w"), ka_project, "ka", confirmed=True)
    while assignment.hit_id != hit.pk:
        assignment = reserve_next_hit(crowd_annotator(f"w{assignment.pk}"), ka_project, "ka", confirmed=True)

    label_all(assignment, lambda unit, check: {"aligned": check.expected.get("aligned", True) if check else False})
    grade = grade_assignment(assignment)
    assert (grade.passed, grade.checks_total, grade.checks_failed) == (True, len(lines), 0)

    # Wrong on every ungraded cell of a paraphrase column changes nothing; wrong on a graded one fails its line.
    Label.objects.filter(assignment=assignment, unit__attention_check__expected={}).update(aligned=True)
    assert grade_assignment(assignment).passed
    Label.objects.filter(assignment=assignment, unit__attention_check__isnull=False).exclude(
        unit__attention_check__expected={}).update(aligned=None)
    grade = grade_assignment(assignment)
    assert (grade.passed, grade.checks_failed) == (False, len(lines))
    assert "you answered 'no answer'" in grade.reason or "you answered" in grade.reason


def test_the_share_of_failed_checks_allowed_is_a_project_setting(db):
    project = import_small(Project.objects.create(slug="fv", name="FV"))
    add_assistance(project)
    with_checks(project, 0.5)
    build_hits(project, "fv")
    hit = max(Hit.objects.filter(project=project, task="fv"),
              key=lambda h: h.units.filter(attention_check__isnull=False).count())
    checks = list(AttentionCheck.objects.filter(unit__hit=hit).order_by("unit__position"))
    assert len(checks) >= 2
    annotator = crowd_annotator("w")
    assignment = Assignment.objects.create(hit=hit, annotator=annotator, expires_at=hit.created)
    wrong = checks[0].unit_id

    def answer(unit, check):
        if check is None:
            return {"has_error": False, "ai_right": True}
        if unit.pk == wrong:
            return {"has_error": False, "ai_right": not check.expected["ai_right"]}
        return {"has_error": True, "error_types": ["out_of_article"], "ai_right": check.expected["ai_right"]}

    label_all(assignment, answer)
    grade = grade_assignment(assignment)
    assert (grade.passed, grade.checks_total, grade.checks_failed) == (False, len(checks), 1)
    position = checks[0].unit.position + 1
    assert f"Sentence {position} was taken from another document and has an error; you answered 'no error'." \
        in grade.reason
    project.max_failed_check_share = 1 / len(checks)
    project.save()
    assignment.hit.project.refresh_from_db()
    assignment = Assignment.objects.select_related("hit__project").get(pk=assignment.pk)
    assert grade_assignment(assignment).passed
