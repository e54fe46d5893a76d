"""Dialogues in Chromium: a document in UniSumEval's release format and one in DialogSum's are read as
speaker-labelled turns, without the release's markup, on the manager's document page and on the HIT page."""

import json

import pytest

from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.importing import import_dataset
from corpus.models import Document, Membership, Project
from tests.corpus.test_dialogue_turns import DIALOGSUM_ONE_LINE, RELEASE
from tests.work import annotator_for, may_create_projects, without_attention_checks

from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dialogues(django_user_model):
    project = without_attention_checks(Project.objects.create(slug="talk", name="Dialogues", annotators_per_unit=1))
    rows = [{"uid": uid, "doc_id": uid, "source": source, "domain": "booking", "input_type": "dialogue",
             "redact_type": "redacted", "document": text, "model": "m",
             "summary": "A customer booked a room. The system gave a reference."}
            for uid, source, text in (("multiwoz-1", "MultiWOZ", RELEASE), ("dialogsum-1", "DialogSum",
                                                                            DIALOGSUM_ONE_LINE))]
    import_dataset(project=project, data="\n".join(json.dumps(row) for row in rows).encode(), filename="d.jsonl")
    for name, role in (("mona", Membership.Role.MANAGER), ("abe", Membership.Role.ANNOTATOR)):
        user = django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        if role == Membership.Role.MANAGER:
            may_create_projects(user)
        Membership.objects.create(project=project, user=user, role=role)
    return project


def test_turns_are_read_by_speaker_without_markup(page, live_server, dialogues, django_user_model):
    log_in(page, live_server, "mona", "pw-mona-123")
    for uid, speakers in (("multiwoz-1", ["USER", "SYSTEM", "USER", "SYSTEM"]),
                          ("dialogsum-1", ["#Person1#", "#Person2#", "#Person1#"])):
        page.goto(live_server.url + Document.objects.get(uid=uid).get_absolute_url())
        assert page.locator("section.source .turn.spoken .speaker").all_inner_texts() == speakers
        source = page.locator("section.source").inner_text()
        assert "<p>" not in source and "</p>" not in source and "USER :" not in source
        assert ("<PHONENUMBER_1>" in source) == (uid == "multiwoz-1")  # placeholders stay, shown as text
        page.screenshot(path=f"/tmp/dialogue-{uid}.png", full_page=True)

    build_hits(dialogues, "fv")
    annotator = django_user_model.objects.get(username="abe")
    assignment = reserve_next_hit(annotator_for(annotator), dialogues, "fv", confirmed=True)
    page.context.clear_cookies()
    log_in(page, live_server, "abe", "pw-abe-123")
    page.goto(f"{live_server.url}/work/hits/{assignment.public_id}/")
    page.wait_for_selector("#item-0.current")
    blocks = page.locator("#source .turn.spoken")
    assert blocks.count() == len({s.turn for s in assignment.hit.document.sentences.all()})
    first = blocks.first
    assert first.locator(".speaker").inner_text() in ("USER", "#Person1#")
    # The label sits above the turn's sentences, a block of its own.
    label, sentence = first.locator(".speaker").bounding_box(), first.locator(".sentence").first.bounding_box()
    assert label["y"] + label["height"] <= sentence["y"] + 1
    assert "<p>" not in page.locator("#source").inner_text()
    page.screenshot(path="/tmp/dialogue-hit.png")
