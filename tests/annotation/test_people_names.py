"""Who a pseudonym is: the managers and reviewers of a project see the username of an in-house annotator beside the
pseudonym (managers with a link to People); crowd workers stay pseudonymous on every page, and exports name nobody."""

import pytest
from django.template import Context, Template
from django.test import RequestFactory
from django.urls import reverse

from corpus.models import Membership
from tests.work import annotator_for, crowd_annotator, work_through

pytestmark = pytest.mark.django_db


@pytest.fixture
def worked(corpus, annotator):
    """The in-house annotator `ann` and the crowd worker `worker-7731` have each submitted a KV HIT."""
    inhouse, worker = annotator_for(annotator), crowd_annotator("worker-7731", corpus)
    return work_through(inhouse, corpus, "kv"), work_through(worker, corpus, "kv")


def people_link(user) -> str:
    return f'<a class="person" href="{reverse("people", args=["alpha"])}#person-{user.pk}"'


def test_a_manager_sees_the_person_beside_the_pseudonym_on_every_page_that_names_annotators(
        client, corpus, manager, annotator, worked):
    inhouse, worker = (assignment.annotator for assignment in worked)
    client.force_login(manager)
    pages = {
        "annotators": reverse("annotator_list", args=["alpha"]),
        "HIT": reverse("hit_detail", args=["alpha", worked[0].hit.public_id]),
        "quality of one annotator": reverse("annotator_quality", args=["alpha", inhouse.public_id]),
    }
    for name, url in pages.items():
        html = client.get(url).content.decode()
        assert inhouse.pseudonym in html and people_link(annotator) + ' title="Who this is, on People">ann</a>' \
            in html, name
        assert "worker-7731" not in html, name
    html = client.get(reverse("annotator_list", args=["alpha"])).content.decode()
    assert worker.pseudonym in html and html.count('class="person"') == 1


def tag_for(user, project, annotator) -> str:
    request = RequestFactory().get("/")
    request.user = user
    return Template("{% load people %}{% person annotator %}").render(Context(
        {"request": request, "project": project, "annotator": annotator}))


def test_a_reviewer_sees_the_username_without_the_link_and_an_annotator_sees_only_pseudonyms(
        corpus, annotator, other_annotator, django_user_model, worked):
    inhouse, worker = (assignment.annotator for assignment in worked)
    reviewer = django_user_model.objects.create_user("rita")
    Membership.objects.create(project=corpus, user=reviewer, role=Membership.Role.REVIEWER)
    assert tag_for(reviewer, corpus, inhouse) == f'<code>{inhouse.pseudonym}</code> <span class="person">ann</span>'
    assert tag_for(other_annotator, corpus, inhouse) == f"<code>{inhouse.pseudonym}</code>"
    assert tag_for(reviewer, corpus, worker) == f"<code>{worker.pseudonym}</code>"


def test_a_username_is_escaped(corpus, manager, django_user_model):
    user = django_user_model.objects.create_user("<b>x</b>")
    inhouse = annotator_for(user)
    assert "<b>x</b>" not in tag_for(manager, corpus, inhouse) and "&lt;b&gt;x&lt;/b&gt;" in tag_for(
        manager, corpus, inhouse)


def test_the_annotator_home_says_what_the_pseudonym_is_for(client, corpus, annotator):
    client.force_login(annotator)
    html = client.get(reverse("work_home")).content.decode()
    assert f"pseudonym <code>{annotator_for(annotator).pseudonym}</code>" in html
    assert "never names you" in html


def test_the_link_lands_on_the_person_on_people(client, corpus, manager, annotator):
    client.force_login(manager)
    html = client.get(reverse("people", args=["alpha"])).content.decode()
    assert f'<tr id="person-{annotator.pk}"><td>ann</td>' in html
