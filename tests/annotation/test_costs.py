"""The cost page: labels spent, projected and saved against the fixed design, checked by hand on a small project."""

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Hit, UnitState
from annotation.redundancy import Verdict
from annotation.services.costs import project_costs, settle_times
from annotation.services.topups import topups_build
from corpus.models import RedundancyPolicy
from tests.work import crowd_annotator, first_round_hit, work_next_hit

pytestmark = pytest.mark.django_db


def cents(amount) -> Decimal:
    return Decimal(amount).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


@pytest.fixture
def labelled(adaptive):
    """One FV HIT labelled by two annotators who split on one sentence, and the third label it then needed."""
    hit = first_round_hit(adaptive, "fv")
    split = hit.units.order_by("position").first()
    work_next_hit(crowd_annotator("ann", adaptive), adaptive, "fv")
    work_next_hit(crowd_annotator("bea", adaptive), adaptive, "fv", split=split)
    topups_build(adaptive)
    work_next_hit(crowd_annotator("cid", adaptive), adaptive, "fv", split=split)
    return adaptive, hit


def test_it_counts_the_labels_and_what_they_saved_by_hand(labelled, settings):
    project, hit = labelled
    sentences = hit.units.count()
    costs = project_costs(project)
    fv = costs.tasks[0]
    # Every sentence of the HIT settled: all with two labels, one with three.
    assert (fv.settled, fv.labels, fv.labels_of_settled, fv.escalated) == (sentences, 2 * sentences + 1,
                                                                          2 * sentences + 1, 0)
    assert costs.saved_labels(fv) == 3 * sentences - (2 * sentences + 1)
    per_label = Decimal("10.88") * Decimal(settings.FINEGRAIN_SECONDS_PER_UNIT) / Decimal(3600)
    assert costs.label_usd == per_label and costs.check_share == 0
    assert costs.money(fv)["saved"] == cents((sentences - 1) * per_label)
    assert costs.money(fv)["spent"] == cents((2 * sentences + 1) * per_label)
    # One of the sentences judged after its first round needed a label more.
    assert costs.split_share == pytest.approx(1 / sentences)
    assert [(n, count) for n, count in zip(range(2), [sentences - 1, 1])] == \
        [(r, sum(row.rounds[r] for row in costs.tasks)) for r in range(2)]


def test_the_page_shows_the_saving_to_managers_only(client, labelled, manager, annotator, outsider):
    project, hit = labelled
    url = reverse("costs", args=[project.slug])
    client.force_login(manager)
    page = client.get(url)
    assert page.status_code == 200
    saved = project_costs(project).total["saved"]
    assert saved > 0 and f"{saved} USD" in page.content.decode()
    assert b"Rounds to settle" in page.content and b"Majority vote is the label of record" in page.content
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_a_fixed_project_saves_nothing(client, project, manager):
    from tests.work import build_all, import_small

    import_small(project)
    build_all(project)
    for name in ("ann", "bea", "cid"):
        work_next_hit(crowd_annotator(name, project), project, "fv")
    costs = project_costs(project)
    assert costs.total["saved"] == 0 and costs.tasks[0].settled == Hit.objects.get(
        project=project, task="fv", position=first_round_hit(project, "fv").position).units.count()


def test_under_lead_the_projection_counts_the_two_labels_a_split_asks(adaptive):
    adaptive.redundancy_policy = RedundancyPolicy.LEAD
    adaptive.save(update_fields=["redundancy_policy"])
    hit = first_round_hit(adaptive, "fv")
    split = hit.units.order_by("position")[1]
    work_next_hit(crowd_annotator("ann", adaptive), adaptive, "fv")
    work_next_hit(crowd_annotator("bea", adaptive), adaptive, "fv", split=split)
    costs = project_costs(adaptive)
    judged = UnitState.objects.filter(project=adaptive).exclude(verdict=Verdict.COLLECTING).count()
    assert costs.split_share == pytest.approx(1 / judged)
    assert costs.expected_extra == pytest.approx(2 / judged)


def test_time_to_settle_runs_from_an_items_first_label_to_the_one_that_settled_it(labelled, client, manager):
    project, hit = labelled
    start = timezone.now() - timedelta(days=1)
    for name, hours in (("ann", 0), ("bea", 1), ("cid", 5)):
        Assignment.objects.filter(annotator__external_id=name).update(submitted_at=start + timedelta(hours=hours))
    sentences = hit.units.count()
    fv = settle_times(project)["fv"]
    # Every sentence but one settled when bea's label came (1 h after ann's); the split one when cid's did (5 h).
    assert fv["n"] == sentences and fv["median"] == pytest.approx(1.0)
    assert fv["p90"] == pytest.approx(5.0 if sentences <= 6 else 1.0)
    assert settle_times(project)["kv"] == {"median": None, "p90": None, "n": 0}
    client.force_login(manager)
    page = client.get(reverse("costs", args=[project.slug])).content.decode()
    assert "1.0 h</td>" in page and "Time to settle" in page
