"""Annotators' flags on the reviewer's page: a flagged unit is listed even where its labels agree, with every flag's
comment, pseudonym and time; the list filters by flags; a flag that starts standing makes the stored list stale.
Tried by a reviewer, the annotator who flagged, an outsider and anonymous."""

import json

import pytest
from django.urls import reverse

from annotation.job_kinds import REVIEW_TALLY
from annotation.models import AttentionCheck, ItemFlag
from annotation.selectors import disagreements, split_units
from annotation.services.assignment import reserve_next_hit, return_assignment
from annotation.services.flags import flag_item
from annotation.services.hits import build_hits
from corpus.models import Membership
from corpus.snapshots import numbers_state
from tests.conftest import numbers_now
from tests.work import annotator_for, complete, import_generated

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


@pytest.fixture
def reviewer(project, django_user_model):
    user = django_user_model.objects.create_user("rita")
    Membership.objects.create(project=project, user=user, role=Membership.Role.REVIEWER)
    return user


@pytest.fixture
def agreeing(project, django_user_model):
    """One document x one summary of three sentences, two annotators who both say "no error" everywhere: nothing is
    split. The first flags the second real sentence before submitting."""
    import_generated(project, documents=1, summarizers=1, sentences=3)
    build_hits(project, "fv")
    first = reserve_next_hit(annotator_for(django_user_model.objects.create_user("ann-a")), project, "fv",
                             confirmed=True)
    unit = first.hit.units.filter(attention_check__isnull=True).order_by("position")[1]
    flag_item(assignment=first, unit=unit, comment="Garbled: the sentence stops mid-word <b>here</b>")
    complete(first)
    complete(reserve_next_hit(annotator_for(django_user_model.objects.create_user("ann-b")), project, "fv",
                              confirmed=True))
    return project


def tally_is_current(project) -> bool:
    return numbers_state(project, REVIEW_TALLY).current


def review_url(project, **query):
    from urllib.parse import urlencode

    return reverse("review", args=[project.slug]) + (f"?{urlencode(query)}" if query else "")


def test_a_flagged_unit_whose_labels_agree_is_reviewed_with_its_flag(client, agreeing, reviewer):
    flag = ItemFlag.objects.select_related("assignment__annotator", "unit").get()
    client.force_login(reviewer)
    page = client.get(review_url(agreeing)).content.decode()
    assert "1 unit to review." in page
    assert f'id="unit-{flag.unit.public_id}"' in page
    # The comment (escaped), who wrote it and when.
    assert "Garbled: the sentence stops mid-word &lt;b&gt;here&lt;/b&gt;" in page
    assert flag.assignment.annotator.pseudonym in page.split('class="review-flags"')[1]
    assert flag.created.strftime("%Y-%m-%d %H:%M") in page
    assert "Flagged by 1 annotator" in page and "100% majority" in page


def test_only_reviewers_and_managers_read_the_flags(client, agreeing, reviewer, annotator, outsider, manager):
    assert client.get(review_url(agreeing)).status_code == 302
    for user, status in ((annotator, 403), (outsider, 404)):
        client.force_login(user)
        response = client.get(review_url(agreeing))
        assert response.status_code == status and b"Garbled" not in response.content
    # The annotator who flagged the item does not review it either.
    client.force_login(ItemFlag.objects.get().assignment.annotator.user)
    assert client.get(review_url(agreeing)).status_code == 404
    for user in (reviewer, manager):
        client.force_login(user)
        assert b"Garbled" in client.get(review_url(agreeing)).content


def test_the_list_filters_by_flags(client, agreeing, reviewer):
    client.force_login(reviewer)
    assert "1 unit to review." in client.get(review_url(agreeing, flagged="yes")).content.decode()
    assert "0 units to review." in client.get(review_url(agreeing, flagged="no")).content.decode()


