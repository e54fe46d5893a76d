"""The offline labeler's rule-based checks (assist.llm.offline_checks): what is extracted from a sentence and when
the document supports it. Plain functions over text: no model, no database."""

import pytest

from assist.llm.offline_checks import DATE, NAME, NUMBER, PLACEHOLDER, TIME, Source, analyse, opposites
from assist.llm.offline_pairing import Document, same_stem, stem
from assist.llm.offline_probes import names


def items(text: str) -> list[tuple[str, str, object]]:
    return [(item.kind, item.text, next(iter(item.values))) for item in analyse(text).items]


@pytest.mark.parametrize("text, kind, shown, value", [
    ("The bridge cost £3.2 million in the end.", NUMBER, "£3.2 million", 3_200_000),
    ("The bridge cost 3,200,000 pounds in the end.", NUMBER, "3,200,000", 3_200_000),
    ("It holds forty thousand books.", NUMBER, "forty thousand", 40_000),
    ("There were twenty-five of them.", NUMBER, "twenty-five", 25),
    ("two hundred and ten people came", NUMBER, "two hundred and ten", 210),
    ("Revenue was $1.1bn last year.", NUMBER, "$1.1bn", 1_100_000_000),
    ("Opened on the 4th of the month.", NUMBER, "4th", 4),
    ("Sales rose 12% this year.", NUMBER, "12", 12),
    ("It offers a 99-per-cent mortgage.", NUMBER, "99", 99),
    ("It opens at 8:30 am.", TIME, "8:30 am", (8, 30)),
    ("The last bus leaves at 7 pm.", TIME, "7 pm", (7, 0)),
    ("It opened on Wednesday.", DATE, "Wednesday", "Wednesday"),
    ("Works start in Sept next year.", DATE, "Sept", "September"),
    ("The train leaves from <PLACE_1> today.", PLACEHOLDER, "<PLACE_1>", "<PLACE_1>"),
    ("The study was led by Kadri Saar.", NAME, "Kadri", "kadri"),
])
def test_it_extracts_the_checkable_details(text, kind, shown, value):
    assert (kind, shown, value) in items(text)


def test_written_ordinals_are_numbers_but_first_time_is_prose():
    assert (NUMBER, "twenty-first", 21) in items("The next meeting is on the twenty-first of May.")
    assert (NUMBER, "fifth", 5) in items("It opens on the fifth of March.")
    assert items("For the first time, in the second half, they scored.") == []
    assert Source(["We meet on the fourteenth of May."]).anywhere(analyse("They meet on 14 May.").items[0])


def test_one_and_the_modal_may_are_not_claims():
    assert items("One of us may come in one day.") == []
    assert (DATE, "May", "May") in items("Works start in May 2025.")


def test_titles_pronouns_and_speaker_tags_are_not_names():
    assert items("Then Dr Okafor said #Person1# and I agreed.") == [(NAME, "Okafor", "okafor")]


def test_a_capitalised_first_word_is_a_name_only_where_the_document_writes_it_so():
    source = Source(["Researchers at Tartu met Kadri Saar, and Saar agreed."])
    checked = [item.text for item in source.checked_items(analyse("Saar published it. Critics disagreed."))]
    assert checked == ["Saar"]  # "Critics" opens a sentence and is never capitalised inside one.


def test_possessives_accents_and_inflections_match_a_name():
    source = Source(["The Zürich office of the Estonia Trust opened."])
    for sentence in ("The Zurich office opened.", "The Estonian Trust's office opened."):
        assert all(source.anywhere(item) for item in source.checked_items(analyse(sentence)))


def test_a_number_needs_the_same_value_unless_it_is_hedged_as_a_rounding():
    source = Source(["The car park has 140 spaces and 8.4 million visitors."])
    [about] = analyse("It has about 150 spaces.").items
    [over] = analyse("It has over 150 spaces.").items
    [exact] = analyse("It has 8,400,000 visitors.").items
    assert source.anywhere(about) and not source.anywhere(over) and source.anywhere(exact)


