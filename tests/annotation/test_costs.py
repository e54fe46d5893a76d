"""The cost page: labels spent, projected and saved against the fixed design, checked by hand on a small project.
The page shows them as stored numbers (kind "costs"); `project_costs`, which decides on the budget, reads them now."""

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.job_kinds import COSTS
from annotation.models import Assignment, Decision, Hit, LedgerEntry, UnitState
from annotation.redundancy import Verdict
from annotation.services.costs import costs_basis, project_costs, settle_times, stored_costs
from annotation.services.topups import topups_build
from corpus.models import Job, RedundancyPolicy, Snapshot
from corpus.snapshots import fingerprint_of, numbers_state
from tests.conftest import numbers_now
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


def test_the_page_shows_the_saving_to_managers_only(client, labelled, manager, annotator, outsider, numbers_worker):
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


def test_time_to_settle_runs_from_an_items_first_label_to_the_one_that_settled_it(labelled, client, manager,
                                                                                 numbers_worker):
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


def pay(assignment, amount: str) -> None:
    """A reward in the ledger for `assignment`, as an approval pays it."""
    decision = Decision.objects.create(project=assignment.hit.project, annotator=assignment.annotator,
                                       assignment=assignment, kind=Decision.Kind.APPROVE, status=Decision.Status.DONE,
                                       idempotency_key=f"approve:{assignment.pk}")
    LedgerEntry.objects.create(project=assignment.hit.project, annotator=assignment.annotator, decision=decision,
                               provider="prolific", kind=LedgerEntry.Kind.REWARD, amount_usd=Decimal(amount))


def test_the_stored_figures_rebuild_the_costs_of_the_labels_as_they_are_now(labelled):
    project, hit = labelled
    start = timezone.now() - timedelta(days=1)
    for name, hours in (("ann", 0), ("bea", 2), ("cid", 7)):
        Assignment.objects.filter(annotator__external_id=name).update(submitted_at=start + timedelta(hours=hours))
    numbers_now(project, COSTS)
    stored = stored_costs(project)
    assert stored.state.current
    # Through the database's JSON and back: the same dataclass, rows, rounds, shares and money as the live function.
    assert stored.costs == project_costs(project)
    assert stored.costs.total == project_costs(project).total and stored.costs.tasks[0].settled > 0
    assert stored.times == settle_times(project)


def test_the_page_shows_a_button_until_the_figures_are_computed_and_reads_money_now(client, labelled, manager,
                                                                                     django_capture_on_commit_callbacks):
    project, hit = labelled
    client.force_login(manager)
    url = reverse("costs", args=[project.slug])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        html = client.get(url).content.decode()
    assert not queued and not Job.objects.exists()
    assert "Not computed yet" in html and 'id="money"' not in html
    numbers_now(project, COSTS)
    html = client.get(url).content.decode()
    assert "Up to date" in html and f"{project_costs(project).total['saved']} USD" in html
    # Money paid is read from the ledger now: the stored figures stay current and the page shows the payment.
    assignment = Assignment.objects.filter(hit__project=project).order_by("pk").first()
    pay(assignment, "12.34")
    html = client.get(url).content.decode()
    assert numbers_state(project, COSTS).current and "12.34 USD" in html
    # Older figures stay on the page under the fragment's note, with its button.
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.DISCARDED)
    html = client.get(url).content.decode()
    assert "Older than the data" in html and 'id="money"' in html and "12.34 USD" in html
    assert not Job.objects.filter(status=Job.Status.QUEUED).exists()


def _discard(project):
    Assignment.objects.filter(pk=Assignment.objects.filter(hit__project=project).order_by("pk").first().pk).update(
        status=Assignment.Status.DISCARDED)


def _new_submission(project):
    work_next_hit(crowd_annotator("dan", project), project, "fv")


def _confirmation(project):
    Assignment.objects.filter(pk=Assignment.objects.filter(hit__project=project).order_by("pk").first().pk).update(
        confirmed_at=timezone.now() + timedelta(seconds=5))


def _escalation(project):
    # As the budget's cap does it (annotation.services.topups): the verdict only, no `updated`.
    state = UnitState.objects.filter(project=project, verdict=Verdict.SETTLED).first()
    UnitState.objects.filter(pk=state.pk).update(verdict=Verdict.ESCALATED)


def _settled_round(project):
    state = UnitState.objects.filter(project=project, verdict=Verdict.SETTLED).first()
    UnitState.objects.filter(pk=state.pk).update(settled_round=(state.settled_round or 0) + 1)


def _state_counted(project):
    state = UnitState.objects.filter(project=project).first()
    UnitState.objects.filter(pk=state.pk).update(counted=state.counted + 1, updated=state.updated)


def _state_written(project):
    state = UnitState.objects.filter(project=project).first()
    UnitState.objects.filter(pk=state.pk).update(updated=timezone.now() + timedelta(seconds=5))


def _new_hit(project):
    from annotation.services.hits import build_hits

    Hit.objects.filter(project=project, task="kv").delete()
    build_hits(project, "kv")


def _setting(name, value):
    def change(project):
        setattr(project, name, value)
        project.save(update_fields=[name])
    return change


def _data_job(project):
    Job.objects.create(project=project, kind="hits_build", status=Job.Status.DONE, finished=timezone.now())


MOVES = {
    "a new counted submission": _new_submission,
    "a discard": _discard,
    "a confirmation": _confirmation,
    "an escalation": _escalation,
    "a settled round": _settled_round,
    "a unit state's labels": _state_counted,
    "a unit state written": _state_written,
    "a HIT build": _new_hit,
    "the wage": _setting("hourly_wage_usd", Decimal("20.00")),
    "N": _setting("annotators_per_unit", 5),
    "the policy": _setting("redundancy_policy", RedundancyPolicy.LEAD),
    "the lead margin": _setting("lead_margin", 3),
    "the lead cap": _setting("lead_cap", 7),
    "the check rate": _setting("attention_check_rate", 0.5),
    "a job that changes data": _data_job,
}


@pytest.mark.parametrize("change", MOVES.values(), ids=MOVES.keys())
def test_the_basis_moves_with_whatever_changes_a_stored_figure(labelled, change):
    project, hit = labelled
    before = fingerprint_of(costs_basis(project))
    change(project)
    project.refresh_from_db()
    assert fingerprint_of(costs_basis(project)) != before


def test_the_basis_stays_when_only_live_money_changes(labelled):
    project, hit = labelled
    numbers_now(project, COSTS)
    pay(Assignment.objects.filter(hit__project=project).order_by("pk").first(), "1.00")
    project.budget_usd = Decimal("5.00")
    project.save(update_fields=["budget_usd"])
    work = first_round_hit(project, "kv")
    Assignment.objects.create(hit=work, annotator=crowd_annotator("eve", project), status=Assignment.Status.RESERVED,
                              expires_at=timezone.now() + timedelta(hours=1))
    assert numbers_state(project, COSTS).current and Snapshot.objects.filter(kind=COSTS).count() == 1
    assert stored_costs(project).costs == project_costs(project)
