"""The project's settings page: every protocol setting with its help, a cost preview, and the changes that would
corrupt labels already given refused with the reason; tried by the manager, an annotator, an outsider, anonymous."""

from decimal import Decimal

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from annotation.forms import ProjectSettingsForm
from annotation.services.assignment import reserve_next_hit, return_assignment
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
    assert "the protocol uses 3" in page


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
    assert "Annotators per unit can rise but not fall below 3 once annotation has started" in page
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
    ({"hourly_wage_usd": "-10"}, "The hourly wage is at least 7.25 USD, the floor this site sets "
                                 "(FINEGRAIN_MIN_HOURLY_WAGE_USD); got -10"),
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
