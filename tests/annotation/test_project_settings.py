"""The project's settings page: every protocol setting with its help, a cost preview, and the changes that would
corrupt labels already given refused with the reason; tried by the manager, an annotator, an outsider, anonymous."""

from decimal import Decimal

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from annotation.forms import ProjectSettingsForm
from annotation.models import Decision, LedgerEntry
from annotation.services.assignment import reserve_next_hit, return_assignment
from annotation.services.project_settings import SettingsRefused, update_settings
from corpus.models import Project
from tests.work import annotator_for, complete, crowd_annotator

pytestmark = pytest.mark.django_db


def url(project):
    return reverse("project_settings", args=[project.slug])


def posted(project, **changes) -> dict:
    """The form as the page posts it: every field with its saved value, then `changes`."""
    data = {name: value for name, value in model_to_dict(project, fields=ProjectSettingsForm._meta.fields).items()
            if value is not None}
    data = {name: ("on" if value is True else value) for name, value in data.items() if value is not False}
    data.update(changes)
    return data


def test_only_the_projects_managers_open_or_change_its_settings(client, corpus, manager, annotator, other_annotator,
                                                                outsider):
    response = client.get(url(corpus))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    for user, status in ((annotator, 403), (other_annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(url(corpus)).status_code == status
        assert client.post(url(corpus), posted(corpus, hourly_wage_usd="99")).status_code == status
    corpus.refresh_from_db()
    assert corpus.hourly_wage_usd == Decimal("10.88")
    client.force_login(manager)
    page = client.get(url(corpus)).content.decode()
    assert "Share of a HIT&#x27;s units that are attention checks" in page and "Bonus every hits" not in page
    assert "the protocol uses 3" in page and "Annotators the result stands for" in page


def test_the_settings_page_names_no_environment_variable_or_command(client, corpus, manager):
    client.force_login(manager)
    response = client.get(url(corpus))
    page = response.content.decode()
    # The operators' knobs are described in deploy/OPERATIONS.md; a manager reads what they mean here.
    assert response.status_code == 200 and "Sentence-embedding model" in page
    assert "FINEGRAIN_" not in page and "manage.py" not in page and "calibrate_offline" not in page


def test_a_change_is_saved_and_named_and_the_slug_never_changes(client, corpus, manager):
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, hourly_wage_usd="12.50", worker_locales="us, gb",
                                               name="<b>Study</b>", slug="other"), follow=True)
    assert "Saved: " in response.content.decode() and "hourly wage (usd)" in response.content.decode()
    assert "&lt;b&gt;Study&lt;/b&gt;" in response.content.decode()
    corpus.refresh_from_db()
    assert (corpus.hourly_wage_usd, corpus.worker_locales, corpus.slug) == (Decimal("12.50"), "US,GB", "alpha")


def test_malformed_values_are_refused_field_by_field_and_nothing_is_saved(client, corpus, manager):
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, worker_locales="US, xx1", attention_check_rate="2",
                                               hourly_wage_usd="12"))
    page = response.content.decode()
    assert response.status_code == 400 and "Nothing was saved: 2 settings need a change" in page
    assert "Give two-letter country codes separated by commas, e.g. US,GB,CA (not XX1)." in page
    corpus.refresh_from_db()
    assert corpus.hourly_wage_usd == Decimal("10.88")


def test_once_annotation_started_n_may_rise_but_not_fall_and_the_assistance_stays(client, corpus, manager):
    complete(reserve_next_hit(crowd_annotator("w1", corpus), corpus, "fv", confirmed=True))
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, annotators_per_unit=2, assistance="none",
                                               hourly_wage_usd="20"))
    page = response.content.decode()
    assert response.status_code == 400
    assert "The annotators the result stands for can rise but not fall below 3 once annotation has started" in page
    assert "The assistance level cannot change once HITs at the project&#x27;s level" in page
    corpus.refresh_from_db()
    assert (corpus.annotators_per_unit, corpus.assistance, corpus.hourly_wage_usd) == (3, "reason",
                                                                                       Decimal("10.88"))
    assert client.post(url(corpus), posted(corpus, annotators_per_unit=4)).status_code == 302
    assert Project.objects.get(pk=corpus.pk).annotators_per_unit == 4


def test_the_highlight_fraction_waits_until_nobody_holds_a_hit(client, corpus, manager, annotator):
    held = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, highlight_fraction="0.5"))
    assert response.status_code == 400 and "cannot change while someone holds a HIT" in response.content.decode()
    return_assignment(assignment=held)
    assert client.post(url(corpus), posted(corpus, highlight_fraction="0.5")).status_code == 302
    assert Project.objects.get(pk=corpus.pk).highlight_fraction == 0.5


