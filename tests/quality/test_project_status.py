"""An annotator's status is per project: a block in one project (by its policy or its manager) leaves every other
project as it was, and only a manager of a project changes the status there (annotation.permissions)."""

import random

import pytest
from django.http import Http404

from annotation.crowd import outbox
from annotation.models import Annotator, AttentionCheck, Decision
from annotation.permissions import get_annotator_standing
from annotation.services.answers import save_answers
from annotation.services.assignment import WorkRefused, reserve_next_hit, submit_assignment
from corpus.models import Membership, Project
from tests.conftest import project_built_once
from tests.quality import scripted
from tests.quality.conftest import with_checks
from tests.work import add_assistance, build_all, crowd_annotator, import_generated, set_status, status_of

pytestmark = pytest.mark.django_db


def build_two(alpha: Project) -> None:
    """Two projects with FV HITs and attention checks; one failed submission blocks in either."""
    for each in (alpha, Project.objects.create(slug="beta", name="Beta")):
        import_generated(each, documents=2, summarizers=2, sentences=3)
        add_assistance(each)
        with_checks(each)
        build_all(each)
        for hit in each.hits.filter(task="fv"):  # a check in every HIT, whatever the injection drew
            if not AttentionCheck.objects.filter(unit__hit=hit).exists():
                AttentionCheck.objects.create(unit=hit.units.order_by("position").first(),
                                              kind=AttentionCheck.Kind.FV_AI_SAYS_ERROR, expected={"has_error": True})
        each.block_after_failures = 1
        each.save(update_fields=["block_after_failures"])


# Every test reads the same two projects: built once for the module, each test's writes rolled back.
two_built = project_built_once(build_two)


@pytest.fixture
def project(two_built, db):
    return Project.objects.get(pk=two_built)


@pytest.fixture
def other_project(two_built, db):
    return Project.objects.get(slug="beta")


@pytest.fixture
def two_projects(project, other_project):
    return project, other_project


def fail_once(annotator, project) -> None:
    assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
    save_answers(assignment=assignment, answers=scripted.answers(assignment, scripted.contrary, random.Random(0)))
    submit_assignment(assignment=assignment)


def test_it_blocks_in_the_project_whose_policy_decided_and_nowhere_else(two_projects):
    alpha, beta = two_projects
    worker = crowd_annotator("both", alpha, beta)
    fail_once(worker, alpha)

    assert status_of(worker, alpha) == Annotator.Status.BLOCKED
    assert status_of(worker, beta) == Annotator.Status.ACTIVE
    with pytest.raises(WorkRefused, match="blocked in Alpha"):
        reserve_next_hit(worker, alpha, "fv", confirmed=True)
    assert reserve_next_hit(worker, beta, "fv", confirmed=True) is not None
    # The block decision is alpha's, and carried out it blocks in alpha only (its provider block names alpha too).
    block = Decision.objects.get(kind=Decision.Kind.BLOCK)
    assert block.project == alpha and list(block.rests_on.all()) == list(worker.assignments.filter(
        hit__project=alpha, status="submitted"))


class RecordingProlific:
    name = "prolific"

    def __init__(self):
        self.calls = []

    def block(self, *, worker_id, reason, project):
        self.calls.append(("block", project.slug))
        return {}


def test_a_block_carried_out_by_the_outbox_sets_the_status_of_its_project_only(two_projects):
    alpha, beta = two_projects
    worker = crowd_annotator("both", alpha, beta)
    decision = Decision.objects.create(project=beta, annotator=worker, kind=Decision.Kind.BLOCK, reason="Manager",
                                       idempotency_key="manual:block:test")
    prolific = RecordingProlific()
    assert outbox.execute_decision(decision.pk, providers={("prolific", None): prolific}) == "done"
    assert prolific.calls == [("block", beta.slug)]
    assert (status_of(worker, alpha), status_of(worker, beta)) == (Annotator.Status.ACTIVE, Annotator.Status.BLOCKED)


def status_url(project, annotator) -> str:
    return f"/projects/{project.slug}/quality/annotators/{annotator.public_id}/status/"


def test_a_manager_of_one_project_cannot_unblock_in_another(two_projects, manager, outsider, annotator, client,
                                                            django_user_model):
    alpha, beta = two_projects  # `manager` manages alpha, `outsider` manages beta
    worker = crowd_annotator("both", alpha, beta)
    fail_once(worker, alpha)
    fail_once(worker, beta)
    assert status_of(worker, alpha) == status_of(worker, beta) == Annotator.Status.BLOCKED

    # alpha's manager: nothing to say in beta (not a member there: 404), unblocks in alpha only.
    client.force_login(manager)
    assert client.post(status_url(beta, worker), {"status": "active", "reason": "x"}).status_code == 404
    assert status_of(worker, beta) == Annotator.Status.BLOCKED
    assert client.post(status_url(alpha, worker), {"status": "active", "reason": "Appeal"}).status_code == 302
    assert (status_of(worker, alpha), status_of(worker, beta)) == (Annotator.Status.ACTIVE, Annotator.Status.BLOCKED)
    unblock = Decision.objects.get(kind=Decision.Kind.UNBLOCK)
    assert (unblock.project, unblock.created_by) == (alpha, manager)
    # Each project's pages show the status there.
    for url in (f"/projects/{alpha.slug}/annotators/", f"/projects/{alpha.slug}/crowd/"):
        page = client.get(url).content.decode()
        assert worker.pseudonym in page and "Active" in page and "Blocked" not in page
    # An annotator of beta (the wrong role) is refused; beta's own manager may.
    beta_annotator = django_user_model.objects.create_user("bo", password="pw-bo-1")
    Membership.objects.create(project=beta, user=beta_annotator, role=Membership.Role.ANNOTATOR)
    client.force_login(beta_annotator)
    assert client.post(status_url(beta, worker), {"status": "active", "reason": "x"}).status_code == 403
    assert status_of(worker, beta) == Annotator.Status.BLOCKED
    client.force_login(outsider)
    assert "Blocked" in client.get(f"/projects/{beta.slug}/annotators/").content.decode()
    assert client.post(status_url(beta, worker), {"status": "active", "reason": "Appeal"}).status_code == 302
    assert status_of(worker, beta) == Annotator.Status.ACTIVE


def test_the_permission_names_one_project_and_an_annotator_who_worked_there(two_projects, manager, outsider):
    alpha, beta = two_projects
    only_beta = crowd_annotator("beta-only", beta)
    fail_once(only_beta, beta)
    set_status(only_beta, beta, Annotator.Status.BLOCKED)
    with pytest.raises(Http404):  # never worked in alpha: alpha's manager cannot reach them through alpha
        get_annotator_standing(manager, alpha.slug, only_beta.public_id)
    with pytest.raises(Http404):  # alpha's manager is nobody in beta
        get_annotator_standing(manager, beta.slug, only_beta.public_id)
    standing = get_annotator_standing(outsider, beta.slug, only_beta.public_id)
    assert (standing.project, standing.annotator, standing.status) == (beta, only_beta, Annotator.Status.BLOCKED)
