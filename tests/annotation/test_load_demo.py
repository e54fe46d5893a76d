"""`load_demo`: the demo project and its accounts (a manager, three annotators so that every unit can get the
protocol's three labels in the browser, a reviewer), and running it again changes nobody's password or role."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from corpus.models import Membership, Project

pytestmark = pytest.mark.django_db


def load(*args) -> str:
    out = StringIO()
    call_command("load_demo", "--no-assist", *args, stdout=out, verbosity=0)
    return out.getvalue()


def test_it_creates_the_demo_accounts_with_the_password_given():
    text = load("--password", "pw-first-run")
    project = Project.objects.get(slug="demo")
    manager = authenticate(username="manager", password="pw-first-run")
    annotator = authenticate(username="annotator", password="pw-first-run")
    # A manager may create projects, and like every account but the operators' stays out of the Django admin.
    assert manager.has_perm("corpus.add_project") and not manager.is_staff
    assert not annotator.has_perm("corpus.add_project") and not annotator.is_staff
    roles = dict(project.memberships.values_list("user__username", "role"))
    assert roles == {"manager": Membership.Role.MANAGER, "annotator": Membership.Role.ANNOTATOR,
                     "annotator2": Membership.Role.ANNOTATOR, "annotator3": Membership.Role.ANNOTATOR,
                     "reviewer": Membership.Role.REVIEWER}
    assert "with the password 'pw-first-run'" in text
    # The server started next says where it listens (make demo HOST=...); an address here could contradict it.
    assert "http://" not in text


def test_three_annotators_bring_a_documents_key_facts_to_a_majority_and_its_alignment_hits_appear():
    import random

    from annotation.models import Hit
    from annotation.services.answers import save_answers
    from annotation.services.assignment import reserve_next_hit, submit_assignment
    from tests.quality import scripted
    from tests.work import annotator_for

    load()
    project = Project.objects.get(slug="demo")
    assert not Hit.objects.filter(project=project, task="ka").exists()
    for membership in project.memberships.filter(role=Membership.Role.ANNOTATOR).select_related("user"):
        assignment = reserve_next_hit(annotator_for(membership.user), project, "kv", confirmed=True)
        save_answers(assignment=assignment, answers=scripted.answers(assignment, scripted.careful, random.Random(1)))
        submit_assignment(assignment=assignment)
    assert Hit.objects.filter(project=project, task="ka").exists()


def test_running_it_again_keeps_every_password_and_role(django_user_model):
    load("--password", "pw-first-run")
    manager = django_user_model.objects.get(username="manager")
    manager.set_password("changed-by-the-manager")
    manager.save()
    project = Project.objects.get(slug="demo")
    project.memberships.filter(user__username="annotator").update(role=Membership.Role.MANAGER)

    text = load()  # the default password this time
    assert authenticate(username="manager", password="changed-by-the-manager") is not None
    assert authenticate(username="manager", password="finegrain-demo") is None
    assert authenticate(username="annotator", password="pw-first-run") is not None
    assert project.memberships.get(user__username="annotator").role == Membership.Role.MANAGER
    assert "Existing accounts keep their passwords: manager, annotator, annotator2, annotator3, reviewer." in text
    assert "finegrain-demo" not in text
    assert Project.objects.filter(slug="demo").count() == 1


def test_the_demo_collects_adaptively_and_its_cost_page_shows_what_the_three_annotators_saved(client):
    from django.contrib.auth import get_user_model

    from annotation.models import Hit
    from annotation.services.costs import project_costs
    from annotation.services.topups import topups_build
    from tests.conftest import numbers_now
    from tests.work import annotator_for, first_round_hit, work_next_hit

    load("--password", "pw-demo-run")
    project = Project.objects.get(slug="demo")
    assert project.redundancy_policy == "adaptive"
    users = get_user_model().objects
    first, second, third = (annotator_for(users.get(username=name))
                            for name in ("annotator", "annotator2", "annotator3"))
    split = first_round_hit(project, "fv").units.filter(attention_check__isnull=True).order_by("position").first()
    work_next_hit(first, project, "fv")
    work_next_hit(second, project, "fv", split=split)
    topups_build(project)
    topup = work_next_hit(third, project, "fv", split=split)
    assert topup.hit.round == 1 and Hit.objects.filter(project=project, round=1).count() == 1
    saved = project_costs(project).total["saved"]
    assert saved > 0
    client.force_login(users.get(username="manager"))
    numbers_now(project, "costs")  # the cost figures, as the manager's button and a worker compute them
    assert f"{saved} USD" in client.get(f"/projects/{project.slug}/costs/").content.decode()
