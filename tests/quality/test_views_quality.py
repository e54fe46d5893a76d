"""The quality dashboard, one annotator's page, grade overrides (page and API): managers only; numbers checked on
hand-built data."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, AttentionCheck, Decision, Grade, Hit, Label, Unit
from annotation.quality.dashboard import project_quality
from annotation.quality.grading import grade_assignment
from annotation.quality.policy import apply_policy
from annotation.quality.selectors import counted_labels
from annotation.services.hits import build_hits
from tests.work import add_assistance, crowd_annotator, import_small, set_status, status_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


@pytest.fixture
def graded(project):
    """One FV HIT (two real sentences and an 'AI says correct' check) done by three crowd workers:
    A accepts the wrong AI judgment (fails), B and C pass.

            u0     u1     check (ai_right, has_error)   seconds
      A     yes    no     right, no   -> fails           1, 2, 1
      B     yes    yes    wrong, yes                     10, 20, 30
      C     yes    no     wrong, yes                     0 (not measured), 5, 7
    """
    import_small(project)
    add_assistance(project)
    build_hits(project, "fv")
    hit = Hit.objects.filter(project=project, task="fv", summary__model="m-good",
                             document__uid="t-news-1").get()
    u0, u1 = hit.units.order_by("position")
    check = Unit.objects.create(hit=hit, task="fv", position=2, text="A sentence from elsewhere.",
                                highlighted=[0], ai_category="no_error", ai_reason="r", ai_source=u0.ai_source)
    AttentionCheck.objects.create(unit=check, kind=AttentionCheck.Kind.FV_AI_SAYS_CORRECT,
                                  expected={"has_error": True, "ai_right": False})
    answers = {
        "A": [(True, None, 1), (False, None, 2), (False, True, 1)],
        "B": [(True, None, 10), (True, None, 20), (True, False, 30)],
        "C": [(True, None, 0), (False, None, 5), (True, False, 7)],
    }
    people = {}
    now = timezone.now()
    for day, (name, rows) in enumerate(answers.items()):
        annotator = crowd_annotator(name)
        assignment = Assignment.objects.create(hit=hit, annotator=annotator, status=Assignment.Status.SUBMITTED,
                                               expires_at=now, submitted_at=now - timedelta(days=day))
        for unit, (has_error, ai_right, seconds) in zip((u0, u1, check), rows):
            Label.objects.create(assignment=assignment, unit=unit, annotator=annotator, has_error=has_error,
                                 error_types=["entity"] if has_error else [], ai_right=ai_right,
                                 seconds_on_item=seconds)
        apply_policy(grade_assignment(assignment))
        people[name] = annotator
    return project, people


def test_the_numbers_on_hand_built_data(graded):
    project, people = graded
    dashboard = project_quality(project)
    rows = {row.annotator.external_id: row for row in dashboard.rows}
    a, b, c = rows["A"], rows["B"], rows["C"]
    assert (a.checks_passed, a.checks_failed, a.pass_rate) == (0, 1, 0.0)
    assert (b.checks_passed, b.checks_failed, b.pass_rate) == (1, 0, 1.0)
    # Leave-one-out majority over the others' counted labels (A's failed submission does not count; ties out).
    assert (a.agreement_hits, a.agreement_total) == (1, 1)
    assert (b.agreement_hits, b.agreement_total) == (1, 2)
    assert (c.agreement_hits, c.agreement_total) == (1, 2)
    assert (a.endorsed, a.endorsement_total, b.endorsed, c.endorsed) == (1, 1, 0, 0)
    assert (a.median_seconds, a.too_fast) == (1, True)
    assert (b.median_seconds, b.too_fast) == (20, False)
    assert (c.median_seconds, c.too_fast) == (6, False)
    assert (a.no_error_share, b.no_error_share, c.no_error_share) == (0.5, 0.0, 0.5)
    assert dashboard.crowd_no_error_share == 0.25  # B and C's counted real labels: yes, yes, yes, no.
    assert [(day.isoformat(), g, p) for day, g, p in a.by_day] == [(timezone.now().date().isoformat(), 1, 0)]


def test_only_managers_see_the_dashboard_and_annotator_pages(graded, client, manager, annotator, outsider):
    project, people = graded
    urls = [f"/projects/{project.slug}/quality/",
            f"/projects/{project.slug}/quality/annotators/{people['A'].public_id}/"]
    for url in urls:
        assert client.get(url).status_code == 302  # Anonymous: to the login page.
        client.force_login(annotator)
        assert client.get(url).status_code == 403
        client.force_login(outsider)
        assert client.get(url).status_code == 404
        client.force_login(manager)
        response = client.get(url)
        assert response.status_code == 200
        assert people["A"].pseudonym.encode() in response.content
        client.logout()


def test_the_dashboard_sorts_filters_and_refuses_bad_parameters(graded, client, manager):
    project, people = graded
    client.force_login(manager)
    url = f"/projects/{project.slug}/quality/"
    body = client.get(url, {"sort": "-pass_rate"}).content.decode()
    assert body.index(people["B"].pseudonym) < body.index(people["A"].pseudonym)
    body = client.get(url, {"sort": "pass_rate"}).content.decode()
    assert body.index(people["A"].pseudonym) < body.index(people["B"].pseudonym)
    set_status(people["A"], project, "blocked")
    body = client.get(url, {"status": "blocked"}).content.decode()
    assert people["A"].pseudonym in body and people["B"].pseudonym not in body
    body = client.get(url, {"status": "active"}).content.decode()
    assert people["A"].pseudonym not in body and people["B"].pseudonym in body
    assert people["A"].pseudonym not in client.get(url, {"provider": "mturk"}).content.decode()
    for bad in ({"sort": "name"}, {"status": "<script>"}, {"provider": "x"}):
        response = client.get(url, bad)
        assert response.status_code == 400
        assert b"<script>" not in response.content
    assert b"too fast" in client.get(url).content


def test_a_manager_overrides_a_grade_on_the_page_with_a_reason(graded, client, manager, annotator):
    project, people = graded
    grade = Grade.objects.get(assignment__annotator=people["A"])
    url = f"/projects/{project.slug}/quality/grades/{grade.assignment.public_id}/override/"
    client.force_login(annotator)
    assert client.post(url, {"passed": "yes", "reason": "x"}).status_code == 403
    client.force_login(manager)
    client.post(url, {"passed": "yes", "reason": "  "})
    grade.refresh_from_db()
    assert grade.override_passed is None  # No reason, nothing written.
    assert Decision.objects.get(idempotency_key=f"reject:{grade.assignment.public_id}").status == "pending"
    response = client.post(url, {"passed": "yes", "reason": "The <b>check</b> sentence was ambiguous."})
    assert response.status_code == 302
    grade.refresh_from_db()
    assert (grade.override_passed, grade.overridden_by, grade.counts) == (True, manager, True)
    assert Decision.objects.get(idempotency_key=f"reject:{grade.assignment.public_id}").status == "cancelled"
    approve = Decision.objects.get(idempotency_key=f"approve:{grade.assignment.public_id}")
    assert approve.status == "pending" and approve.created_by == manager
    assert counted_labels().filter(assignment=grade.assignment).count() == 2
    page = client.get(f"/projects/{project.slug}/quality/annotators/{people['A'].public_id}/").content
    assert b"The &lt;b&gt;check&lt;/b&gt; sentence was ambiguous." in page


def test_the_grades_api_lists_and_overrides_for_managers_only(graded, client, manager, annotator, outsider):
    project, people = graded
    grade = Grade.objects.get(assignment__annotator=people["A"])
    url = f"/api/grades/{grade.assignment.public_id}/override/"
    assert client.post(url, {"passed": True, "reason": "ok"}, content_type="application/json").status_code in (401,
                                                                                                            403)
    for user in (annotator, outsider):
        client.force_login(user)
        assert client.get("/api/grades/").json()["results"] == []
        assert client.post(url, {"passed": True, "reason": "ok"},
                           content_type="application/json").status_code == 404
    client.force_login(manager)
    listed = client.get("/api/grades/", {"project": project.slug, "passed": "false"}).json()["results"]
    assert [g["assignment"] for g in listed] == [str(grade.assignment.public_id)]
    assert client.post(url, {"passed": True}, content_type="application/json").status_code == 400
    assert client.post(url, {"passed": "maybe", "reason": "x"}, content_type="application/json").status_code == 400
    grade.refresh_from_db()
    assert grade.override_passed is None
    body = client.post(url, {"passed": True, "reason": "Ambiguous check."}, content_type="application/json").json()
    assert body["counts"] is True and body["override_reason"] == "Ambiguous check."
    assert body["overridden_by"] == manager.get_username()


def test_a_manager_changes_an_annotators_status(graded, client, manager, annotator):
    project, people = graded
    url = f"/projects/{project.slug}/quality/annotators/{people['A'].public_id}/status/"
    client.force_login(annotator)
    assert client.post(url, {"status": "active"}).status_code == 403
    client.force_login(manager)
    client.post(url, {"status": "paused"})
    assert status_of(people["A"], project) == "paused"
    client.post(url, {"status": "nonsense"})
    assert status_of(people["A"], project) == "paused"


@pytest.mark.parametrize("target", ["projects", "projects/x", "//evil.example", "https://evil.example/",
                                    "/\\evil.example", "javascript:alert(1)", "http:///evil.example"])
def test_computing_the_numbers_again_returns_to_a_page_of_this_site_only(project, client, manager, target):
    from django.urls import reverse

    client.force_login(manager)
    response = client.post(reverse("numbers_update", args=[project.slug, "quality"]), {"next": target})
    assert response.status_code == 302 and response.url == reverse("quality_dashboard", args=[project.slug])


def test_computing_the_numbers_again_returns_to_the_page_it_was_asked_from(project, client, manager):
    from django.urls import reverse

    client.force_login(manager)
    compute = reverse("numbers_update", args=[project.slug, "quality"])
    page = reverse("annotator_list", args=[project.slug]) + "?sort=-agreement"
    assert client.post(compute, {"next": page}).url == page
    assert client.post(compute, {"next": f"http://testserver{page}"}).url == f"http://testserver{page}"
