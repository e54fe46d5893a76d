"""Annotators read the AI's reason in plain words: source sentences by the numbers the page gives them, no cosine
similarity and no threshold. Managers' pages keep the reason as it was stored, numbers included."""

import re

import pytest
from django.urls import reverse

from annotation.models import Unit
from annotation.services.assignment import reserve_next_hit
from annotation.wording import plain_reason
from assist.llm.offline import OfflineSimilarityBackend
from assist.models import PreLabel
from tests.work import annotator_for

# A short report of a made-up town's new swimming pool, written for these tests.
POOL = [
    "The town of Ellesby opened its new swimming pool on Saturday, 3 May.",
    "The pool cost £5.2 million, paid for by the town council and a lottery grant.",
    "It has eight lanes, a diving board and a learners' pool for children.",
    "Manager Priya Haldane said about 1,200 people had already bought season tickets.",
    "The old pool closed in 2019 because its roof was unsafe.",
    "Entry prices are expected to fall next year as more people join.",
]
NUMBERS = re.compile(r"cosine|threshold|\d\.\d\d|\bS\d")


@pytest.fixture(scope="module")
def offline():
    return OfflineSimilarityBackend(model_path="")


def judged(offline, sentence: str) -> tuple[str, str]:
    [judgement] = offline.label_summary(POOL, [sentence])
    return judgement.category, judgement.reason


def test_a_sentence_that_passes_names_its_closest_source_sentences_as_a_list(offline):
    category, stored = judged(offline, "Manager Priya Haldane said 1,200 people had bought season tickets.")
    assert category == "no_error" and "cosine similarity" in stored and "S4, " in stored
    plain = plain_reason(stored)
    assert re.fullmatch(r"Closest source sentences: 4, \d and \d\. The document contains its 'Priya', 'Haldane' and "
                        r"'1,200', and those sentences give no other value for them\. Its meaning is not checked\.",
                        plain), plain
    assert not NUMBERS.search(plain)


def test_a_sentence_far_from_every_source_sentence_says_so_without_the_numbers(offline):
    category, stored = judged(offline, "The referee sent off two players before half time.")
    assert category == "out_of_article" and "below the threshold" in stored
    plain = plain_reason(stored)
    assert re.fullmatch(r'No source sentence is close to it: the closest is sentence \d \("[^"]+"\), so it may state '
                        r"something the document does not\.", plain), plain
    assert not re.search(r"cosine|threshold|\d\.\d\d", plain)


@pytest.mark.parametrize("sentence, words", [
    ("Priya Haldane said about 1,200 season tickets were already sold.",
     "It says 'sold' where the closest source sentence 4 says 'bought'."),
    ("Entry prices are expected to rise next year as more people join.",
     "It says 'rise' where the closest source sentence 6 says 'fall'."),
    ("The pool has eight lanes, a diving board and 1,200 season tickets.",
     "'1,200' is stated only in sentences much further from it, the closest being sentence 4, than its closest "
     "source sentence 3, so it may be taken from another part of the document."),
    ("The pool in the town of Millford opened on Saturday, 3 May.",
     "With 'Ellesby' in place of 'Millford' it is closer to sentence 1, so the document may say this of 'Ellesby'."),
])
def test_every_check_refers_to_source_sentences_by_their_page_numbers(offline, sentence, words):
    category, stored = judged(offline, sentence)
    assert category != "no_error", stored
    plain = plain_reason(stored)
    assert words in plain and not NUMBERS.search(plain), plain
    assert not plain.startswith("Offline labeler")  # The page names the maker beside the judgment.


