"""Private links: signed and expiring, revocable, no account; the manager creates and revokes them; rate-limited."""

from datetime import timedelta

import pytest
from django.core import signing
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.crowd.links import LINK_SALT, link_create, link_revoke, link_token
from annotation.models import Annotator, Assignment, PrivateLink
from tests.crowd.conftest import form_for
from tests.work import qualify

pytestmark = pytest.mark.django_db


@pytest.fixture
def link(corpus):
    link = link_create(project=corpus, task="fv", label="Expert 1", days=7)
    return link


def open_link(link, browser=None):
    return (browser or Client()).get(reverse("crowd_link", args=[link_token(link)]))


def test_a_link_opens_work_without_an_account(link):
    first = open_link(link)
    # screening first, the test of the link's project
    assert first.status_code == 302 and reverse("work_screening", args=[link.project.slug]) in first["Location"]
    qualify(Annotator.objects.get(provider="link"), link.project)
    response = open_link(link)
    assert response.status_code == 302 and "/work/hits/" in response["Location"]
    annotator = Annotator.objects.get(provider="link")
    assert PrivateLink.objects.get().annotator == annotator and annotator.user is None
    token = response["Location"].split("ct=")[1]
    assignment = Assignment.objects.get(annotator=annotator)
    submitted = Client(enforce_csrf_checks=True).post(reverse("hit_submit", args=[assignment.public_id]),
                                                      {**form_for(assignment), "crowd_token": token})
    done = Client().get(submitted["Location"])
    assert b"Next HIT" in done.content and "frame-ancestors 'none'" in done["Content-Security-Policy"]
    following = Client(enforce_csrf_checks=True).post(reverse("crowd_link_next"), {"crowd_token": token})
    assert following.status_code == 302 and "/work/hits/" in following["Location"]
    assert Assignment.objects.filter(annotator=annotator).count() == 2


