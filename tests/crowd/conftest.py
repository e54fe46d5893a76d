"""Crowd tests: a real boto3 `mturk` client under botocore's Stubber (no network), a small corpus with its
attention checks, and helpers that answer a HIT so that it passes or fails its checks."""

from decimal import Decimal

import pytest
from botocore.stub import Stubber
from django.utils import timezone

from annotation.ai_agreement import ai_right_for
from annotation.crowd.mturk import MTurkProvider
from annotation.models import Annotator, Assignment, CrowdBatch, CrowdClaim, CrowdHit
from tests.work import add_assistance, answers_for, build_all, import_small, qualify


@pytest.fixture(autouse=True)
def crowd_settings(settings):
    settings.SITE_URL = "https://finegrain.example.org"
    settings.ALLOWED_HOSTS = ["testserver", "finegrain.example.org"]
    settings.FINEGRAIN_PROLIFIC_TOKEN = "test-token"
    settings.FINEGRAIN_PROLIFIC_PROJECT_ID = "6520a6f1c2b1a8d3e4f50001"
    settings.FINEGRAIN_PROLIFIC_WORKSPACE_ID = "6520a6f1c2b1a8d3e4f5aaaa"
    settings.FINEGRAIN_LINK_RATE = "1000/m"


@pytest.fixture
def corpus(project):
    """The small corpus, with one known-answer item planted in every FV HIT, so that a careless worker fails
    whatever the injection's random draw (the expected answer lives only in AttentionCheck, as in production)."""
    from annotation.models import AttentionCheck, Unit

    import_small(project)
    add_assistance(project)
    build_all(project)
    for hit in project.hits.filter(task="fv"):
        if not AttentionCheck.objects.filter(unit__hit=hit).exists():
            unit = Unit.objects.filter(hit=hit).order_by("position").first()
            AttentionCheck.objects.create(unit=unit, kind=AttentionCheck.Kind.FV_AI_SAYS_ERROR,
                                          expected={"has_error": True})
    return project


@pytest.fixture
def mturk_client(monkeypatch):
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("mturk", region_name="us-east-1",
                          endpoint_url="https://mturk-requester-sandbox.us-east-1.amazonaws.com")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def mturk(mturk_client):
    client, stubber = mturk_client
    return MTurkProvider(sandbox=True, client=client), stubber


def answers(unit, *, passing: bool = True) -> dict:
    """Answers for one unit; on an attention check, the expected answer (passing) or its opposite."""
    values = answers_for(unit, yes=True)
    check = getattr(unit, "attention_check", None)
    if check is not None:
        for name, expected in check.expected.items():
            values[name] = expected if passing or not isinstance(expected, bool) else not expected
    if "has_error" in values:
        values["error_types"] = ["entity"] if values["has_error"] else []
    if "ai_right" in values:  # One decision with the error answer: never a pair that contradicts itself.
        values["ai_right"] = ai_right_for(unit.ai_category, values["has_error"])
    return values


def form_for(assignment, *, passing: bool = True) -> dict:
    data = {}
    for unit in assignment.hit.units.select_related("attention_check").all():
        for name, value in answers(unit, passing=passing).items():
            if name == "error_types":
                data[f"u{unit.position}-error_types"] = value or [""]
            else:
                data[f"u{unit.position}-{name}"] = ("yes" if value else "no") if isinstance(value, bool) else value
    return data


# The MTurk ids of the one verified submission of `submitted`.
SUBMITTED_HIT = "3HIT" + "0" * 26
SUBMITTED_ASSIGNMENT = "3ASG" + "0" * 25 + "1"


@pytest.fixture
def submitted(corpus):
    """A verified MTurk submission with no answers: its attention checks fail, so the policy rejects it."""
    corpus.block_after_failures = 5  # one failure blocks nobody here
    corpus.save()
    batch = CrowdBatch.objects.create(project=corpus, task="fv", provider="mturk", sandbox=True, status="published",
                                      reward_usd=Decimal("0.40"), assignments_per_hit=3)
    hit = corpus.hits.filter(task="fv").order_by("position").first()
    CrowdHit.objects.create(batch=batch, hit=hit, request_token="t0", external_id=SUBMITTED_HIT,
                            published_at=timezone.now())
    annotator = qualify(Annotator.objects.create(provider="mturk", external_id="A1WORKER"))
    assignment = Assignment.objects.create(hit=hit, annotator=annotator, expires_at=timezone.now(),
                                           status="submitted", submitted_at=timezone.now())
    CrowdClaim.objects.create(assignment=assignment, batch=batch, provider="mturk", verified=True,
                              external_assignment_id=SUBMITTED_ASSIGNMENT, external_hit_id=SUBMITTED_HIT,
                              worker_id="A1WORKER")
    return assignment
