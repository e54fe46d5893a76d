"""simulate_annotations beside real work: it fills only the places real annotators left, and the progress page tells
simulated work from real work."""

import pytest
from django.core.management import call_command
from django.db.models import Count, Q
from django.urls import reverse

from annotation.models import Assignment, Hit
from annotation.services.assignment import reserve_next_hit
from exports.simulate import simulate_annotations
from tests.work import annotator_for, build_all, complete, import_small

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(project):
    import_small(project)
    build_all(project)
    return project


def simulated_and_real(hit) -> tuple[int, int]:
    counts = Assignment.objects.filter(hit=hit, status=Assignment.Status.SUBMITTED).aggregate(
        simulated=Count("pk", filter=Q(annotator__provider="simulated")),
        real=Count("pk", filter=~Q(annotator__provider="simulated")))
    return counts["simulated"], counts["real"]


def test_it_fills_only_the_places_real_work_left(corpus, annotator, other_annotator):
    assert corpus.annotators_per_unit == 3
    done = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    complete(done)
    held = reserve_next_hit(annotator_for(other_annotator), corpus, "fv", confirmed=True)  # a live reservation holds a place too
    assert held.hit == done.hit

    result = simulate_annotations(project=corpus, annotators=3, accuracy=0.9, seed=2)

    # One real submission and one real reservation: one place left for the simulated annotators.
    assert simulated_and_real(done.hit) == (1, 1)
    for hit in Hit.objects.filter(project=corpus, task="fv").exclude(pk=done.hit_id):
        assert simulated_and_real(hit) == (3, 0)
    for hit in Hit.objects.filter(project=corpus):
        assert Assignment.objects.holding_a_place().filter(hit=hit).count() <= corpus.annotators_per_unit, hit
    fv_hits = Hit.objects.filter(project=corpus, task="fv").count()
    assert result.hits_by_task["fv"] == fv_hits
    # The real annotator who submitted can still not be given the HIT again, and the one who holds a place keeps it.
    held.refresh_from_db()
    assert held.status == Assignment.Status.RESERVED


def test_running_it_again_adds_nothing_to_full_hits(corpus):
    first = simulate_annotations(project=corpus, annotators=3, accuracy=0.9, seed=2)
    again = simulate_annotations(project=corpus, annotators=5, accuracy=0.9, seed=3)
    assert first.assignments > 0 and again.assignments == 0 and again.labels == 0


def test_the_progress_page_shows_simulated_and_real_submissions_apart(client, manager, corpus, annotator):
    complete(reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True))
    call_command("simulate_annotations", "--project", corpus.slug, "--annotators", "3", verbosity=0)
    real = Assignment.objects.counted().filter(hit__project=corpus, hit__task="fv").exclude(
        annotator__provider="simulated").count()
    simulated = Assignment.objects.counted().filter(hit__project=corpus, hit__task="fv",
                                                     annotator__provider="simulated").count()
    assert real == 1 and simulated > 0
    client.force_login(manager)
    page = client.get(reverse("progress", args=[corpus.slug])).content.decode()
    assert "Simulated submissions" in page and "Real submissions" in page
    fv = page.split("<h2>Fact verification</h2>")[1].split("</section>")[0]
    total = fv.split("<tfoot>")[1]
    needed = Hit.objects.filter(project=corpus, task="fv").count() * corpus.annotators_per_unit
    assert f'<th class="num real">{real} / {needed}</th>' in total
    assert f'<th class="num simulated">{simulated}</th>' in total
    assert "simulated (pilot) submissions" in page
