"""The manager's crowd pages: status, spend, dry run, per-worker history and manual decisions (with who took
them); an annotator is refused (403), an outsider sees nothing (404), an anonymous visitor must log in."""

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Annotator, Assignment, CrowdBatch, CrowdClaim, Decision, LedgerEntry
from annotation.services.assignment import reserve_next_hit
from tests.crowd.conftest import form_for
from tests.work import qualify

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker(corpus):
    """A Prolific worker with one submitted assignment, bound to a batch."""
    from annotation.services.answers import read_form, save_answers
    from annotation.services.assignment import submit_assignment

    annotator = qualify(Annotator.objects.create(provider="prolific", external_id="5f1e0000000000000000cccc"))
    batch = CrowdBatch.objects.create(project=corpus, task="fv", provider="prolific", status="published",
                                      reward_usd=Decimal("0.40"), assignments_per_hit=3, external_id="study1")
    assignment = reserve_next_hit(annotator, corpus, "fv", confirmed=True)
    CrowdClaim.objects.create(assignment=assignment, batch=batch, provider="prolific", external_assignment_id="s1",
                              worker_id=annotator.external_id)
    units = list(assignment.hit.units.all())
    save_answers(assignment=assignment, answers=read_form(_QueryDict(form_for(assignment)), units))
    submit_assignment(assignment=assignment)
    return annotator


class _QueryDict(dict):
    def getlist(self, key):
        value = self[key]
        return value if isinstance(value, list) else [value]


def test_the_crowd_page_shows_batches_and_spend(corpus, manager, client, worker):
    client.force_login(manager)
    response = client.get(reverse("crowd_manage", args=[corpus.slug]))
    assert response.status_code == 200
    assert b'id="batches"' in response.content and b"Prolific" in response.content
    assert b"total 0.00 USD" in response.content and worker.pseudonym.encode() in response.content


def test_the_publish_page_is_a_dry_run_until_confirmed(corpus, manager, client, django_capture_on_commit_callbacks):
    client.force_login(manager)
    response = client.get(reverse("crowd_publish", args=[corpus.slug]), {"task": "fv", "provider": "mturk",
                                                                         "sandbox": "1"})
    assert response.status_code == 200 and b"dry run" in response.content and b"USD" in response.content
    unconfirmed = client.post(reverse("crowd_publish", args=[corpus.slug]), {"task": "fv", "provider": "link"})
    assert unconfirmed.status_code == 302 and not CrowdBatch.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        confirmed = client.post(reverse("crowd_publish", args=[corpus.slug]), {"task": "fv", "provider": "link",
                                                                              "confirm": "yes"})
    assert confirmed.status_code == 302
    batch = CrowdBatch.objects.get()
    assert batch.provider == "link" and batch.status == "published" and batch.crowd_hits.count() == 4


def test_prolific_and_private_links_come_first_and_mturk_is_marked_closed(corpus, manager, client):
    import re

    client.force_login(manager)
    page = client.get(reverse("crowd_manage", args=[corpus.slug])).content.decode()
    select = re.search(r'<select name="provider" id="provider">(.*?)</select>', page).group(1)
    options = re.findall(r'<option value="(\w+)"( selected)?>([^<]*)</option>', select)
    assert [(value, bool(selected)) for value, selected, _ in options] == [
        ("prolific", True), ("link", False), ("mturk", False)]
    assert options[2][2] == "Amazon Mechanical Turk (closed 2026-09-30)"
    assert "Amazon Mechanical Turk closed for good on 2026-09-30: it takes no new HITs" in page
    assert 'name="sandbox" value="1" checked' not in page
    # Choosing it anyway: the dry run says so first; the integration is still there for earlier batches.
    mturk = client.get(reverse("crowd_publish", args=[corpus.slug]), {"task": "fv", "provider": "mturk"})
    assert mturk.status_code == 200 and b"closed for good on 2026-09-30" in mturk.content
    prolific = client.get(reverse("crowd_publish", args=[corpus.slug]), {"task": "fv", "provider": "prolific"})
    assert b"closed for good" not in prolific.content