def test_a_flag_stands_once_its_annotator_leaves_the_hit(agreeing, django_user_model):
    """A flag on open work is a draft (it can still be withdrawn): it reaches review once the HIT is returned, and
    the stored list is stale from that moment."""
    numbers_now(agreeing, REVIEW_TALLY)
    assert split_units(agreeing, "fv").count() == 1 and tally_is_current(agreeing)
    third = reserve_next_hit(annotator_for(django_user_model.objects.create_user("ann-c")), agreeing, "fv",
                             confirmed=True)
    unit = third.hit.units.filter(attention_check__isnull=True).order_by("position")[0]
    flag_item(assignment=third, unit=unit, comment="Which council?")
    assert tally_is_current(agreeing), "a draft flag does not change the list"
    return_assignment(assignment=third)
    assert not tally_is_current(agreeing)
    numbers_now(agreeing, REVIEW_TALLY)
    assert tally_is_current(agreeing)
    assert [row.unit_id for row in split_units(agreeing, "fv", flagged="yes")] == [
        u.pk for u in disagreements(agreeing, "fv", flagged="yes")]
    assert split_units(agreeing, "fv").count() == 2


def test_a_flag_on_an_attention_check_stays_with_the_manager(django_user_model, project):
    import_generated(project, documents=1, summarizers=1, sentences=3)
    build_hits(project, "fv")
    unit = project.hits.get().units.order_by("position").first()
    check = AttentionCheck.objects.filter(unit__hit__project=project).select_related("unit").first() or (
        AttentionCheck.objects.create(unit=unit, kind=AttentionCheck.Kind.FV_AI_SAYS_ERROR,
                                      expected={"has_error": True}))
    for name in ("ann-a", "ann-b"):
        assignment = reserve_next_hit(annotator_for(django_user_model.objects.create_user(name)), project, "fv",
                                      confirmed=True)
        flag_item(assignment=assignment, unit=check.unit, comment="Odd sentence")
        complete(assignment)
    numbers_now(project, REVIEW_TALLY)
    assert tally_is_current(project) and not split_units(project, "fv").filter(unit_id=check.unit_id).exists()
    assert not disagreements(project, "fv").filter(pk=check.unit_id).exists()


def test_the_stored_list_and_the_live_one_agree_with_flags(client, project, django_user_model):
    """Split units and flagged ones, in the same order, under every flag filter."""
    import_generated(project, documents=2, summarizers=1, sentences=3)
    build_hits(project, "fv")
    people = [annotator_for(django_user_model.objects.create_user(name)) for name in ("ann-a", "ann-b", "ann-c")]
    for person, yes in zip(people, (True, True, False)):
        for number in range(2):
            assignment = reserve_next_hit(person, project, "fv", confirmed=True)
            if person is people[0] and number == 0:
                units = list(assignment.hit.units.filter(attention_check__isnull=True).order_by("position"))
                flag_item(assignment=assignment, unit=units[0], comment="Unclear")
            complete(assignment, yes=yes if number == 0 else True)
    numbers_now(project, REVIEW_TALLY)
    for flagged in ("", "yes", "no"):
        live = [(unit.pk, round(unit.majority, 6)) for unit in disagreements(project, "fv", flagged=flagged)]
        stored = [(row.unit_id, round(row.majority, 6)) for row in split_units(project, "fv", flagged=flagged)]
        assert stored == live and live


def test_the_export_says_who_flagged_and_who_settled_and_when(agreeing, reviewer, tmp_path):
    from annotation.services.review import adjudicate
    from exports.aggregation import reviewer_pseudonym
    from exports.export import ExportOptions, export_benchmark

    flag = ItemFlag.objects.select_related("assignment__annotator", "unit").get()
    adjudicate(unit=flag.unit, reviewer=reviewer, answer="no", error_types=[], reason="The text is fine.")
    out = tmp_path / "release.jsonl"
    export_benchmark(project=agreeing, out=out, options=ExportOptions(annotator_labels=True))
    row = json.loads(out.read_text().splitlines()[0])
    exported = row["item_flags"]["fact_verification"]
    assert exported == [{"annotator": flag.assignment.annotator.pseudonym, "sentence": flag.unit.summary_sentence.index,
                         "comment": flag.comment, "flagged_at": flag.created.isoformat(timespec="seconds")}]
    settled, = row["adjudications"]["fact_verification"]
    assert settled["reviewer"] == reviewer_pseudonym(reviewer.pk) and settled["reviewer"].startswith("rev-")
    assert "rita" not in out.read_text()
    adjudication = flag.unit.adjudication
    assert settled["adjudicated_at"] == adjudication.updated_at.isoformat(timespec="seconds")