def test_the_cost_preview_shows_before_and_after_and_saves_nothing(client, corpus, manager):
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, hourly_wage_usd="21.76", annotators_per_unit=4,
                                               preview="1"))
    page = response.content.decode()
    assert response.status_code == 200 and "Crowd cost with these settings" in page
    fv = corpus.hits.filter(task="fv").count()
    assert f"<td class=\"num\">{fv * 3} → {fv * 4}</td>" in page
    corpus.refresh_from_db()
    assert (corpus.hourly_wage_usd, corpus.annotators_per_unit) == (Decimal("10.88"), 3)


def test_the_evaluator_model_is_one_the_operator_allows_and_the_next_run_uses_it(client, corpus, manager, settings,
                                                                                  tmp_path):
    from assist.embeddings import bundled_model_path
    from assist.evaluators.runs import evaluator_job_create

    allowed, broken = str(bundled_model_path()), str(tmp_path)
    settings.FINEGRAIN_EVALUATOR_MODELS = [allowed, broken]
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, evaluator_model="/etc"))
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    response = client.post(url(corpus), posted(corpus, evaluator_model=broken))
    assert response.status_code == 400 and "is not a local sentence-transformers model directory" in \
        response.content.decode()
    assert client.post(url(corpus), posted(corpus, evaluator_model=allowed)).status_code == 302
    corpus.refresh_from_db()
    assert corpus.evaluator_model == allowed
    job = evaluator_job_create(project=corpus, evaluator="sbertscore")
    assert job.result["model_path"] == allowed


@pytest.mark.parametrize("changes, message", [
    ({"hourly_wage_usd": "-10"}, "The hourly wage is at least 7.25 USD, the floor this site sets; "
                                 "got -10"),
    ({"hourly_wage_usd": "0"}, "The hourly wage is at least 7.25 USD"),
    ({"hourly_wage_usd": "7.24"}, "The hourly wage is at least 7.25 USD"),
    ({"bonus_usd": "-25"}, "The bonus is 0 USD (no bonus) or more."),
    ({"bonus_every_hits": "0"}, "Ensure this value is greater than or equal to 1."),
    ({"hourly_wage_usd": "NaN"}, "Enter a number."),
    ({"hourly_wage_usd": "Infinity"}, "Enter a number."),
    ({"hourly_wage_usd": "-Infinity"}, "Enter a number."),
    ({"hourly_wage_usd": "10000"}, "Ensure that there are no more than 4 digits before the decimal point."),
    ({"bonus_usd": "NaN"}, "Enter a number."),
    ({"highlight_fraction": "NaN"}, "Enter a number."),
    ({"fast_seconds_per_item": "Infinity"}, "Enter a number."),
    ({"offline_threshold": "NaN"}, "Enter a number."),
])
def test_pay_below_the_floor_and_numbers_that_are_not_are_refused_and_nothing_is_saved(client, corpus, manager,
                                                                                        changes, message):
    import html

    client.force_login(manager)
    before = model_to_dict(Project.objects.get(pk=corpus.pk))
    for preview in ({}, {"preview": "1"}):
        response = client.post(url(corpus), posted(corpus, **changes, **preview))
        assert response.status_code == 400 and message in html.unescape(response.content.decode())
    assert model_to_dict(Project.objects.get(pk=corpus.pk)) == before


def test_the_floor_is_the_operators_and_a_bonus_of_0_pays_none(client, corpus, manager, settings):
    settings.FINEGRAIN_MIN_HOURLY_WAGE_USD = Decimal("12.00")
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, hourly_wage_usd="11.99"))
    assert response.status_code == 400 and "at least 12.00 USD" in response.content.decode()
    assert client.post(url(corpus), posted(corpus, hourly_wage_usd="12", bonus_usd="0")).status_code == 302
    corpus.refresh_from_db()
    assert (corpus.hourly_wage_usd, corpus.bonus_usd) == (Decimal("12.00"), Decimal("0.00"))


def refused_and_unsaved(client, project, changes: dict) -> dict:
    """Post `changes` to save and to preview; both refused (400); nothing saved. The form's errors by field."""
    before = model_to_dict(Project.objects.get(pk=project.pk))
    errors = {}
    for preview in ({}, {"preview": "1"}):
        response = client.post(url(project), posted(project, **changes, **preview))
        assert response.status_code == 400
        assert "Nothing was saved" in response.content.decode()
        errors = response.context["form"].errors
    assert model_to_dict(Project.objects.get(pk=project.pk)) == before
    return errors