def test_the_verifiers_score_is_left_out():
    flagged = ("Offline labeler (not an LLM): it says 'rise' where the closest source sentence S6 says 'fall'; the "
               "verifier model agrees (score 0.93 for unsupported, above 0.70).")
    assert plain_reason(flagged) == ("It says 'rise' where the closest source sentence 6 says 'fall'; the verifier "
                                     "model agrees.")
    alone = ("Offline labeler (not an LLM): the verifier model finds it unsupported by its closest source sentences "
             "S2, S4, S6 (score 0.88 for unsupported, above 0.70); its details are in the document, so what it says "
             "of them may be wrong. The model can be wrong: check the sentence against those sentences.")
    assert plain_reason(alone).startswith("The verifier model finds it unsupported by its closest source sentences "
                                          "2, 4 and 6; its details")
    passed = ("Offline labeler (not an LLM): the verifier model finds it supported by its closest source sentences "
              "(score 0.12 for unsupported, at or below 0.70), so it is not flagged; a check noted: it says 'rise' "
              "where the closest source sentence S6 says 'fall'.")
    assert plain_reason(passed) == ("The verifier model finds it supported by its closest source sentences, so it is "
                                    "not flagged; a check noted: it says 'rise' where the closest source sentence 6 "
                                    "says 'fall'.")


def test_the_weighed_chance_is_left_out_with_the_verifiers_score():
    from dataclasses import replace

    from assist.llm.offline import Findings, decide
    from assist.llm.offline_weighing import shipped

    source = ["Entry prices fell this year.", "The pool has six lanes."]
    for changes in ({"verifier": 0.95}, {"verifier": 0.02, "opposites": (("rise", "fell"),)},
                    {"verifier": 0.9, "opposites": (("rise", "fell"),)}, {"verifier": 0.05}):
        found = Findings(best=0, score=0.8, closest=(0, 1), checked=(), absent=(), conflicts=(), opposites=())
        found = replace(found, **changes)
        found = replace(found, weighed=shipped().probability(found, False))
        _, stored = decide(found, source, 0.4)
        assert "chance of an error" in stored
        plain = plain_reason(stored)
        assert not NUMBERS.search(plain) and "chance" not in plain and "score" not in plain, plain


@pytest.mark.parametrize("stored, plain", [
    ("S2 says the pool cost £5.2 million.", "Sentence 2 says the pool cost £5.2 million."),
    ("As S1 and S5 show, the pool opened after the old one closed.",
     "As sentences 1 and 5 show, the pool opened after the old one closed."),
    ("S1-S3 describe the pool; S6 says prices will fall.",
     "Sentences 1 to 3 describe the pool; sentence 6 says prices will fall."),
    ("The summary's 'S4 model' is not the document's \"S5 line\" (S4).",
     "The summary's 'S4 model' is not the document's \"S5 line\" (sentence 4)."),
    ("Offline similarity labeler (no LLM): the closest source sentence is S3 (\"It has eight lanes.\") with cosine "
     "similarity 0.41, at or above the threshold 0.35.",
     "The closest source sentence is 3 (\"It has eight lanes.\")."),
    ("", ""),
])
def test_an_llm_reason_and_an_older_offline_reason_read_the_same_way(stored, plain):
    assert plain_reason(stored) == plain


def test_the_hit_page_and_the_api_word_the_reason_and_the_managers_pages_keep_it(client, corpus, annotator,
                                                                                    manager):
    stored = ("Offline labeler (not an LLM): the closest source sentences are S1, S6, S28 (cosine similarity 0.81, "
              "at or above the threshold 0.35); it has no number, date or name to check. Its meaning is not checked.")
    Unit.objects.filter(hit__project=corpus, task="fv").update(ai_reason=stored)
    PreLabel.objects.filter(summary_sentence__summary__document__project=corpus).update(reason=stored)
    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    client.force_login(annotator)
    html = client.get(reverse("hit_page", args=[assignment.public_id])).content.decode()
    plain = ("Closest source sentences: 1, 6 and 28. It has no number, date or name to check. Its meaning is not "
             "checked.")
    assert f'<p class="reason">{plain}</p>' in html
    assert "cosine" not in html and "0.81" not in html and "threshold" not in html
    units = client.get(f"/api/assignments/{assignment.public_id}/").json()["units"]
    assert {unit["ai_reason"] for unit in units} == {plain}

    client.force_login(manager)
    document = assignment.hit.document
    html = client.get(document.get_absolute_url()).content.decode()
    assert "cosine similarity 0.81, at or above the threshold 0.35" in html
    unit = client.get(f"/api/units/{units[0]['id']}/").json()
    assert unit["ai_reason"] == stored