def test_the_dry_run_page_says_what_a_publication_pays(corpus, manager, client):
    client.force_login(manager)
    url = reverse("crowd_publish", args=[corpus.slug])
    prolific = client.get(url, {"task": "fv", "provider": "prolific"}).content.decode()
    assert "Publish fact verification on Prolific: dry run" in prolific
    assert "nothing has been sent to Prolific yet. Prolific has no sandbox" in prolific
    assert "sandbox: nothing is paid" not in prolific and "(MTurk's sandbox)" not in prolific
    # The sandbox box ticked with Prolific: refused, and the page does not call the publication a sandbox.
    ticked = client.get(url, {"task": "fv", "provider": "prolific", "sandbox": "1"}).content.decode()
    assert "Prolific has no sandbox (only MTurk has one)" in ticked and "(MTurk's sandbox)" not in ticked
    assert '<button type="submit" disabled>Publish</button>' in ticked
    mturk = client.get(url, {"task": "fv", "provider": "mturk", "sandbox": "1"}).content.decode()
    assert "(MTurk's sandbox): dry run" in mturk and "MTurk's sandbox, where nothing is paid" in mturk
    link = client.get(url, {"task": "fv", "provider": "link"}).content.decode()
    assert "Private links pay nothing" in link


def test_a_manual_decision_records_who_took_it_and_is_not_duplicated(corpus, manager, client, worker,
                                                                     django_capture_on_commit_callbacks):
    client.force_login(manager)
    page = client.get(reverse("crowd_worker", args=[corpus.slug, worker.public_id]))
    assert page.status_code == 200 and b'id="history"' in page.content
    url = reverse("crowd_decide", args=[corpus.slug, worker.public_id])
    form = {"kind": "bonus", "amount": "2.50", "reason": "Careful work on a long text", "nonce": "n1"}
    with django_capture_on_commit_callbacks(execute=False):
        client.post(url, form)
        client.post(url, form)  # the same form sent twice
    decision = Decision.objects.get(idempotency_key__startswith="manual:bonus")
    assert decision.created_by == manager and decision.amount_usd == Decimal("2.50")
    assert Decision.objects.filter(idempotency_key__startswith="manual:").count() == 1
    assert client.post(url, {**form, "nonce": "n2", "amount": "1000"}).status_code == 302
    assert client.post(url, {"kind": "reject", "reason": "", "nonce": "n3"}).status_code == 302
    assert Decision.objects.filter(idempotency_key__startswith="manual:").count() == 1


@pytest.mark.parametrize("name", ["crowd_manage", "crowd_worker", "crowd_publish"])
def test_annotators_outsiders_and_strangers_are_refused(corpus, annotator, outsider, client, worker, name):
    args = [corpus.slug, worker.public_id] if name == "crowd_worker" else [corpus.slug]
    url = reverse(name, args=args)
    query = {"task": "fv", "provider": "link"}
    client.force_login(annotator)
    assert client.get(url, query).status_code == 403
    client.force_login(outsider)
    assert client.get(url, query).status_code == 404
    client.logout()
    assert client.get(url, query).status_code == 302
    decide = reverse("crowd_decide", args=[corpus.slug, worker.public_id])
    client.force_login(annotator)
    assert client.post(decide, {"kind": "block", "reason": "x", "nonce": "z"}).status_code == 403
    assert not Decision.objects.filter(idempotency_key__startswith="manual:").exists()
    assert not LedgerEntry.objects.exists() and Assignment.objects.count() == 1


def test_a_worker_with_several_assignments_has_one_page_and_takes_manual_decisions(
        corpus, manager, client, worker, django_capture_on_commit_callbacks):
    """The page and the decision form find the worker once, however many assignments they hold in the project."""
    from annotation.services.answers import read_form, save_answers
    from annotation.services.assignment import submit_assignment

    batch = CrowdBatch.objects.get()
    second = reserve_next_hit(worker, corpus, "fv", confirmed=True)
    CrowdClaim.objects.create(assignment=second, batch=batch, provider="prolific", external_assignment_id="s2",
                              worker_id=worker.external_id)
    save_answers(assignment=second, answers=read_form(_QueryDict(form_for(second)), list(second.hit.units.all())))
    submit_assignment(assignment=second)
    assert Assignment.objects.filter(annotator=worker, status="submitted").count() == 2
    client.force_login(manager)
    page = client.get(reverse("crowd_worker", args=[corpus.slug, worker.public_id]))
    assert page.status_code == 200 and page.content.count(b'id="assignment-') == 2
    with django_capture_on_commit_callbacks(execute=False):  # recorded, not carried out (no provider here)
        response = client.post(reverse("crowd_decide", args=[corpus.slug, worker.public_id]), {
            "kind": "extend", "assignment": str(second.public_id), "reason": "One more annotator", "nonce": "n9"})
    assert response.status_code == 302
    decision = Decision.objects.get(idempotency_key__startswith="manual:extend")
    assert decision.assignment == second and list(decision.rests_on.all()) == [second]