def test_a_revoked_expired_or_forged_link_is_refused(link):
    link_revoke(link=link)
    assert open_link(link).status_code == 404
    other = link_create(project=link.project, task="fv", label="Late")
    PrivateLink.objects.filter(pk=other.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert open_link(other).status_code == 404
    forged = signing.dumps({"l": str(other.public_id)}, salt="another-salt")
    assert Client().get(reverse("crowd_link", args=[forged])).status_code == 404
    assert signing.loads(link_token(link), salt=LINK_SALT)["l"] == str(link.public_id)
    assert not Annotator.objects.exists()


def test_a_revoked_link_stops_the_session_as_well(link):
    qualify(Annotator.objects.create(provider="link", external_id=str(link.public_id)))
    link.annotator = Annotator.objects.get()
    link.save()
    response = open_link(link)
    token = response["Location"].split("ct=")[1]
    link_revoke(link=link)
    assert Client().get(response["Location"]).status_code == 403
    assert Client().post(reverse("crowd_link_next"), {"crowd_token": token}).status_code == 403


def test_link_entry_is_rate_limited(link, settings):
    settings.FINEGRAIN_LINK_RATE = "2/m"
    cache.clear()
    codes = [open_link(link).status_code for _ in range(3)]
    assert codes[-1] == 403 and codes[0] != 403
    cache.clear()


def test_managers_create_and_revoke_links(corpus, manager, client):
    client.force_login(manager)
    response = client.post(reverse("crowd_link_new", args=[corpus.slug]), {"task": "kv", "label": "Expert 2",
                                                                           "days": "3"}, follow=True)
    assert b"/crowd/link/" in response.content
    link = PrivateLink.objects.get()
    assert link.created_by == manager and link.task == "kv"
    client.post(reverse("crowd_link_revoke", args=[corpus.slug, link.public_id]))
    assert PrivateLink.objects.get().revoked_at is not None


def test_others_cannot_create_or_revoke_links(corpus, annotator, outsider, client):
    link = link_create(project=corpus, task="fv", label="x")
    client.force_login(annotator)
    assert client.post(reverse("crowd_link_new", args=[corpus.slug]), {"task": "fv", "label": "y"}).status_code == 403
    client.force_login(outsider)
    assert client.post(reverse("crowd_link_revoke", args=[corpus.slug, link.public_id])).status_code == 404
    client.logout()
    assert client.post(reverse("crowd_link_new", args=[corpus.slug]), {"task": "fv", "label": "y"}).status_code == 302
    assert PrivateLink.objects.count() == 1 and PrivateLink.objects.get().revoked_at is None


def test_a_link_holder_takes_the_screening_test_of_the_links_project_only(link, other_project):
    from annotation.quality.qualification import QUESTIONS

    browser = Client(enforce_csrf_checks=True)
    first = browser.get(reverse("crowd_link", args=[link_token(link)]))
    screening = first["Location"]
    token = screening.split("ct=")[1]
    page = browser.get(screening)
    assert page.status_code == 200 and b"3 attempts left" in page.content
    # The session names its project: another project's test is nobody's business here.
    assert browser.get(reverse("work_screening", args=[other_project.slug]), {"ct": token}).status_code == 404
    right = {question.key: question.answer for question in QUESTIONS}
    passed = browser.post(screening, {**right, "csrfmiddlewaretoken": browser.cookies["csrftoken"].value})
    annotator = Annotator.objects.get(provider="link")
    assert annotator.standing_in(link.project).qualified_at is not None
    assert annotator.standing_in(other_project).qualified_at is None
    # Passing leads straight to the first HIT of the link's task, never to a log-in page.
    assignment = Assignment.objects.get(annotator=annotator)
    assert passed.status_code == 302 and passed["Location"].startswith(
        reverse("hit_page", args=[assignment.public_id]) + "?ct=")
    assert assignment.hit.task == "fv" and assignment.hit.project == link.project
    hit_page = Client().get(passed["Location"])  # the token alone: no cookie, no account
    assert hit_page.status_code == 200 and b'id="answers"' in hit_page.content
    # Opening the screening page again (a reload, the back button) goes back to that HIT, not a second one.
    again = browser.get(screening)
    assert again.status_code == 302 and str(assignment.public_id) in again["Location"]
    assert "/work/hits/" in open_link(link)["Location"]
    assert Assignment.objects.filter(annotator=annotator).count() == 1


def test_a_link_holder_who_fails_then_passes_the_screening_lands_on_the_hit(link):
    from annotation.quality.qualification import QUESTIONS

    browser = Client()
    screening = open_link(link, browser)["Location"]
    wrong = {question.key: next(key for key, _ in question.options if key != question.answer)
             for question in QUESTIONS}
    failed = browser.post(screening, wrong)
    assert failed.status_code == 200 and b"not passed" in failed.content and b"2 attempts left" in failed.content
    assert not Assignment.objects.exists()
    passed = browser.post(screening, {question.key: question.answer for question in QUESTIONS})
    assert passed.status_code == 302 and "/work/hits/" in passed["Location"]
    assert b'id="answers"' in Client().get(passed["Location"]).content


def test_a_link_whose_work_is_all_taken_says_so_after_the_screening(link):
    from annotation.quality.qualification import QUESTIONS

    browser = Client()
    screening = open_link(link, browser)["Location"]
    link.project.hits.filter(task="fv").delete()
    passed = browser.post(screening, {question.key: question.answer for question in QUESTIONS})
    assert passed.status_code == 200 and b"Nothing is waiting for you right now" in passed.content


def test_a_link_revoked_during_the_screening_leads_nowhere(link):
    from annotation.quality.qualification import QUESTIONS

    browser = Client()
    screening = open_link(link, browser)["Location"]
    link_revoke(link=link)
    passed = browser.post(screening, {question.key: question.answer for question in QUESTIONS})
    assert passed.status_code == 403 and b"expired or was revoked" in passed.content
    assert not Assignment.objects.exists()
