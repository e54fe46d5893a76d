"""simulate_annotations under each redundancy policy, with the crowd calibrated to the paper: first-round HITs get
their round's places, settling and top-ups go through the real services, and the run ends when every item is
settled or sent to review."""

from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count
from django.db.models.functions import Coalesce

from annotation.models import Assignment, Grade, Hit, Label, Unit, UnitState
from annotation.redundancy import Verdict
from annotation.services.settling import first_round_units
from corpus.models import Project, RedundancyPolicy
from exports.label_streams import CAREFUL, CARELESS, Crowd, draw_pool
from exports.simulate import PAPER, simulate_annotations
from tests.conftest import project_built_once
from tests.work import import_generated

# Each test builds and labels a whole small project: the slower tier.
pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SEED = 1


def small_project(slug: str, policy: str, *, cap: int = 5, checks: float = 0.2) -> Project:
    """Eight documents, three summaries of four sentences each, two candidate key-facts per document; attention
    checks at the protocol's 20%."""
    return corpus_of(Project.objects.create(slug=slug, name=slug), policy, cap=cap, checks=checks)


def corpus_of(project: Project, policy: str, *, cap: int = 5, checks: float = 0.2) -> Project:
    project.redundancy_policy, project.lead_cap = policy, cap
    project.save(update_fields=["redundancy_policy", "lead_cap"])
    import_generated(project, documents=8, summarizers=3, sentences=4)
    project.attention_check_rate = checks
    project.save(update_fields=["attention_check_rate"])
    return project


def simulated(policy: str, *, cap: int = 5, checks: float = 0.2) -> Project:
    project = small_project(f"sim-{policy}", policy, cap=cap, checks=checks)
    simulate_annotations(project=project, crowd=PAPER, seed=SEED)
    return project


def simulated_once(policy: str):
    """The simulation under `policy` with the defaults, run once for the module's tests that only read it."""

    def build(project: Project) -> None:
        simulate_annotations(project=corpus_of(project, policy), crowd=PAPER, seed=SEED)

    return project_built_once(build, slug=f"once-{policy}", name=f"once-{policy}")


fixed_once = simulated_once(RedundancyPolicy.FIXED)
adaptive_once = simulated_once(RedundancyPolicy.ADAPTIVE)
lead_once = simulated_once(RedundancyPolicy.LEAD)


@pytest.fixture(scope="module")
def simulations(fixed_once, adaptive_once, lead_once) -> dict[str, int]:
    return {RedundancyPolicy.FIXED: fixed_once, RedundancyPolicy.ADAPTIVE: adaptive_once, RedundancyPolicy.LEAD: lead_once}


def items(project: Project) -> dict[tuple, UnitState]:
    """Each item's state, keyed by what it shows (the same in two projects imported from the same rows)."""
    return {(state.task, state.unit.text, state.unit.sentence_text): state
            for state in UnitState.objects.filter(project=project).select_related("unit")}


@pytest.mark.parametrize("policy", [RedundancyPolicy.FIXED, RedundancyPolicy.ADAPTIVE, RedundancyPolicy.LEAD])
def test_it_ends_with_every_item_settled_or_sent_to_review(policy, simulations):
    project = Project.objects.get(pk=simulations[policy])
    for task in ("kv", "fv", "ka"):
        real = first_round_units(Unit.objects.filter(hit__project=project, task=task, hit__round=0))
        assert real, task
        verdicts = dict(UnitState.objects.filter(unit_id__in=real).values_list("unit_id", "verdict"))
        assert set(verdicts) == set(real), task
        assert set(verdicts.values()) <= {Verdict.SETTLED, Verdict.ESCALATED}, task
    # Every HIT got its places filled with submissions that count; top-ups only where the policy asks for them.
    for hit in Hit.objects.filter(project=project):
        assert Assignment.objects.counted().filter(hit=hit).count() == hit.places, hit
    topups = Hit.objects.filter(project=project, round__gt=0)
    assert topups.exists() == (policy != RedundancyPolicy.FIXED)


@pytest.mark.parametrize("policy", [RedundancyPolicy.ADAPTIVE, RedundancyPolicy.LEAD])
def test_nobody_labels_an_item_twice_across_its_first_hit_and_its_top_ups(policy, simulations):
    project = Project.objects.get(pk=simulations[policy])
    assert Hit.objects.filter(project=project, round__gt=0).exists()
    twice = (Label.objects.filter(assignment__hit__project=project)
             .annotate(item=Coalesce("unit__origin_id", "unit_id")).values("annotator", "item")
             .annotate(n=Count("pk")).filter(n__gt=1))
    assert not twice.exists()
    # The top-ups' labels come from people the first round did not have.
    topped = Label.objects.filter(assignment__hit__project=project, unit__origin__isnull=False)
    assert topped.exists()
    for label in topped.select_related("unit"):
        assert not Label.objects.filter(unit_id=label.unit.origin_id, annotator_id=label.annotator_id).exists()


