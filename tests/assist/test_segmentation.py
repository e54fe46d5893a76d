"""Segmentation: exact substrings, speaker turns, abbreviations, placeholders."""

from benchmarks.segmentation_gold import GOLD
from corpus.segmentation import segment_document, segment_summary, split_turns


def test_it_splits_each_hand_segmented_kind_exactly():
    for kind, sentences in GOLD.items():
        assert segment_summary(" ".join(sentences)) == sentences, kind


def test_sentences_are_exact_substrings_of_the_text():
    text = "First   one.  Second\tone!\n\nThird <CODE_1> here."
    sentences = segment_summary(text)
    assert sentences == ["First   one.", "Second\tone!", "Third <CODE_1> here."]
    assert all(sentence in text for sentence in sentences)


def test_it_splits_dialogues_into_turns_then_sentences():
    text = "USER: Hi. I need a taxi.\nSYSTEM: Where to?\nthe station, please\n#Person1#: Thanks!"
    assert split_turns(text) == [
        ("USER", "Hi. I need a taxi."), ("SYSTEM", "Where to?\nthe station, please"), ("#Person1#", "Thanks!"),
    ]
    sentences = segment_document(text, dialogue=True)
    assert [(s.index, s.turn, s.speaker, s.text) for s in sentences] == [
        (0, 0, "USER", "Hi."), (1, 0, "USER", "I need a taxi."), (2, 1, "SYSTEM", "Where to?"),
        (3, 1, "SYSTEM", "the station, please"), (4, 2, "#Person1#", "Thanks!"),
    ]


def test_a_dialogue_without_speakers_is_one_turn_per_line():
    sentences = segment_document("No speaker here. Second line.", dialogue=True)
    assert [(s.turn, s.speaker) for s in sentences] == [(0, ""), (0, "")]


def test_markup_like_text_is_kept_as_data():
    assert segment_summary("<p>USER: hi</p> and <script>alert(1)</script>. Next.") == [
        "<p>USER: hi</p> and <script>alert(1)</script>.", "Next.",
    ]