def test_a_time_matches_a_bare_hour_and_a_written_number():
    source = Source(["We have a table at seven o'clock."])
    [time] = analyse("The table is booked for 7 pm.").items
    assert source.anywhere(time)


def test_a_number_conflicts_when_the_closest_sentences_count_the_same_thing_otherwise():
    source = Source(["It has 22 consulting rooms and a pharmacy.", "The car park was enlarged to 140 spaces."])
    [swapped] = analyse("The car park was enlarged to 22 spaces.").items
    assert source.anywhere(swapped)  # 22 is in the document, counting rooms...
    assert source.conflict(swapped, [1, 0]) == (1, "140 spaces")  # ...but the closest sentence counts 140 spaces.
    [fused] = analyse("The clinic has 22 consulting rooms.").items
    assert source.conflict(fused, [1]) is None  # Stated elsewhere with the same unit: a fused sentence.


def test_a_range_names_its_unit_once():
    source = Source(["The bridge cuts the walk from 35 minutes to about 12."])
    [_, twelve] = analyse("It cuts the walk from 35 to about 12 minutes.").items
    assert twelve.unit == "minute" and source.conflict(twelve, [0]) is None


def test_dates_and_times_found_elsewhere_never_conflict():
    source = Source(["The vote was on 4 March.", "It should be finished by the end of June."])
    june = [item for item in analyse("Due by June, it was voted on in March.").items if item.text == "June"][0]
    assert source.conflict(june, [0]) is None


def test_speaker_labels_support_names():
    source = Source(["Titanium is too expensive."], speakers=["Industrial Designer"])
    assert all(source.anywhere(item) for item in source.checked_items(analyse("The Industrial Designer said no.")))
    assert not Source(["Titanium is too expensive."]).anywhere(analyse("The Industrial Designer said no.").items[0])


def test_a_speakers_name_is_stated_in_each_of_their_turns():
    turns = ["What did the nurse measure?", "She said my blood pressure was 158 over 96.", "That is high."]
    source = Source(turns, speakers=["Pharmacist", "Ahmed Castell", "Pharmacist"])
    castell = next(item for item in analyse("Castell said his blood pressure was 158 over 96.").items
                   if item.kind == NAME)
    assert source.where(castell) == [1]
    pharmacist = next(item for item in analyse("The Pharmacist called it high.").items if item.kind == NAME)
    assert source.where(pharmacist) == [0, 2]
    # Prose has no speakers; a list that is not one label per sentence is refused rather than misread.
    assert Source(turns).where(castell) == []
    with pytest.raises(ValueError, match="one per sentence"):
        Source(turns, speakers=["Pharmacist", "Ahmed Castell"])


def test_opposite_words_are_found_where_the_source_does_not_use_the_summary_word():
    said = analyse("Waiting times will rise to ten days.")
    assert opposites(said, analyse("Waiting times are expected to fall to ten days.")) == [("rise", "fall")]
    assert opposites(said, analyse("Times rise in winter and fall in summer.")) == []


def test_negation_is_noticed():
    assert analyse("The clinic hasn't opened.").negated and analyse("It never opened.").negated
    assert not analyse("The clinic opened on Monday.").negated


# --- Who did what (assist.llm.offline_pairing): pairings of words with names and numbers.

STUDY = Document([
    "A two-year study of farm soils was led by Dr Helena Brandt of Marlow University.",
    "Her colleague Samuel Reyes collected more than 900 soil samples from 48 farms.",
    "Brandt said the difference was largest on clay soils.",
    "Riverside Rovers beat Castleford Athletic 3-1 in the county cup final.",
    "Northwind will pay with £150 million of new debt and £60 million from its cash reserves.",
])


def reversed_roles(sentence: str) -> list[tuple[str, str, str]]:
    return [(r.first, r.word, r.second) for r in STUDY.reversals(STUDY.summary_frame(sentence))]


