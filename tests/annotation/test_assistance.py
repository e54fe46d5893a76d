"""Per-HIT assistance (the paper's ablation, 3.4): managers set it on a HIT, or on a random share of a task's HITs,
while nobody has started them; the annotator then sees, and is asked, what that level shows."""

import pytest
from django.urls import reverse

from annotation.models import Hit
from annotation.services.assignment import reserve_next_hit
from annotation.services.assistance import AssistanceRefused, assign_ablation, set_hit_assistance
from corpus.models import Assistance
from tests.work import annotator_for, complete, crowd_annotator

pytestmark = pytest.mark.django_db


def first_fv_hit(project) -> Hit:
    return Hit.objects.filter(project=project, task="fv").order_by("position").first()


def test_a_hit_set_to_no_assistance_hides_the_ai_and_its_question(client, corpus, manager, annotator):
    hit = first_fv_hit(corpus)
    client.force_login(manager)
    response = client.post(reverse("hit_assistance", args=[corpus.slug, hit.public_id]), {"assistance": "none"})
    assert response.status_code == 302
    hit.refresh_from_db()
    assert hit.assistance == "none" and hit.effective_assistance == "none"

    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    assert assignment.hit == hit
    client.force_login(annotator)
    html = client.get(reverse("hit_page", args=[assignment.public_id])).content.decode()
    assert 'class="ai-judgment"' not in html and 'name="u0-ai_right"' not in html
    assert 'name="u0-has_error"' in html

    # Another HIT of the project keeps the project's level: AI judgment and "is the AI right?" are there.
    second = Hit.objects.filter(project=corpus, task="fv").exclude(pk=hit.pk).first()
    assert second.effective_assistance == Assistance.REASON


def test_a_started_hit_keeps_its_level(client, corpus, manager):
    hit = first_fv_hit(corpus)
    assignment = reserve_next_hit(crowd_annotator("a"), corpus, "fv", confirmed=True)
    assert assignment.hit == hit
    client.force_login(manager)
    response = client.post(reverse("hit_assistance", args=[corpus.slug, hit.public_id]), {"assistance": "none"})
    assert response.status_code == 400
    assert "its labels belong to the level that person saw" in response.content.decode()
    hit.refresh_from_db()
    assert hit.assistance == ""
    detail = client.get(reverse("hit_detail", args=[corpus.slug, hit.public_id])).content.decode()
    assert "Fixed: somebody has started this HIT" in detail

    complete(assignment)  # Submitted: still fixed.
    with pytest.raises(AssistanceRefused):
        set_hit_assistance(hit=hit, level="highlights")


def test_an_unknown_level_is_refused_with_the_choices(client, corpus, manager):
    hit = first_fv_hit(corpus)
    client.force_login(manager)
    response = client.post(reverse("hit_assistance", args=[corpus.slug, hit.public_id]), {"assistance": "all"})
    assert response.status_code == 400
    assert "Unknown assistance level “all”: use one of none, highlights, label, reason" in response.content.decode()
    hit.refresh_from_db()
    assert hit.assistance == ""