def test_adaptive_pays_fewer_labels_for_the_majority_fixed_gives_on_the_same_seed():
    # Without attention checks: each build places its checks at random, and a top-up's checks are not its first
    # HIT's, so with checks who passes (and whose labels count) may differ between two projects for that alone.
    fixed = items(simulated(RedundancyPolicy.FIXED, checks=0))
    adaptive = items(simulated(RedundancyPolicy.ADAPTIVE, checks=0))
    assert fixed.keys() == adaptive.keys()
    assert {state.counted for state in fixed.values()} == {3}
    # Some items split on their first two labels and settled on a third: the comparison is not only of agreement.
    assert any(state.counted == 3 for state in adaptive.values())
    assert sum(s.counted for s in adaptive.values()) < sum(s.counted for s in fixed.values())
    differ = [key for key, state in fixed.items()
              if (state.yes * 2 > state.counted) != (adaptive[key].yes * 2 > adaptive[key].counted)]
    assert differ == []


def test_lead_sends_an_item_to_review_only_at_its_cap():
    # A cap of 4: a 1-1 split asks for two more at once, and a 2-2 at the cap has no lead of 2 to settle on.
    project = simulated(RedundancyPolicy.LEAD, cap=4)
    states = UnitState.objects.filter(project=project)
    escalated = states.filter(verdict=Verdict.ESCALATED)
    assert escalated.exists()
    assert set(escalated.values_list("counted", flat=True)) == {4}
    for state in states.filter(verdict=Verdict.SETTLED):
        assert abs(2 * state.yes - state.counted) >= project.lead_margin, state


def test_a_submission_failing_its_checks_gives_its_place_to_somebody_else(adaptive_once):
    project = Project.objects.get(pk=adaptive_once)
    checked = Assignment.objects.filter(hit__project=project, hit__units__attention_check__isnull=False).distinct()
    assert Grade.objects.filter(assignment__hit__project=project).count() == checked.count()
    failed = Grade.objects.filter(assignment__hit__project=project, passed=False).select_related("assignment__hit")
    assert failed.exists()
    for grade in failed:
        hit = grade.assignment.hit
        assert Assignment.objects.counted().filter(hit=hit).count() == hit.places


def test_the_crowds_kinds_show_in_their_labels(fixed_once):
    """Careless people disagree with an item's majority more often than careful ones (exports.label_streams)."""
    project = Project.objects.get(pk=fixed_once)
    kind = draw_pool(Crowd(), np.random.default_rng([SEED, 0])).kind
    majority = {state.unit_id: state.yes * 2 > state.counted for state in UnitState.objects.filter(project=project)}
    against = {CAREFUL: [0, 0], CARELESS: [0, 0]}
    labels = Label.objects.filter(assignment__hit__project=project, unit__attention_check__isnull=True)
    for task, field in (("fv", "has_error"), ("kv", "useful"), ("ka", "aligned")):
        for person, unit, answer in labels.filter(unit__task=task).values_list("annotator__external_id", "unit_id",
                                                                                field):
            index = int(person.rsplit("-", 1)[1]) - 1
            if kind[index] in against:
                against[kind[index]][0] += answer != majority[unit]
                against[kind[index]][1] += 1
    careful, careless = (wrong / total for wrong, total in against.values())
    assert careful < careless


def test_the_command_reports_labels_per_task_and_the_share_of_the_fixed_design():
    project = small_project("sim-command", RedundancyPolicy.ADAPTIVE)
    out = StringIO()
    call_command("simulate_annotations", "--project", project.slug, "--seed", str(SEED), stdout=out, verbosity=0)
    text = out.getvalue()
    assert "paper crowd: 36 careful, 22 careless, 1 random, 1 always common" in text
    total = fixed = 0
    for task, name in (("kv", "key-fact validation"), ("fv", "fact verification"), ("ka", "key-fact alignment")):
        states = UnitState.objects.filter(project=project, task=task)
        units, labels = states.count(), sum(states.values_list("counted", flat=True))
        assert 0 < labels < units * 3
        assert (f"{name}: {units} items, {labels} labels ({labels / units:.2f} per item), "
                f"{labels / (units * 3):.1%} of the fixed design's {units * 3}; {units} settled") in text
        total, fixed = total + labels, fixed + units * 3
    assert f"All tasks: {total / fixed:.1%} of the fixed design's labels." in text


@pytest.mark.parametrize(("options", "message"), [
    (["--crowd", "paper", "--accuracy", "0.8"], "--accuracy describe a uniform crowd"),
    (["--annotators", "2"], "--annotators 2 is too few: the project's adaptive policy may ask 3 labels"),
    (["--crowd", "uniform", "--accuracy", "1.5"], "--accuracy must be between 0 and 1"),
])
def test_the_command_refuses_options_it_cannot_honour(options, message):
    project = small_project("sim-refused", RedundancyPolicy.ADAPTIVE)
    with pytest.raises(CommandError, match=message):
        call_command("simulate_annotations", "--project", project.slug, *options, verbosity=0)
    assert not Assignment.objects.filter(hit__project=project).exists()
