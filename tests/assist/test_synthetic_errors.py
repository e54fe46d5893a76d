"""The verifier's made training examples: faithful shortenings that keep the document's words, and sentences with
exactly one planted error, each kind checked by hand on a small document."""

import random

from benchmarks.synthetic_errors import (
    _exchange_names,
    _opposite,
    _swap_name,
    _swap_number,
    made_examples,
    near_copies,
    planted,
)

SOURCE = [
    "Harbour master Lena Vogt said the new quay cost 14 million euros, which was paid by the port authority.",
    "The quay opened on 3 May 2024 after two years of work.",
    "Vogt expects cargo volumes to rise by 20 percent.",
    "Contractor Brask Marine built the quay, while Osterby Council paid for the access road.",
    "In the first week, 9 ships used the quay.",
]
DOCUMENT = "\n".join(SOURCE)


def test_near_copies_keep_a_whole_clause_and_shorten_only_names_the_document_shortens():
    copies = near_copies(SOURCE[0], DOCUMENT)
    assert "Harbour master Lena Vogt said the new quay cost 14 million euros." in copies
    # The document itself calls her "Vogt", so the surname alone is still her.
    assert ("Harbour master Vogt said the new quay cost 14 million euros, which was paid by the port authority."
            in copies)
    # "Marine" never stands alone in the document: "Brask Marine" is not cut to it.
    assert not any("built" in copy and "Brask" not in copy for copy in near_copies(SOURCE[3], DOCUMENT))
    assert "9 ships used the quay." not in near_copies(SOURCE[4], DOCUMENT)  # Five words: too short to stand.
    assert all(copy != sentence for sentence in SOURCE for copy in near_copies(sentence, DOCUMENT))


def test_a_cut_never_falls_inside_a_list():
    sentence = "The board approved new cranes, tugs and a pilot boat for the harbour in Osterby."
    assert near_copies(sentence, sentence) == []


def test_a_name_is_swapped_for_another_name_of_the_document():
    made = _swap_name("Brask Marine built the quay.", DOCUMENT, random.Random(1))
    assert made != "Brask Marine built the quay." and made.endswith(" built the quay.")
    assert made.split(" built")[0] in {"Lena Vogt", "Osterby Council"}  # Same length of name first.


def test_a_number_is_swapped_whole_for_another_of_the_same_kind():
    rng = random.Random(3)
    for _ in range(20):
        made = _swap_number("The quay opened in 2024 and cost 14 million euros.", DOCUMENT, rng)
        assert made != "The quay opened in 2024 and cost 14 million euros."
        changed = made.replace("The quay opened in ", "").replace(" million euros.", "").split(" and cost ")
        year, cost = changed
        assert (year == "2024") != (cost == "14")  # Exactly one of the two changed.
        assert len(year) == 4  # A year is replaced by a year.


def test_an_opposite_keeps_the_word_form():
    made = _opposite("Cargo volumes rose after the quay opened.", DOCUMENT, random.Random(0))
    assert made in {"Cargo volumes fell after the quay opened.", "Cargo volumes rose before the quay opened.",
                    "Cargo volumes rose after the quay closed."}


def test_two_names_trade_places():
    made = _exchange_names("Brask Marine paid Osterby Council for the road.", DOCUMENT, random.Random(0))
    assert made == "Osterby Council paid Brask Marine for the road."


def test_a_sentence_with_nothing_to_change_gives_no_error():
    assert planted("it was a quiet week at the harbour.", DOCUMENT, random.Random(0)) is None


def test_made_examples_label_shortenings_faithful_and_planted_errors_wrong():
    made = made_examples(SOURCE, ["Lena Vogt expects cargo volumes to rise by 20 percent."], [0, 3],
                         random.Random(5))
    faithful = [text for text, label in made if label == 0]
    errors = [text for text, label in made if label == 1]
    assert faithful and all(text in near_copies(SOURCE[0], DOCUMENT) + near_copies(SOURCE[3], DOCUMENT)
                            for text in faithful)
    assert len(errors) == 3  # One per chosen document sentence, one per faithful summary sentence.
    assert not set(errors) & set(SOURCE)
