"""Review and adjudication: the units where annotators disagree, adjudicated labels kept apart from theirs and used
for the scores only where the project says so, agreement among annotators and with the adjudication, a HIT sent back
for more labels; tried by the manager, a reviewer, an annotator, an outsider and anonymous."""

import json
from datetime import UTC

import pytest
from django.urls import reverse

from annotation.models import Adjudication, AttentionCheck, Hit, Label
from annotation.selectors import agreement_summary, available_hits
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.models import Membership, Project
from exports.aggregation import reviewer_pseudonym
from exports.export import ExportOptions, export_benchmark
from exports.restore import import_benchmark
from tests.work import annotator_for, complete, crowd_annotator, import_generated

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


@pytest.fixture
def split(project, django_user_model):
    """Two documents x one summary of three sentences; three annotators: two say "no error" everywhere, one
    "error" everywhere, so every FV unit is split 2 to 1."""
    import_generated(project, documents=2, summarizers=1, sentences=3)
    build_hits(project, "fv")
    for name, yes in (("ann-a", True), ("ann-b", True), ("ann-c", False)):
        person = annotator_for(django_user_model.objects.create_user(name))
        for _ in range(2):
            complete(reserve_next_hit(person, project, "fv", confirmed=True), yes=yes)
    return project


@pytest.fixture
def reviewer(project, django_user_model):
    user = django_user_model.objects.create_user("rita")
    Membership.objects.create(project=project, user=user, role=Membership.Role.REVIEWER)
    return user


def review_url(project, **query):
    from urllib.parse import urlencode

    return reverse("review", args=[project.slug]) + (f"?{urlencode(query)}" if query else "")


def unit_url(project, unit):
    return reverse("review_unit", args=[project.slug, unit.public_id])


