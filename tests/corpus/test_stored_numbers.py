"""Every kind of stored numbers, read from the job-kind registry (a kind registered tomorrow is covered too): a page
view or a poll starts no job, the button starts one and only one, and who may see or ask for each kind's numbers is
the kind's own access rule, in the views as in the rule."""

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.urls import reverse

from corpus.jobs import numbers_kinds
from corpus.models import Job, Membership, Snapshot
from corpus.snapshots import function, numbers_state
from tests.conftest import numbers_now

pytestmark = [pytest.mark.django_db, pytest.mark.queued_numbers]

KINDS = numbers_kinds()
CASES = [(kind, variant) for kind in KINDS for variant in kind.numbers.variants]


def test_the_four_kinds_of_stored_numbers_are_registered():
    assert {kind.code for kind in KINDS} == {"analytics", "costs", "quality", "review_tally"}


@pytest.fixture
def reviewer(project, django_user_model):
    user = django_user_model.objects.create_user("rex", password="pw-reviewer-1")
    Membership.objects.create(project=project, user=user, role=Membership.Role.REVIEWER)
    return user


def page_url(kind, variant: str, slug: str) -> str:
    return reverse(kind.numbers.page, args=[slug]) + (f"?variant={variant}" if variant else "")


@pytest.mark.parametrize("kind,variant", CASES, ids=[f"{kind.code}-{variant or 'plain'}" for kind, variant in CASES])
def test_a_view_starts_nothing_and_the_button_starts_one_job(client, project, manager, kind, variant,
                                                            django_capture_on_commit_callbacks):
    client.force_login(manager)
    status = reverse("numbers_status", args=[project.slug, kind.code]) + f"?variant={variant}"
    update = reverse("numbers_update", args=[project.slug, kind.code])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        html = client.get(page_url(kind, variant, project.slug)).content.decode()
        polled = client.get(status, HTTP_HX_REQUEST="true")
    assert not queued and not Job.objects.exists()
    assert f'action="{update}"' in html and "Not computed yet" in html
    assert polled.status_code == 286  # no job runs: polling stops

    with django_capture_on_commit_callbacks(execute=False) as queued:
        client.post(update, {"variant": variant})
        client.post(update, {"variant": variant})
    job = Job.objects.get()
    assert (job.kind, job.params["variant"], len(queued)) == (kind.code, variant, 1)
    assert "every 2s" in client.get(status, HTTP_HX_REQUEST="true").content.decode()

    queued[0]()
    state = numbers_state(project, kind.code, variant)
    assert state.current and not state.running and Snapshot.objects.get(kind=kind.code).variant == variant
    assert client.get(status, HTTP_HX_REQUEST="true")["HX-Refresh"] == "true"
    with django_capture_on_commit_callbacks(execute=False) as queued:
        client.post(update, {"variant": variant})  # current numbers: nothing to do
    assert not queued and Job.objects.count() == 1


def expected_status(rule, user, slug) -> int:
    try:
        rule(user, slug)
    except Http404:
        return 404
    except PermissionDenied:
        return 403
    return 200


@pytest.mark.parametrize("kind", KINDS, ids=[kind.code for kind in KINDS])
def test_each_kind_answers_as_its_access_rule_says(client, project, manager, reviewer, annotator, outsider, kind):
    rule = function(kind.numbers.access)
    numbers_now(project, kind.code)
    before = Job.objects.count()
    shown = numbers_state(project, kind.code).computed.isoformat()  # a page that shows the current numbers
    for user in (manager, reviewer, annotator, outsider):
        client.force_login(user)
        expected = expected_status(rule, user, project.slug)
        polled = client.get(reverse("numbers_status", args=[project.slug, kind.code]), {"shown": shown},
                            HTTP_HX_REQUEST="true")
        asked = client.post(reverse("numbers_update", args=[project.slug, kind.code]))
        assert polled.status_code == (286 if expected == 200 else expected), user
        assert asked.status_code == (302 if expected == 200 else expected), user
    assert expected_status(rule, annotator, project.slug) == 403  # nobody's annotators see these numbers
    assert expected_status(rule, outsider, project.slug) == 404
    assert Job.objects.count() == before  # current numbers: a permitted click starts nothing either


def test_an_unknown_kind_or_variant_is_not_found(client, project, manager):
    client.force_login(manager)
    for kind, query in (("import", ""), ("nope", ""), ("quality", "?variant=simulated")):
        assert client.get(reverse("numbers_status", args=[project.slug, kind]) + query).status_code == 404
    assert client.post(reverse("numbers_update", args=["alpha", "hits_build"])).status_code == 404
    assert not Job.objects.exists()