def test_only_the_projects_managers_may_set_assistance(client, corpus, other_project, manager, annotator,
                                                       outsider):
    hit = first_fv_hit(corpus)
    url = reverse("hit_assistance", args=[corpus.slug, hit.public_id])
    assert client.post(url, {"assistance": "none"}).status_code == 302  # To the login page.
    for user, status in ((annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.post(url, {"assistance": "none"}).status_code == status
    # The outsider manages another project: this HIT is not reachable through that project's URL either.
    assert client.post(reverse("hit_assistance", args=[other_project.slug, hit.public_id]),
                       {"assistance": "none"}).status_code == 404
    hit.refresh_from_db()
    assert hit.assistance == ""
    client.force_login(manager)
    assert client.post(url, {"assistance": "none"}).status_code == 302


def test_the_ablation_draws_a_reproducible_share_of_the_hits_nobody_started(corpus):
    from tests.work import import_generated

    import_generated(corpus, documents=6, summarizers=4)
    from annotation.services.hits import build_hits

    build_hits(corpus, "fv")
    hits = Hit.objects.filter(project=corpus, task="fv")
    started = reserve_next_hit(crowd_annotator("a"), corpus, "fv", confirmed=True).hit
    total = hits.count()

    result = assign_ablation(project=corpus, task="fv", level="none", share=0.5, seed=7)
    assert (result.eligible, result.started) == (total - 1, 1)
    chosen = set(hits.filter(assistance="none").values_list("pk", flat=True))
    assert len(chosen) == result.chosen == int(0.5 * (total - 1) + 0.5) and started.pk not in chosen

    # The same seed over the same HITs draws the same ones; another seed (almost surely) others.
    assign_ablation(project=corpus, task="fv", level="none", share=0.5, seed=7)
    assert set(hits.filter(assistance="none").values_list("pk", flat=True)) == chosen
    assign_ablation(project=corpus, task="fv", level="none", share=0.5, seed=8)
    assert set(hits.filter(assistance="none").values_list("pk", flat=True)) != chosen
    # Back to the project's level everywhere but on the started HIT.
    assign_ablation(project=corpus, task="fv", level="none", share=0, seed=8)
    assert not hits.filter(assistance="none").exists()
    with pytest.raises(AssistanceRefused, match="between 0% and 100%"):
        assign_ablation(project=corpus, task="fv", level="none", share=1.5, seed=8)


def test_the_ablation_form_reports_bad_input_and_changes_nothing(client, corpus, manager):
    client.force_login(manager)
    url = reverse("hits_ablation", args=[corpus.slug])
    response = client.post(url, {"task": "fv", "assistance": "none", "share": "half", "seed": "x"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "The share is a percentage" in html and "The seed is a whole number" in html
    assert "Nothing was changed" in html
    assert not Hit.objects.filter(project=corpus).exclude(assistance="").exists()
    response = client.post(url, {"task": "fv", "assistance": "highlights", "share": "100", "seed": "1"})
    assert response.status_code == 302
    assert set(Hit.objects.filter(project=corpus, task="fv").values_list("assistance", flat=True)) == {"highlights"}
    listing = client.get(reverse("hit_list", args=[corpus.slug]) + "?task=fv").content.decode()
    assert "<strong>Highlights only</strong>" in listing


@pytest.mark.parametrize("share, seed, message", [
    ("NaN", "1", "The share is a percentage between 0 and 100."),
    ("Infinity", "1", "The share is a percentage between 0 and 100."),
    ("-Infinity", "1", "The share is a percentage between 0 and 100."),
    ("100.5", "1", "The share is a percentage between 0 and 100."),
    ("50", "-1", "The seed is a whole number, 0 or more."),
    ("50", "1e3", "The seed is a whole number, 0 or more."),
])
def test_the_ablation_form_refuses_numbers_that_are_not_in_range(client, corpus, manager, share, seed, message):
    client.force_login(manager)
    response = client.post(reverse("hits_ablation", args=[corpus.slug]),
                           {"task": "fv", "assistance": "none", "share": share, "seed": seed})
    assert response.status_code == 400 and f"{message} Nothing was changed." in response.content.decode()
    assert not Hit.objects.filter(project=corpus).exclude(assistance="").exists()


def test_the_api_sets_a_hits_assistance_for_managers_only(client, corpus, manager, annotator):
    from rest_framework.test import APIClient

    hit = first_fv_hit(corpus)
    url = f"/api/hits/{hit.public_id}/assistance/"
    api = APIClient()
    api.force_authenticate(manager)
    response = api.post(url, {"assistance": "label"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["assistance"] == "label" and response.json()["assistance_override"] == "label"
    assert api.post(url, {"assistance": "everything"}, format="json").status_code == 400

    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    assert assignment.hit == hit
    conflict = api.post(url, {"assistance": ""}, format="json")
    assert conflict.status_code == 409 and "can no longer change" in conflict.json()["detail"]

    api.force_authenticate(annotator)  # Holds the HIT, so may read it, but not change it.
    assert api.get(f"/api/hits/{hit.public_id}/").status_code == 200
    assert api.post(url, {"assistance": "none"}, format="json").status_code == 403
    hit.refresh_from_db()
    assert hit.assistance == "label"
