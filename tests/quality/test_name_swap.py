"""Sentences with one name exchanged: the offline labeler's blind spot that FV checks use where its AI is wrong."""

import random

from annotation.quality.name_swap import name_swaps, names_in

SENTENCES = [
    "Police in Leeds said that Anna Lindqvist had been arrested on Monday after the raid at the depot.",
    "The mayor, Barack Obama, praised the officers who took part in the operation last week in Leeds.",
    "Officers later said that Obama's car was found near the river by a group of walkers.",
    "Mark Hughes, who owns the depot, told reporters that he had warned the council about the fence.",
    "It was quiet.",
    "A spokesperson for the council in Bradford said that Clara Weiss would review the fence next spring.",
]


def test_names_are_runs_of_capitalised_words_inside_a_sentence():
    assert [run[0] for run in names_in(SENTENCES[0])] == ["Leeds", "Anna Lindqvist"]
    assert [run[0] for run in names_in(SENTENCES[2])] == ["Obama"]  # The possessive stays outside.
    assert [run[0] for run in names_in(SENTENCES[3])] == []  # A sentence's first words are not read as a name.


def test_a_name_is_exchanged_for_another_of_the_document_never_for_a_part_of_itself_or_a_neighbours_name():
    swaps = list(name_swaps(SENTENCES, random.Random(3)))
    assert swaps
    for swap in swaps:
        source = SENTENCES[swap.sentence]
        assert swap.text == source.replace(swap.right, swap.wrong, 1) and swap.text not in SENTENCES
        assert len(swap.wrong.split()) == len(swap.right.split())
        assert not set(swap.wrong.split()) & set(swap.right.split())
        near = " ".join(SENTENCES[max(0, swap.sentence - 1):swap.sentence + 2])
        assert swap.wrong not in near
    # "Obama" is never put for "Barack Obama" (an alias of the same person); the short sentence gives nothing.
    assert not any({swap.right, swap.wrong} == {"Obama", "Barack Obama"} for swap in swaps)
    assert all(swap.sentence != 4 for swap in swaps)
    assert {swap.sentence for swap in swaps} >= {0, 5}


def test_the_candidates_are_the_same_for_the_same_seed():
    assert list(name_swaps(SENTENCES, random.Random(9))) == list(name_swaps(SENTENCES, random.Random(9)))


def test_words_that_are_not_names_are_never_exchanged():
    assert names_in("We start in May, and I'm training two former students to lead it.") == []
    assert names_in("I ask everyone to type one line: <p>Welcome</p> and press enter.") == []
    # Written in lower case elsewhere in the document: a word at the start of a quoted line, not a name.
    assert [run[0] for run in names_in("She said: and then Welcome came first.")] == ["Welcome"]
    assert names_in("She said: and then Welcome came first.", {"welcome"}) == []
    assert [run[0] for run in names_in("He met Jean-Luc Picard, the captain, in New Zealand.")] == [
        "Jean-Luc Picard", "New Zealand"]