def test_a_manual_decision_waits_for_the_provider_to_confirm_the_submission(corpus, manager, client, worker):
    claimed = Assignment.objects.get(annotator=worker)
    Assignment.objects.filter(pk=claimed.pk).update(confirmed_at=None)  # an arrival Prolific could not confirm
    client.force_login(manager)
    response = client.post(reverse("crowd_decide", args=[corpus.slug, worker.public_id]), {
        "kind": "reject", "assignment": str(claimed.public_id), "reason": "Careless", "nonce": "n10"}, follow=True)
    assert b"has not confirmed this submission" in response.content
    assert not Decision.objects.filter(idempotency_key__startswith="manual:").exists()


@pytest.mark.parametrize("amount", ["NaN", "nan", "-NaN", "sNaN", "Infinity", "-Infinity", "inf", "1e400", "0",
                                    "-5", "100.01", "2.505", "12345678901", "", "two"])
def test_a_bonus_that_is_not_an_amount_in_range_is_refused_and_nothing_is_recorded(corpus, manager, client, worker,
                                                                                  amount):
    client.force_login(manager)
    response = client.post(reverse("crowd_decide", args=[corpus.slug, worker.public_id]), {
        "kind": "bonus", "amount": amount, "reason": "Careful work", "nonce": "n1"}, follow=True)
    assert response.status_code == 200 and b"A bonus is between 0.01 and 100.00 USD, to the cent." in response.content
    assert not Decision.objects.filter(idempotency_key__startswith="manual:").exists()


@pytest.mark.parametrize("form, message", [
    ({"kind": "approve", "assignment": "not-a-uuid"}, "Choose one of the worker&#x27;s submitted assignments."),
    ({"kind": "pay-twice"}, "A decision needs a kind and a reason."),
    ({"kind": "block", "reason": "   "}, "A decision needs a kind and a reason."),
    ({"kind": "block", "nonce": "n" * 41}, "This form is out of date"),
])
def test_a_malformed_decision_is_refused_with_the_reason_and_nothing_is_recorded(corpus, manager, client, worker,
                                                                                 form, message):
    client.force_login(manager)
    response = client.post(reverse("crowd_decide", args=[corpus.slug, worker.public_id]),
                           {"reason": "Careless", "nonce": "n1", **form}, follow=True)
    assert response.status_code == 200 and message in response.content.decode()
    assert not Decision.objects.filter(idempotency_key__startswith="manual:").exists()


@pytest.mark.parametrize("form, message", [
    ({"label": "x" * 201}, "Say who the link is for in at most 200 characters (this has 201)."),
    ({"label": "   "}, "Say who the link is for."),
    ({"task": "xx"}, "Choose the task the link opens."),
    ({"days": "0"}, "A link lives at least 1 day."),
    ({"days": "1e3"}, "Give the link&#x27;s life as a whole number of days."),
    ({"days": "99999999999999999999"}, "A link lives at most 30 days on this site."),
])
def test_a_malformed_link_is_refused_with_the_reason_and_nothing_is_saved(corpus, manager, client, settings, form,
                                                                          message):
    from annotation.models import PrivateLink

    settings.FINEGRAIN_LINK_MAX_AGE_DAYS = 30
    client.force_login(manager)
    response = client.post(reverse("crowd_link_new", args=[corpus.slug]),
                           {"task": "fv", "label": "Expert 2", **form}, follow=True)
    assert response.status_code == 200 and f"No link was made: {message}" in response.content.decode()
    assert not PrivateLink.objects.exists()


def test_a_link_label_is_stripped_and_may_use_every_character_the_column_holds(corpus, manager, client):
    from annotation.models import PrivateLink

    client.force_login(manager)
    client.post(reverse("crowd_link_new", args=[corpus.slug]), {"task": "fv", "label": f"  {'é' * 200}  "})
    assert PrivateLink.objects.get().label == "é" * 200