@pytest.mark.parametrize("changes, field, message", [
    ({"redundancy_policy": "lead", "lead_cap": "1"}, "lead_cap",
     "Lead starts with two annotators, so the most per item is at least 2."),
    ({"redundancy_policy": "lead", "lead_cap": "21"}, "lead_cap", "The most annotators per item is 20."),
    ({"redundancy_policy": "lead", "lead_margin": "4", "lead_cap": "3"}, "lead_cap",
     "The most annotators per item (3) is below the lead (4): no item could ever lead by that much, and every "
     "item would go to review."),
    # Refused whatever the policy: a stored pair is one a later switch to lead can use.
    ({"lead_margin": "6"}, "lead_cap", "The most annotators per item (5) is below the lead (6)"),
    ({"redundancy_policy": "lead", "lead_margin": "0"}, "lead_margin",
     "The lead that settles an item is at least 1 vote: with 0, the first two labels would settle every item."),
    ({"budget_usd": "-0.01"}, "budget_usd", "The budget is 0 USD or more; leave it empty for no cap."),
    ({"budget_usd": "NaN"}, "budget_usd", "Enter a number."),
    ({"budget_usd": "Infinity"}, "budget_usd", "Enter a number."),
    ({"lead_margin": "NaN"}, "lead_margin", "Enter a whole number."),
    ({"redundancy_policy": "majority"}, "redundancy_policy", "Select a valid choice."),
])
def test_labels_per_item_and_the_budget_refuse_what_cannot_work_and_save_nothing(client, corpus, manager, changes,
                                                                                 field, message):
    client.force_login(manager)
    errors = refused_and_unsaved(client, corpus, changes)
    assert list(errors) == [field] and message in " ".join(errors[field])


def test_the_one_validation_path_refuses_a_cap_below_the_lead_for_every_caller(corpus):
    proposed = Project.objects.get(pk=corpus.pk)
    proposed.redundancy_policy, proposed.lead_margin, proposed.lead_cap = "lead", 3, 2
    with pytest.raises(SettingsRefused) as refused:
        update_settings(corpus, proposed, ["redundancy_policy", "lead_margin", "lead_cap"])
    assert list(refused.value.errors) == ["lead_cap"]
    assert Project.objects.get(pk=corpus.pk).redundancy_policy == "fixed"


def test_the_labels_per_item_change_freely_until_a_hit_is_started(client, corpus, manager):
    client.force_login(manager)
    assert client.post(url(corpus), posted(corpus, redundancy_policy="lead", lead_margin="3",
                                           lead_cap="7")).status_code == 302
    corpus.refresh_from_db()
    assert (corpus.redundancy_policy, corpus.lead_margin, corpus.lead_cap) == ("lead", 3, 7)
    assert client.post(url(corpus), posted(corpus, redundancy_policy="adaptive")).status_code == 302
    assert Project.objects.get(pk=corpus.pk).redundancy_policy == "adaptive"


@pytest.mark.parametrize("changes, field, message", [
    ({"redundancy_policy": "adaptive"}, "redundancy_policy",
     "How many annotators each item gets stays fixed once annotation has started"),
    ({"lead_margin": "3"}, "lead_margin", "The lead that settles an item stays 2 once annotation has started"),
    ({"lead_cap": "6"}, "lead_cap", "The most annotators per item stays 5 once annotation has started"),
])
def test_once_a_hit_is_started_the_labels_per_item_stay(client, corpus, manager, changes, field, message):
    reserve_next_hit(crowd_annotator("w1", corpus), corpus, "fv", confirmed=True)
    client.force_login(manager)
    errors = refused_and_unsaved(client, corpus, {**changes, "hourly_wage_usd": "20"})
    assert list(errors) == [field]
    assert message in errors[field][0] and "would settle the same answers differently" in errors[field][0]


def test_the_budget_may_rise_at_any_time_but_not_fall_below_what_was_paid(client, corpus, manager):
    worker = crowd_annotator("w1", corpus)
    done = reserve_next_hit(worker, corpus, "fv", confirmed=True)
    complete(done)
    decision = Decision.objects.create(project=corpus, annotator=worker, assignment=done, kind="approve",
                                       idempotency_key="t-approve", status=Decision.Status.DONE)
    for kind, amount in ((LedgerEntry.Kind.REWARD, "10.00"), (LedgerEntry.Kind.REWARD_FEE, "2.00")):
        LedgerEntry.objects.create(project=corpus, annotator=worker, decision=decision, provider="prolific",
                                   kind=kind, amount_usd=Decimal(amount))
    client.force_login(manager)
    errors = refused_and_unsaved(client, corpus, {"budget_usd": "11.99"})
    assert errors["budget_usd"] == ["The budget cannot be less than the 12.00 USD already paid (rewards, bonuses and "
                                    "the providers' fees). Raise it, or leave it empty for no cap."]
    assert client.post(url(corpus), posted(corpus, budget_usd="12")).status_code == 302
    assert client.post(url(corpus), posted(Project.objects.get(pk=corpus.pk), budget_usd="500")).status_code == 302
    corpus.refresh_from_db()
    assert corpus.budget_usd == Decimal("500.00")
    errors = refused_and_unsaved(client, corpus, {"budget_usd": "5"})
    assert "already paid" in errors["budget_usd"][0]
    assert client.post(url(corpus), posted(corpus, budget_usd="")).status_code == 302
    assert Project.objects.get(pk=corpus.pk).budget_usd is None