def test_only_managers_and_reviewers_review_and_only_managers_send_back(client, split, manager, reviewer, annotator,
                                                                        other_annotator, outsider):
    unit = split.hits.first().units.first()
    send_back = reverse("hit_send_back", args=[split.slug, unit.hit.public_id])
    data = {"answer": "no", "reason": "r"}
    assert client.get(review_url(split)).status_code == 302
    assert client.post(unit_url(split, unit), data).status_code == 302 and not Adjudication.objects.exists()
    for user, status in ((annotator, 403), (other_annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(review_url(split)).status_code == status
        assert client.post(unit_url(split, unit), data).status_code == status
        assert client.post(send_back).status_code == status
    client.force_login(reviewer)
    assert client.get(review_url(split)).status_code == 200
    assert client.post(send_back).status_code == 403
    assert not Adjudication.objects.exists() and Hit.objects.get(pk=unit.hit.pk).extra_places == 0
    client.force_login(manager)
    assert client.get(review_url(split)).status_code == 200


def test_the_list_shows_each_split_unit_with_every_counted_label_and_filters(client, split, reviewer):
    client.force_login(reviewer)
    page = client.get(review_url(split)).content.decode()
    assert "6 units to review." in page and page.count("67% majority") == 6
    for name in ("ann-a", "ann-b", "ann-c"):
        pseudonym = Label.objects.filter(annotator__user__username=name).first().annotator.pseudonym
        # In-house annotators: the reviewer sees who each pseudonym is.
        assert page.count(f'<td><code>{pseudonym}</code> <span class="person">{name}</span></td>') == 6
    assert "3 units to review." in client.get(review_url(split, domain="news")).content.decode()
    assert "6 units to review." in client.get(review_url(split, agreement="0.67")).content.decode()
    assert "0 units to review." in client.get(review_url(split, agreement="0.5")).content.decode()
    assert "0 units to review." in client.get(review_url(split, task="kv")).content.decode()
    assert "0 units to review." in client.get(review_url(split, checks="missed")).content.decode()
    from annotation.models import Grade

    # A submission that missed a check and counts (the manager overrode its grade): its units are "missed".
    hit = split.hits.get(document__uid="gen-0")
    Grade.objects.filter(assignment=hit.assignments.first()).update(passed=False, checks_total=1, checks_failed=1,
                                                                    override_passed=True)
    assert "3 units to review." in client.get(review_url(split, checks="missed")).content.decode()
    assert "3 units to review." in client.get(review_url(split, checks="clean")).content.decode()
    # Junk in the filters is ignored, never a 500.
    assert client.get(review_url(split, task="zz", annotator="not-a-uuid", agreement="9", page="x")).status_code == 200


def test_an_adjudication_is_kept_apart_replaced_and_withdrawn(client, split, reviewer):
    client.force_login(reviewer)
    unit = split.hits.first().units.order_by("position").first()
    before = list(Label.objects.order_by("pk").values_list("pk", "has_error", "error_types"))
    response = client.post(unit_url(split, unit), {"answer": "yes", "error_types": ["entity", "entity"],
                                                   "reason": "S2 names another <b>man</b>.", "next": review_url(split)},
                           follow=True)
    assert "Adjudicated." in response.content.decode()
    assert "S2 names another &lt;b&gt;man&lt;/b&gt;." in response.content.decode()
    adjudication = Adjudication.objects.get()
    assert (adjudication.has_error, adjudication.error_types, adjudication.reviewer) == (True, ["entity"], reviewer)
    assert list(Label.objects.order_by("pk").values_list("pk", "has_error", "error_types")) == before
    client.post(unit_url(split, unit), {"answer": "no", "error_types": ["entity"], "reason": "On reflection, fine."})
    assert Adjudication.objects.values_list("has_error", "error_types").get() == (False, [])
    client.post(unit_url(split, unit), {"withdraw": "1"})
    assert not Adjudication.objects.exists()


@pytest.mark.parametrize("data, message", [
    ({"answer": "yes", "reason": "x"}, "Name the error type(s)"),
    ({"answer": "no", "reason": "  "}, "Say why"),
    ({"answer": "maybe", "reason": "x"}, "Choose yes or no."),
    ({"answer": "no", "reason": "x" * 2001}, "the limit is 2,000"),
    ({"answer": "no", "reason": "a\x00b"}, "contains a NUL character"),
])
def test_a_bad_adjudication_is_refused_with_the_reason_and_nothing_is_stored(client, split, reviewer, data,
                                                                             message):
    client.force_login(reviewer)
    unit = split.hits.first().units.first()
    response = client.post(unit_url(split, unit), data, follow=True)
    assert response.status_code in (200, 400) and message in response.content.decode()
    assert not Adjudication.objects.exists()


def test_a_check_is_not_adjudicated_and_outside_urls_are_not_followed(client, split, reviewer):
    unit = split.hits.first().units.first()
    AttentionCheck.objects.create(unit=unit, kind="fv_ai_says_error", expected={"has_error": True})
    client.force_login(reviewer)
    response = client.post(unit_url(split, unit), {"answer": "no", "reason": "x", "next": "https://evil.example/"})
    assert response.status_code == 302 and response.url == reverse("review", args=[split.slug]) + \
        f"#unit-{unit.public_id}"
    assert not Adjudication.objects.exists()


@pytest.mark.parametrize("target", ["review", "projects/alpha/review/", "//evil.example", "/\\evil.example"])
def test_a_next_that_is_not_a_page_of_this_site_returns_to_the_list(client, split, reviewer, target):
    unit = split.hits.first().units.first()
    client.force_login(reviewer)
    response = client.post(unit_url(split, unit), {"answer": "no", "reason": "x", "next": target})
    assert response.status_code == 302 and response.url == f"{review_url(split)}#unit-{unit.public_id}"


def test_agreement_among_annotators_and_with_the_adjudication_by_hand(split, reviewer):
    # Six units, each 2 "no error" against 1 "error": 3 pairs per unit, 1 of them agreeing.
    summary = agreement_summary(split, "fv")
    assert (summary["pairs"], summary["among"], summary["with_adjudication"]) == (18, 1 / 3, None)
    from annotation.services.review import adjudicate

    unit = split.hits.first().units.first()
    adjudicate(unit=unit, reviewer=reviewer, answer="yes", error_types=["entity"], reason="seen")
    summary = agreement_summary(split, "fv")
    assert (summary["adjudicated"], summary["labels"], summary["with_adjudication"]) == (1, 3, 1 / 3)


def test_scores_use_adjudications_only_where_the_project_says_so_and_the_export_round_trips(split, reviewer,
                                                                                            tmp_path):
    from annotation.services.review import adjudicate

    sentence = split.hits.get(document__uid="gen-0").units.get(position=0)
    adjudicate(unit=sentence, reviewer=reviewer, answer="yes", error_types=["relation"], reason="Wrong verb.")

    def first_row(path):
        export_benchmark(project=split, out=path, options=ExportOptions(annotator_labels=True))
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return next(row for row in rows if row["uid"] == "gen-0")

    row = first_row(tmp_path / "majority.jsonl")
    assert row["fact_verification_label"][0] == 0 and row["faithfulness_score"] == 1.0
    adjudication = Adjudication.objects.get(unit=sentence)
    assert row["adjudications"]["fact_verification"] == [
        {"sentence": 0, "has_error": True, "error_types": ["relation"], "reason": "Wrong verb.",
         "reviewer": reviewer_pseudonym(reviewer.pk),
         "adjudicated_at": adjudication.updated_at.astimezone(UTC).isoformat(timespec="seconds")}]
    assert row["adjudications"]["used_in_scores"] is False
    Project.objects.filter(pk=split.pk).update(adjudication_in_aggregation=True)
    split.refresh_from_db()
    row = first_row(tmp_path / "settled.jsonl")
    assert row["fact_verification_label"][0] == 1 and row["fact_verification_error_type"][0] == ["relation"]
    assert row["faithfulness_score"] == pytest.approx(2 / 3)

    fresh = Project.objects.create(slug="fresh", name="Fresh")
    assert import_benchmark(project=fresh, data=(tmp_path / "settled.jsonl").read_bytes())["adjudications"] == 1
    fresh.refresh_from_db()
    assert fresh.adjudication_in_aggregation
    restored = Adjudication.objects.get(unit__hit__project=fresh)
    assert (restored.has_error, restored.error_types, restored.reason) == (True, ["relation"], "Wrong verb.")


def test_a_hit_sent_back_takes_one_more_annotator(client, split, manager):
    hit = split.hits.first()
    newcomer = crowd_annotator("late", split)
    assert hit not in available_hits(newcomer, split, "fv")
    client.force_login(manager)
    response = client.post(reverse("hit_send_back", args=[split.slug, hit.public_id]), follow=True)
    assert "open for one more annotator (4 in all)" in response.content.decode()
    assert list(available_hits(newcomer, split, "fv")) == [hit]
    complete(reserve_next_hit(newcomer, split, "fv", confirmed=True))
    assert hit not in available_hits(crowd_annotator("later", split), split, "fv")
    assert Label.objects.filter(unit=hit.units.first()).count() == 4
