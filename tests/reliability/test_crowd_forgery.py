"""Forged crowd parameters: made-up or swapped workerId/assignmentId/hitId at MTurk's entry, tampered signed session
tokens, tokens replayed against another worker's HIT. Every attempt is refused (4xx) and writes no label."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, CrowdClaim, Label
from tests.crowd.conftest import corpus, crowd_settings, form_for, mturk, mturk_client  # noqa: F401  (fixtures)
from tests.crowd.stubs import mturk_id
from tests.crowd.test_mturk_cycle import publish_fv

pytestmark = [pytest.mark.services, pytest.mark.django_db]


def arrive(batch, params) -> tuple[int, str]:
    browser = Client(enforce_csrf_checks=True, raise_request_exception=False)
    response = browser.get(reverse("crowd_mturk_entry", args=[batch.public_id]), params)
    return response.status_code, response.get("Location", "")


def test_forged_crowd_parameters_and_tampered_or_replayed_tokens_are_refused(corpus, mturk, record_figures):
    provider, stubber = mturk
    batch, hit_ids = publish_fv(corpus, provider, stubber)
    sandbox = "https://workersandbox.mturk.com"
    status, first_page = arrive(batch, {"assignmentId": mturk_id("3ASG", 0), "hitId": hit_ids[0],
                                        "workerId": "A1HONESTWORKER", "turkSubmitTo": sandbox})
    assert status == 302
    status, second_page = arrive(batch, {"assignmentId": mturk_id("3ASG", 1), "hitId": hit_ids[0],
                                         "workerId": "A2OTHERWORKER", "turkSubmitTo": sandbox})
    assert status == 302
    first = Assignment.objects.get(crowd_claim__external_assignment_id=mturk_id("3ASG", 0))
    second = Assignment.objects.get(crowd_claim__external_assignment_id=mturk_id("3ASG", 1))
    token = parse_qs(urlsplit(first_page).query)["ct"][0]
    claims_before = CrowdClaim.objects.count()
    attempts = []

    # 1. The entry with forged ids: a hitId of no batch HIT, another worker's assignmentId, a foreign turkSubmitTo.
    for params in (
        {"assignmentId": mturk_id("3ASG", 0), "hitId": hit_ids[0], "workerId": "AFORGEDWORKER",
         "turkSubmitTo": sandbox},  # the honest worker's assignment, claimed by someone else
        {"assignmentId": mturk_id("3ASG", 9), "hitId": "3NOSUCHHIT0000000000000000000", "workerId": "AFORGER",
         "turkSubmitTo": sandbox},
        {"assignmentId": mturk_id("3ASG", 8), "hitId": hit_ids[0], "workerId": "AFORGER2",
         "turkSubmitTo": "https://evil.example.org"},
        {"assignmentId": "'; DROP TABLE x; --", "hitId": hit_ids[0], "workerId": "<script>", "turkSubmitTo": sandbox},
    ):
        status, location = arrive(batch, params)
        honest_page = location.split("?")[0] == first_page.split("?")[0]
        attempts.append(("entry", params["workerId"], status, honest_page))
    # 2. Tampered tokens and a token replayed on another worker's assignment.
    tampered = [token[:-1] + ("A" if token[-1] != "A" else "B"), token[: len(token) // 2], token + "x", "x" * 80]
    browser = Client(enforce_csrf_checks=True, raise_request_exception=False)
    for bad in tampered:
        response = browser.get(reverse("hit_page", args=[first.public_id]), {"ct": bad})
        attempts.append(("tampered page", bad[-6:], response.status_code, False))
        response = browser.post(reverse("hit_submit", args=[first.public_id]),
                                {**form_for(first), "crowd_token": bad})
        attempts.append(("tampered submit", bad[-6:], response.status_code, False))
    for url in (reverse("hit_page", args=[second.public_id]),):
        response = browser.get(url, {"ct": token})
        attempts.append(("replayed page", "", response.status_code, False))
    response = browser.post(reverse("hit_answer", args=[second.public_id, 0]),
                            {"u0-has_error": "no", "crowd_token": token})
    attempts.append(("replayed answer", "", response.status_code, False))
    response = browser.post(reverse("hit_submit", args=[second.public_id]), {**form_for(second), "crowd_token": token})
    attempts.append(("replayed submit", "", response.status_code, False))

    refused = [a for a in attempts if 400 <= a[2] < 500]
    record_figures(attempts=len(attempts), refused=len(refused), labels_written=Label.objects.count(),
                   claims_added=CrowdClaim.objects.count() - claims_before)
    # Nothing reached the honest worker's HIT, nothing was written, nobody else's claim was created.
    assert not [a for a in attempts if a[3]], attempts
    assert len(refused) == len(attempts), attempts
    assert Label.objects.count() == 0
    assert CrowdClaim.objects.count() == claims_before
    assert Assignment.objects.get(pk=second.pk).status == "reserved"