def test_two_names_in_reversed_roles_are_found_unless_the_voice_turns_them():
    assert reversed_roles("Castleford Athletic beat Riverside Rovers 3-1.") == [
        ("Castleford Athletic", "beat", "Riverside Rovers")]
    assert reversed_roles("Castleford Athletic were beaten 3-1 by Riverside Rovers.") == []
    assert reversed_roles("Riverside Rovers beat Castleford Athletic in the final.") == []


def test_two_numbers_in_reversed_roles_are_found():
    assert reversed_roles("Northwind will pay with £60 million of new debt and £150 million of its cash.") == [
        ("£60 million", "debt", "£150 million")]
    assert reversed_roles("Northwind will pay with £150 million of new debt and £60 million of its cash.") == []


def test_the_document_knows_its_names_and_its_speakers():
    # "Brandt said ..." and "Northwind will pay ...": one capitalised word opening a sentence is not taken as a name.
    assert STUDY.names == ["Helena Brandt of Marlow University", "Samuel Reyes", "Riverside Rovers",
                           "Castleford Athletic"]
    dialogue = Document(["We can deliver on Friday.", "Friday suits me."], speakers=["Agent", "Customer"])
    assert dialogue.names == ["Agent", "Customer"]


def test_names_leave_out_articles_titles_calendar_words_and_a_lone_opening_word():
    assert names("The Harbour Street Library opened in May.") == ["Harbour Street Library"]
    assert names("Dr Helena Brandt met Samuel Reyes on Monday.") == ["Helena Brandt", "Samuel Reyes"]
    assert names("Repairs close the room until March.") == []


def test_numbers_a_reader_computes_from_two_of_the_documents_are_derived():
    source = Source(["Of the 175 riders who started, 82 finished.", "The team had 412 staff, 173 of them abroad."])
    derived = source.derived_numbers
    # 175 - 82 did not finish, 175 + 82, twice 82, 173 of 412 is 42 percent, and the document's own numbers.
    assert {93, 257, 164, 42, 175} <= derived
    assert 94 not in derived and 1000 not in derived


def test_stems_match_inflections_but_not_short_unrelated_words():
    assert same_stem(stem("proposed"), stem("proposal")) and same_stem(stem("collected"), stem("collecting"))
    assert not same_stem(stem("led"), stem("lead")) and not same_stem(stem("voted"), stem("vetoed"))


def test_a_summary_using_both_sides_of_a_pair_is_not_an_opposite():
    source = analyse("Fernhill library will shut in January, while the central library will extend its hours.")
    assert opposites(analyse("Fernhill will open in January."), source) == [("open", "shut")]
    assert opposites(analyse("Fernhill will close in January and the central library will open longer."),
                     source) == []


def test_a_number_with_its_unit_after_of_is_the_same_count():
    source = Source(["Her colleague collected samples from 48 farms.", "A follow-up will test 12 of the farms."])
    [twelve] = analyse("The follow-up will test 12 farms.").items
    assert source.conflict(twelve, [0, 1]) is None
    [thirty] = analyse("The follow-up will test 30 farms.").items
    assert not source.anywhere(thirty)
    [swapped] = [item for item in analyse("The samples came from 12 farms.").items if item.kind == NUMBER]
    assert Source(["Samples came from 48 farms.", "A follow-up will test 12 fields."]).conflict(swapped, [0]) == (
        0, "48 farms")


def test_a_long_document_derives_numbers_only_from_nearby_sentences():
    # 200 sentences, 400 numbers: all pairs would be 80,000; each sentence is paired with the next two only.
    source = Source([f"Station {n} counted {n * 1000 + 7} birds." for n in range(200)])
    derived = source.derived_numbers
    assert 1000 in derived  # The birds of one station less those of the next.
    assert 199_000 not in derived  # Station 199's birds less station 0's: too far apart.
    assert len(derived) < 20_000
