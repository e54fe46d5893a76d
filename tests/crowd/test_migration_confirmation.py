"""Migration 0009 on existing rows: an annotator's global status and screening become their standing in each project
they worked in; crowd submissions sync already reconciled count as confirmed, the others wait for the provider (the
policy decisions written for them and not carried out are withdrawn, to be decided again once they are confirmed);
each decision cites its submission."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("annotation", "0008_decision_extend_place")]
AFTER = [("annotation", "0009_crowd_confirmation_and_project_standing")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def old_apps():
    apps = migrate(BEFORE)
    yield apps
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_it_carries_existing_rows_over(old_apps):
    apps = old_apps
    Project, Document, Hit = (apps.get_model("annotation", name) for name in ("Project", "Document", "Hit"))
    Annotator, Assignment = apps.get_model("annotation", "Annotator"), apps.get_model("annotation", "Assignment")
    CrowdBatch, CrowdClaim = apps.get_model("annotation", "CrowdBatch"), apps.get_model("annotation", "CrowdClaim")
    Decision = apps.get_model("annotation", "Decision")
    now = timezone.now()
    worked, untouched = (Project.objects.create(slug=slug, name=slug) for slug in ("worked", "untouched"))
    document = Document.objects.create(project=worked, uid="d", doc_id="d", source="s", domain="news",
                                       input_type="non-dialogue", length="short", text="t", word_count=1,
                                       text_sha256="0" * 64)
    hits = [Hit.objects.create(project=worked, task="kv", document=document, position=0)]
    blocked = Annotator.objects.create(provider="mturk", external_id="A1BLOCKED", status="blocked", qualified_at=now)
    fine = Annotator.objects.create(provider="mturk", external_id="A2FINE")
    batch = CrowdBatch.objects.create(project=worked, task="kv", provider="mturk", reward_usd="0.40",
                                      assignments_per_hit=3, status="published")
    reconciled, waiting = (Assignment.objects.create(hit=hits[0], annotator=who, status="submitted",
                                                     expires_at=now + timedelta(hours=1), submitted_at=now)
                           for who in (blocked, fine))
    for assignment, verified, n in ((reconciled, True, 1), (waiting, False, 2)):
        CrowdClaim.objects.create(assignment=assignment, batch=batch, provider="mturk", verified=verified,
                                  external_assignment_id=f"3ASG{n}", worker_id=assignment.annotator.external_id)
    decisions = {key: Decision.objects.create(project=worked, annotator=who, assignment=assignment, kind=kind,
                                              idempotency_key=key)
                 for key, who, assignment, kind in (("approve:reconciled", blocked, reconciled, "approve"),
                                                    ("reject:waiting", fine, waiting, "reject"),
                                                    ("block:waiting", fine, None, "block"))}

    apps = migrate(AFTER)

    ProjectAnnotator = apps.get_model("annotation", "ProjectAnnotator")
    Assignment, Decision = apps.get_model("annotation", "Assignment"), apps.get_model("annotation", "Decision")
    standing = ProjectAnnotator.objects.get(annotator_id=blocked.pk)
    assert (standing.project_id, standing.status, standing.qualified_at) == (worked.pk, "blocked", now)
    assert not ProjectAnnotator.objects.filter(project_id=untouched.pk).exists()  # never worked there: no status
    assert not ProjectAnnotator.objects.filter(annotator_id=fine.pk).exists()  # active and unscreened: no row needed
    assert Assignment.objects.get(pk=reconciled.pk).confirmed_at is not None
    assert Assignment.objects.get(pk=waiting.pk).confirmed_at is None
    statuses = dict(Decision.objects.values_list("idempotency_key", "status"))
    assert statuses == {"approve:reconciled": "pending", "reject:waiting": "cancelled", "block:waiting": "cancelled"}
    assert list(Decision.objects.get(pk=decisions["approve:reconciled"].pk).rests_on.values_list("pk", flat=True)) \
        == [reconciled.pk]
