"""Redaction (paper appendix E) on a booking dialogue written for these tests."""

import pytest

from assist.redaction import (
    CODE,
    DAY,
    PHONENUMBER,
    PLACE,
    TIME,
    RedactionError,
    Span,
    find_entities,
    redact,
    redact_document_rows,
    redact_with_rules,
)

DIALOGUE = """USER: I need a room at the Lakeside Inn.
SYSTEM: It is a cheap guesthouse. The phone number is 01223 462983, postcode cb41da. Shall I book it?
USER: I also need a train to Norwich by 17:30 on Thursday, leaving after 9am.
SYSTEM: TR4417 leaves at 15:05 on thursday and arrives at 16:40. The fare is 14.08 pounds.
USER: Book it for 3 people. Call me on +44 7700 900123.
SYSTEM: Your reference is K9QZ2R1M. The train arrives by 17:30 on Thursday. Anything else?"""


def span(text, entity, category, occurrence=0):
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(entity, start + 1)
    return (start, start + len(entity), category)


def test_the_same_entity_keeps_its_number_and_numbers_follow_first_appearance():
    text = "From Leeds to York, then York to Hull. Back in Leeds."
    spans = [
        span(text, "York", PLACE, 1),
        span(text, "Leeds", PLACE),
        span(text, "York", PLACE),
        span(text, "Hull", PLACE),
        span(text, "Leeds", PLACE, 1),
    ]

    assert redact(text, spans) == "From <PLACE_1> to <PLACE_2>, then <PLACE_2> to <PLACE_3>. Back in <PLACE_1>."


def test_each_category_has_its_own_numbering():
    text = "Monday at 10:00, Tuesday at 11:00, Monday at 10:00."
    spans = find_entities(text)
    assert redact(text, spans) == "<DAY_1> at <TIME_1>, <DAY_2> at <TIME_2>, <DAY_1> at <TIME_1>."


def test_category_names_are_normalised_and_case_of_the_entity_is_ignored():
    text = "Tuesday or tuesday"
    assert redact(text, [(0, 7, "day"), (11, 18, "Day")]) == "<DAY_1> or <DAY_1>"
    assert redact("call 123", [(5, 8, "phone number")]) == "call <PHONENUMBER_1>"


def test_the_output_keeps_angle_brackets_as_text():
    redacted = redact("Ring 01223 462983 now", [(5, 17, PHONENUMBER)])
    assert redacted == "Ring <PHONENUMBER_1> now"
    assert "&lt;" not in redacted


@pytest.mark.parametrize(
    "spans, message",
    [
        ([(0, 5, PLACE), (3, 8, PLACE)], "overlap"),
        ([(0, 5, PLACE), (0, 5, PLACE)], "overlap"),
        ([(5, 50, PLACE)], "outside the text"),
        ([(-1, 3, PLACE)], "outside the text"),
        ([(4, 4, PLACE)], "outside the text"),
        ([(0, 3, "COLOUR")], "Unknown redaction category"),
        ([(0, 3)], r"A span is \(start, end, category\)"),
        ([(0.0, 3, PLACE)], "integers"),
    ],
)
def test_bad_spans_are_refused(spans, message):
    with pytest.raises(RedactionError, match=message):
        redact("York to Leeds", spans)


def test_rules_find_phone_numbers_times_days_codes_and_postcodes():
    found = {(DIALOGUE[s.start:s.end], s.category) for s in find_entities(DIALOGUE)}

    assert ("01223 462983", PHONENUMBER) in found
    assert ("+44 7700 900123", PHONENUMBER) in found
    assert ("17:30", TIME) in found and ("9am", TIME) in found and ("15:05", TIME) in found
    assert ("Thursday", DAY) in found and ("thursday", DAY) in found
    assert ("TR4417", CODE) in found and ("K9QZ2R1M", CODE) in found
    assert ("cb41da", "ADDRESS") in found
    texts = {text for text, _ in found}
    assert "14.08" not in texts and "3" not in texts  # Prices and counts stay.
    spans = find_entities(DIALOGUE)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))


def test_redact_with_rules_and_manual_places():
    places = [span(DIALOGUE, "Lakeside Inn", PLACE), span(DIALOGUE, "Norwich", PLACE)]

    redacted = redact_with_rules(DIALOGUE, places)

    assert redacted.splitlines() == [
        "USER: I need a room at the <PLACE_1>.",
        "SYSTEM: It is a cheap guesthouse. The phone number is <PHONENUMBER_1>, postcode <ADDRESS_1>. "
        "Shall I book it?",
        "USER: I also need a train to <PLACE_2> by <TIME_1> on <DAY_1>, leaving after <TIME_2>.",
        "SYSTEM: <CODE_1> leaves at <TIME_3> on <DAY_1> and arrives at <TIME_4>. The fare is 14.08 pounds.",
        "USER: Book it for 3 people. Call me on <PHONENUMBER_2>.",
        "SYSTEM: Your reference is <CODE_2>. The train arrives by <TIME_1> on <DAY_1>. Anything else?",
    ]


def test_manual_spans_win_over_rules():
    text = "Meet at TR4417 Plaza."
    assert redact_with_rules(text, [(8, 20, PLACE)]) == "Meet at <PLACE_1>."


def test_years_and_ranges_are_not_phone_numbers():
    assert find_entities("The 2019-2020 season and 1,250 fans.") == []


def test_a_span_is_a_tuple():
    assert Span(0, 4, PLACE) == (0, 4, PLACE)


def test_placeholders_already_in_the_text_are_not_reused():
    text = "Book <PLACE_1> near Grantchester at <TIME_3>, then 10:00."
    spans = [span(text, "Grantchester", PLACE)]

    assert redact_with_rules(text, spans) == "Book <PLACE_1> near <PLACE_2> at <TIME_3>, then <TIME_4>."


def test_one_documents_rows_share_one_map_and_the_sources_reading_wins_over_the_rules():
    document = "Meet at TR4417 Plaza on Monday. TR4417 Plaza is by the station."
    rows = [
        {"uid": "d", "document": document, "reference": "A meeting on monday.", "model": "a",
         "summary": "They meet at TR4417 Plaza on Monday.", "pred_keyfact": ["The meeting is at TR4417 Plaza."]},
        {"uid": "d", "document": document, "reference": "A meeting on monday.", "model": "b",
         "summary": "They meet on Tuesday at TR4417.", "pred_keyfact": ["The meeting is at TR4417 Plaza."]},
    ]

    redacted, replaced = redact_document_rows(rows, spans=[span(document, "TR4417 Plaza", PLACE)], rules=True)

    assert redacted[0]["document"] == "Meet at <PLACE_1> on <DAY_1>. <PLACE_1> is by the station."
    assert [row["reference"] for row in redacted] == ["A meeting on <DAY_1>."] * 2
    assert [row["summary"] for row in redacted] == ["They meet at <PLACE_1> on <DAY_1>.",
                                                    "They meet on <DAY_2> at <CODE_1>."]
    assert [row["pred_keyfact"] for row in redacted] == [["The meeting is at <PLACE_1>."]] * 2
    assert [row["redact_type"] for row in redacted] == ["redacted"] * 2
    assert replaced == 9
    assert rows[0]["document"] == document  # The given rows are left alone.


def test_rows_with_nothing_to_replace_keep_their_redact_type():
    rows = [{"uid": "d", "document": "Nothing here.", "model": "a", "summary": "Nothing.", "redact_type": ""}]

    assert redact_document_rows(rows, rules=True) == (rows, 0)
