"""Pay floors at publication: on MTurk and Prolific, a HIT's reward per hour of its expected work is at least the
operator's floor (FINEGRAIN_MIN_HOURLY_WAGE_USD) and more than nothing, and the bonus is not negative; the dry run,
the page and the command refuse a plan that underpays, naming the field and the floor, and nothing is created.
Private links pay nothing through a provider and are not held to the floor."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.crowd.publishing import plan_publish, publish, publish_run, reward_for
from annotation.models import CrowdBatch, CrowdHit
from corpus.models import Job, Project
from tests.crowd.prolific_server import ProlificServer, start

pytestmark = pytest.mark.django_db

FLOOR = "Pay below this site's floor of 7.25 USD an hour: the project's hourly wage (USD) is"


@pytest.fixture
def prolific(settings):
    state = ProlificServer()
    httpd = start(state)
    settings.FINEGRAIN_PROLIFIC_API_URL = state.url
    yield state
    httpd.shutdown()
    httpd.server_close()


def pay(project, **values) -> Project:
    """Store pay the forms refuse (a row from before the floor, or from another tool)."""
    Project.objects.filter(pk=project.pk).update(**{name: Decimal(value) for name, value in values.items()})
    return Project.objects.get(pk=project.pk)


def nothing_created() -> bool:
    return not CrowdBatch.objects.exists() and not CrowdHit.objects.exists()


@pytest.mark.parametrize("provider", ["prolific", "mturk"])
@pytest.mark.parametrize("wage", ["-10", "0", "7.24"])
def test_a_plan_under_the_floor_names_the_wage_and_the_floor(corpus, provider, wage):
    project = pay(corpus, hourly_wage_usd=wage)
    plan = plan_publish(project=project, task="fv", provider=provider, sandbox=provider == "mturk")
    problems = [problem for problem in plan.problems if "site's floor" in problem]
    assert len(problems) == 1 and FLOOR in problems[0] and f"(USD) is {Decimal(wage):.2f}, and" in problems[0]
    assert plan.reward_usd == reward_for(project, [item.units for item in plan.items])
    with pytest.raises(ValueError, match="site's floor"):
        publish(plan=plan)
    assert nothing_created()


def test_the_reward_is_never_raised_to_a_cent_behind_the_managers_back(corpus):
    plan = plan_publish(project=pay(corpus, hourly_wage_usd="-10"), task="fv", provider="prolific")
    assert plan.reward_usd < 0 and plan.estimate.as_dict()["reward_usd"] == str(plan.reward_usd)
    assert f"would pay {plan.reward_usd} USD" in " ".join(plan.problems)


def test_a_wage_at_the_floor_passes_whatever_the_rounding(corpus, settings):
    for floor in ("7.25", "7.01", "12.34"):
        settings.FINEGRAIN_MIN_HOURLY_WAGE_USD = Decimal(floor)
        plan = plan_publish(project=pay(corpus, hourly_wage_usd=floor), task="fv", provider="prolific")
        assert plan.items and plan.problems == []


def test_the_operator_raising_the_floor_holds_projects_saved_before(corpus, settings):
    settings.FINEGRAIN_MIN_HOURLY_WAGE_USD = Decimal("12.00")
    plan = plan_publish(project=corpus, task="fv", provider="prolific")  # the protocol's 10.88
    assert any("below this site's floor of 12.00 USD an hour" in problem and "is 10.88" in problem for problem in plan.problems)


def test_a_negative_bonus_is_refused_and_no_bonus_is_fine(corpus):
    plan = plan_publish(project=pay(corpus, bonus_usd="-25"), task="fv", provider="prolific")
    assert plan.problems == ["The project's bonus (USD) is -25.00: a bonus is 0 (none) or more; change it in its "
                             "settings."]
    assert plan_publish(project=pay(corpus, bonus_usd="0"), task="fv", provider="prolific").problems == []


def test_private_links_pay_nothing_through_a_provider_and_are_not_held_to_the_floor(corpus):
    project = pay(corpus, hourly_wage_usd="0", bonus_usd="-25")
    plan = plan_publish(project=project, task="fv", provider="link")
    assert plan.reward_usd == 0 and plan.problems == []
    assert publish(plan=plan).crowd_hits.count() == len(plan.items)


def test_the_prolific_dry_run_command_fails_under_the_floor_and_sends_nothing(corpus, prolific):
    pay(corpus, hourly_wage_usd="-10")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="cannot publish: Pay below this site's floor of 7.25 USD an hour"):
        call_command("publish", project=corpus.slug, task="fv", provider="prolific", dry_run=True, stdout=out,
                     stderr=err)
    assert FLOOR in err.getvalue() and "Dry run: nothing was sent to Prolific and nothing was created." in (
        out.getvalue())
    assert not prolific.requests and nothing_created()


def test_the_mturk_dry_run_command_fails_under_the_floor(corpus):
    pay(corpus, hourly_wage_usd="0")
    err = StringIO()
    with pytest.raises(CommandError, match="site's floor"):
        call_command("publish", project=corpus.slug, task="fv", provider="mturk", sandbox=True, dry_run=True,
                     stdout=StringIO(), stderr=err)
    assert FLOOR in err.getvalue() and nothing_created()


def test_the_command_refuses_to_publish_under_the_floor_even_when_told_yes(corpus, prolific):
    pay(corpus, hourly_wage_usd="5")
    with pytest.raises(CommandError, match="below this site's floor of 7.25 USD an hour"):
        call_command("publish", project=corpus.slug, task="fv", provider="prolific", yes=True, stdout=StringIO(),
                     stderr=StringIO())
    assert not prolific.requests and nothing_created()


@pytest.mark.parametrize("provider", ["prolific", "mturk"])
def test_the_publish_page_refuses_a_plan_under_the_floor(corpus, manager, client, provider):
    pay(corpus, hourly_wage_usd="-10")
    client.force_login(manager)
    url = reverse("crowd_publish", args=[corpus.slug])
    query = {"task": "fv", "provider": provider, **({"sandbox": "1"} if provider == "mturk" else {})}
    dry_run = client.get(url, query)
    assert dry_run.status_code == 400 and FLOOR in dry_run.content.decode().replace("&#x27;", "'")
    assert '<button type="submit" disabled>Publish</button>' in dry_run.content.decode()
    confirmed = client.post(url, {**query, "confirm": "yes"})
    assert confirmed.status_code == 400 and FLOOR in confirmed.content.decode().replace("&#x27;", "'")
    assert nothing_created() and not Job.objects.filter(kind="crowd_publish").exists()


def test_a_publication_started_before_the_wage_fell_fails_its_job_with_the_reason(corpus, prolific):
    job = Job.objects.create(project=corpus, kind="crowd_publish",
                             params={"task": "fv", "provider": "prolific", "sandbox": False})
    pay(corpus, hourly_wage_usd="1")
    publish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "site's floor" in job.error
    assert not prolific.requests and nothing_created()