def test_the_cost_preview_compares_the_chosen_labels_per_item_with_the_fixed_design(client, corpus, manager):
    # The small corpus (no attention checks): FV 4 HITs of 2, 1, 1, 2 items; KV 1 HIT of 2; KA 2 HITs of 2 and 1.
    # Reward per HIT at $10.88 an hour and 30 s an item, rounded up to the cent: FV and KA 1.5 items -> 45 s ->
    # $0.136 -> $0.14; KV 2 items -> 60 s -> $0.1813 -> $0.19. Three fixed annotators: FV 12 places, 18 labels,
    # $1.68; KV 3 places, 6 labels, $0.57; KA 6 places, 9 labels, $0.84; $3.09 in all (no bonus below 500 HITs).
    # Adaptive (simulation: FV 69.6%, KV 70.2%, KA 70.5% of the labels): 13, 4 and 6 labels; $1.17, $0.40, $0.59.
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, redundancy_policy="adaptive", preview="1"))
    assert response.status_code == 200
    rows = [(row["places"], row["labels"], str(row["total"]), row["policy_labels"], str(row["policy_total"]))
            for row in response.context["costs"]]
    assert rows == [(12, 18, "1.68", 13, "1.17"), (3, 6, "0.57", 4, "0.40"), (6, 9, "0.84", 6, "0.59")]
    page = " ".join(response.content.decode().split())
    assert "Adaptive: saves about $0.93 (30%) against 3 fixed annotators</strong>, about $2.16 instead of $3.09." \
        in page
    assert "Estimates from a simulation calibrated to the paper's agreement" in page
    # Lead (FV 72.9%, KV 74.2%, KA 75.0%): $1.22 + $0.42 + $0.63 = $2.27, $0.82 (27%) saved.
    response = client.post(url(corpus), posted(corpus, redundancy_policy="lead", preview="1"))
    page = " ".join(response.content.decode().split())
    assert "Lead: saves about $0.82 (27%) against 3 fixed annotators</strong>, about $2.27 instead of $3.09." in page
    # Lead's labels do not depend on N: against 4 fixed annotators ($4.12) it costs the same $2.27.
    response = client.post(url(corpus), posted(corpus, redundancy_policy="lead", annotators_per_unit="4",
                                               preview="1"))
    page = " ".join(response.content.decode().split())
    assert "Lead: saves about $1.85 (45%) against 4 fixed annotators</strong>, about $2.27 instead of $4.12." in page
    # Not simulated: adaptive with 5 asks 3 first, so it pays between 3/5 of the fixed design's labels and all.
    response = client.post(url(corpus), posted(corpus, redundancy_policy="adaptive", annotators_per_unit="5",
                                               budget_usd="4", preview="1"))
    page = " ".join(response.content.decode().split())
    assert "The simulation did not run with these settings" in page
    assert "the cost lies between $3.09 and $5.15" in page
    assert "The budget is $4.00, below the most this may cost: once the expected cost would pass it" in page
    corpus.refresh_from_db()
    assert (corpus.redundancy_policy, corpus.annotators_per_unit, corpus.budget_usd) == ("fixed", 3, None)


def test_a_refused_policy_change_still_previews_what_it_would_cost(client, corpus, manager):
    reserve_next_hit(crowd_annotator("w1", corpus), corpus, "fv", confirmed=True)
    client.force_login(manager)
    response = client.post(url(corpus), posted(corpus, redundancy_policy="adaptive", preview="1"))
    assert response.status_code == 400 and "Adaptive: saves about $0.93 (30%)" in response.content.decode()
    # The page's own preview request (htmx) gets the refusal in a page it can show.
    response = client.post(url(corpus), posted(corpus, redundancy_policy="adaptive", preview="1"),
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "stays fixed once annotation has started" in response.content.decode()
