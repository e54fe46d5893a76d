"""The annotator's own side of a HIT: flagging an item for the manager, returning a HIT only after saying yes, and
the home page's past HITs; tried by the annotator, another annotator, the manager, an outsider and anonymous."""

import json
from datetime import UTC
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.ai_agreement import ai_says_error
from annotation.models import Assignment, Decision, ItemFlag, LedgerEntry
from annotation.services.assignment import reserve_next_hit
from corpus.models import Project
from exports.export import ExportOptions, export_benchmark
from exports.restore import import_benchmark
from exports.simulate import simulate_annotations
from tests.work import add_assistance, annotator_for, complete, crowd_annotator, import_generated

pytestmark = pytest.mark.django_db


@pytest.fixture
def fv_assignment(corpus, annotator):
    return reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)


def flag_url(assignment, position):
    return reverse("hit_flag", args=[assignment.public_id, position])


def test_an_item_is_flagged_shown_again_on_the_page_changed_and_withdrawn(client, fv_assignment, annotator):
    client.force_login(annotator)
    response = client.post(flag_url(fv_assignment, 1), {"u1-flag": "  The sentence stops mid-word.  "},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "Flag saved" in response.content.decode()
    flag = ItemFlag.objects.get()
    assert (flag.assignment, flag.unit.position, flag.comment) == (fv_assignment, 1, "The sentence stops mid-word.")
    page = client.get(reverse("hit_page", args=[fv_assignment.public_id])).content.decode()
    assert '<details class="flag" id="flag-1" open>' in page and "The sentence stops mid-word.</textarea>" in page
    client.post(flag_url(fv_assignment, 1), {"u1-flag": "Unclear."}, HTTP_HX_REQUEST="true")
    assert ItemFlag.objects.get().comment == "Unclear."
    response = client.post(flag_url(fv_assignment, 1), {"u1-flag": ""}, HTTP_HX_REQUEST="true")
    assert "withdrawn" in response.content.decode() and not ItemFlag.objects.exists()


@pytest.mark.parametrize("comment, status, message", [
    ("x" * 1001, 400, "The comment is 1,001 characters; the limit is 1,000."),
    ("bad\x00byte", 400, "contains a NUL character"),
])
def test_a_bad_comment_is_refused_with_the_reason_and_nothing_is_stored(client, fv_assignment, annotator, comment,
                                                                       status, message):
    client.force_login(annotator)
    response = client.post(flag_url(fv_assignment, 0), {"u0-flag": comment}, HTTP_HX_REQUEST="true")
    assert response.status_code == status and message in response.content.decode()
    assert not ItemFlag.objects.exists()


def test_nobody_else_can_flag_and_a_submitted_hit_no_longer_changes(client, fv_assignment, annotator,
                                                                    other_annotator, manager, outsider):
    url = flag_url(fv_assignment, 0)
    assert client.post(url, {"u0-flag": "x"}).status_code == 302  # Anonymous: to the log-in page.
    for user in (other_annotator, manager, outsider):
        client.force_login(user)
        assert client.post(url, {"u0-flag": "x"}).status_code == 404
    client.force_login(annotator)
    assert client.post(flag_url(fv_assignment, 99), {"u99-flag": "x"}).status_code == 404
    assert client.get(url).status_code == 405
    assert not ItemFlag.objects.exists()
    complete(fv_assignment)
    response = client.post(url, {"u0-flag": "late"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 409 and "already submitted" in response.content.decode()
    assert not ItemFlag.objects.exists()


def test_without_javascript_the_flags_travel_with_the_submitted_form(client, fv_assignment, annotator):
    client.force_login(annotator)
    data = {"submission_key": "k1", "u0-flag": "Garbled <b>text</b>", "u1-flag": ""}
    for unit in fv_assignment.hit.units.all():
        data[f"u{unit.position}-has_error"] = "no"
        if "ai_right" in unit.question_fields(fv_assignment.hit):
            data[f"u{unit.position}-ai_right"] = "no" if ai_says_error(unit.ai_category) else "yes"
    assert client.post(reverse("hit_submit", args=[fv_assignment.public_id]), data).status_code == 302
    assert list(ItemFlag.objects.values_list("unit__position", "comment")) == [(0, "Garbled <b>text</b>")]


def test_the_manager_sees_each_flag_escaped_on_the_hit_page(client, fv_assignment, annotator, manager):
    client.force_login(annotator)
    client.post(flag_url(fv_assignment, 0), {"u0-flag": "<script>alert(1)</script>"}, HTTP_HX_REQUEST="true")
    client.force_login(manager)
    html = client.get(reverse("hit_detail", args=[fv_assignment.hit.project.slug,
                                                  fv_assignment.hit.public_id])).content.decode()
    assert "Annotators flagged 1 item of this HIT" in html
    assert "<strong>Flagged:</strong> &lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html


def test_returning_asks_first_on_the_page_and_then_returns(client, fv_assignment, annotator):
    client.force_login(annotator)
    page = client.get(reverse("hit_page", args=[fv_assignment.public_id])).content.decode()
    # The only control that returns the HIT sits inside the folded confirmation, after the question.
    confirm = page[page.index('<details class="return-hit"'):page.index("</details>", page.index('"return-hit"'))]
    assert "Return it? It goes back to other annotators" in confirm and "Yes, return it" in confirm
    assert page.count(reverse("hit_return", args=[fv_assignment.public_id])) == 1
    client.post(reverse("hit_return", args=[fv_assignment.public_id]))
    fv_assignment.refresh_from_db()
    assert fv_assignment.status == Assignment.Status.RETURNED


def test_the_home_page_lists_past_hits_with_their_state_and_a_crowd_workers_pay(client, corpus, annotator):
    person = annotator_for(annotator)
    returned = reserve_next_hit(person, corpus, "fv", confirmed=True)
    client.force_login(annotator)
    client.post(reverse("hit_return", args=[returned.public_id]))
    complete(reserve_next_hit(person, corpus, "fv", confirmed=True))
    html = client.get(reverse("work_home")).content.decode()
    assert "Your past HITs" in html and "1 submitted, 1 counted" in html
    assert "Submitted · counted" in html and "Returned" in html and "paid so far" not in html

    worker = crowd_annotator("w9", corpus)
    done = reserve_next_hit(worker, corpus, "fv", confirmed=True)
    complete(done)
    decision = Decision.objects.create(project=corpus, annotator=worker, assignment=done, kind="approve",
                                       idempotency_key="t-approve", status=Decision.Status.DONE)
    LedgerEntry.objects.create(project=corpus, annotator=worker, decision=decision, provider="prolific",
                               kind=LedgerEntry.Kind.REWARD, amount_usd=Decimal("1.50"))
    LedgerEntry.objects.create(project=corpus, annotator=worker, decision=decision, provider="prolific",
                               kind=LedgerEntry.Kind.REWARD_FEE, amount_usd=Decimal("0.50"))
    from annotation.selectors import work_history
    history = work_history(worker, corpus)
    assert history["earned"] == Decimal("1.50") and [a.state for a in history["rows"]] == [
        "Submitted · counted · approved"]


def test_flags_are_exported_as_their_own_fields_and_restored_by_the_benchmark_import(project, tmp_path):
    import_generated(project, documents=2, summarizers=2, sentences=3)
    add_assistance(project)
    simulate_annotations(project=project, annotators=3, accuracy=0.8, seed=3)
    label = project.hits.get(task="fv", summary__model="model-0", document__uid="gen-0").units.get(
        position=1).labels.first()
    flag = ItemFlag.objects.create(assignment=label.assignment, unit=label.unit, comment="Cut off, \"quoted\"")
    export_benchmark(project=project, out=tmp_path / "a.jsonl", options=ExportOptions(annotator_labels=True))
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    flagged = [row for row in rows if any(row["item_flags"].values())]
    assert len(flagged) == 1 and flagged[0]["model"] == "model-0"
    assert flagged[0]["item_flags"]["fact_verification"] == [
        {"annotator": label.annotator.pseudonym, "sentence": 1, "comment": "Cut off, \"quoted\"",
         "flagged_at": flag.created.astimezone(UTC).isoformat(timespec="seconds")}]
    fresh = Project.objects.create(slug="fresh", name="Fresh")
    assert import_benchmark(project=fresh, data=(tmp_path / "a.jsonl").read_bytes())["flags"] == 1
    restored = ItemFlag.objects.get(unit__hit__project=fresh)
    assert (restored.comment, restored.unit.summary_sentence.index) == ("Cut off, \"quoted\"", 1)
