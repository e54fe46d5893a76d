"""The offline labeler's judgments with the real bundled model: each category, the reason that says what produced
it, and determinism (a sentence gets the same judgment alone or inside a summary)."""

import pytest

from assist.calibration import CalibrationError, Point, balanced_accuracy, choose_threshold
from assist.llm.offline import OfflineSimilarityBackend
from assist.parsing import ENTITY, NO_ERROR, OUT_OF_ARTICLE, RELATION

SOURCE = [
    "The new Eastfield clinic opened on Monday, 14 October, after two years of construction.",
    "The building cost £8.4 million, most of it paid by the county health board.",
    "It has 22 consulting rooms, a pharmacy and a small X-ray unit.",
    "Dr Amara Lindqvist said it would serve about 30,000 patients who used to travel to Kettering.",
    "Because of neighbours' concerns, the car park was enlarged to 140 spaces.",
    "Waiting times for routine appointments are expected to fall from three weeks to under ten days.",
]


@pytest.fixture(scope="module")
def backend():
    return OfflineSimilarityBackend(model_path="")


def judge(backend, sentence):
    [judgement] = backend.label_summary(SOURCE, [sentence])
    return judgement.category, judgement.reason


def test_a_faithful_paraphrase_passes_and_the_reason_says_what_was_checked(backend):
    category, reason = judge(backend, "Lindqvist expects the clinic to serve around 30,000 patients from Kettering.")
    assert category == NO_ERROR
    assert reason.startswith("Offline labeler (not an LLM): the closest source sentences are S4,")
    assert "the document contains its 'Lindqvist', '30,000' and 'Kettering'" in reason
    assert reason.endswith("Its meaning is not checked.")


def test_nothing_similar_is_out_of_article(backend):
    category, reason = judge(backend, "The striker scored twice in the second half of the cup final.")
    assert category == OUT_OF_ARTICLE
    assert "no source sentence is close to it" in reason and "below the threshold 0.55" in reason


@pytest.mark.parametrize("sentence, named", [
    ("The building cost £9.4 million, most of it paid by the county health board.", "'£9.4 million'"),
    ("The Eastfield clinic opened on Wednesday after two years of construction.", "'Wednesday'"),
])
def test_a_detail_the_document_never_states_is_an_entity_error(backend, sentence, named):
    category, reason = judge(backend, sentence)
    assert category == ENTITY
    assert reason == (f"Offline labeler (not an LLM): {named} appears nowhere in the document, nor follows from two "
                      "of its numbers.")


def test_a_number_computed_from_two_of_the_documents_is_not_flagged(backend):
    # 140 spaces less 22 rooms: a difference a reader computes.
    category, reason = judge(backend, "The car park has 118 more spaces than the clinic has consulting rooms.")
    assert category == NO_ERROR and "'118' follows from two of its numbers" in reason
    assert judge(backend, "The car park has 119 more spaces than the clinic has consulting rooms.")[0] == ENTITY


def test_a_number_swapped_in_from_elsewhere_is_an_entity_error_naming_the_source_sentence(backend):
    category, reason = judge(backend, "After complaints from neighbours, the car park was enlarged to 22 spaces.")
    assert category == ENTITY
    assert reason == ("Offline labeler (not an LLM): '22 spaces' does not match the closest source sentence S5, "
                      "which has '140 spaces'.")


def test_an_opposite_word_is_a_relation_error(backend):
    category, reason = judge(backend, "Waiting times for routine appointments will rise from three weeks to ten days.")
    assert category == RELATION
    assert reason == "Offline labeler (not an LLM): it says 'rise' where the closest source sentence S6 says 'fall'."


def test_a_place_the_document_does_not_have_is_caught_by_putting_the_documents_place_in(backend):
    category, reason = judge(backend, "Dr Amara Lindqvist said it would serve patients who used to travel to "
                                      "Northampton.")
    assert category == ENTITY
    assert reason.startswith("Offline labeler (not an LLM): with 'Kettering' in place of 'Northampton' it is closer "
                             "to S4 (cosine similarity +0.")
    assert reason.endswith("so the document may say this of 'Kettering'.")


def test_a_detail_stated_only_far_from_the_sentences_source_is_an_entity_error(backend):
    category, reason = judge(backend, "The clinic's 22 consulting rooms cost £8.4 million in total, about 30,000 "
                                      "patients.")
    assert category == ENTITY
    assert reason.startswith("Offline labeler (not an LLM): '30,000' is stated only in sentences much further from "
                             "it, the closest being S4 (cosine similarity 0.")
    # A date fused from another sentence is not held against it: "until March" where the roof work ends in March.
    assert judge(backend, "The clinic opened in October, and its car park has 140 spaces.")[0] == NO_ERROR


def test_a_name_the_document_lacks_is_reported_but_not_flagged_on_its_own(backend):
    category, reason = judge(backend, "Dr Amara Lindqvist, a Swede, said it would serve about 30,000 patients who "
                                      "used to travel to Kettering.")
    assert category == NO_ERROR
    assert "'Swede' is not in the document (not flagged on its own)" in reason


PEOPLE = [
    "A two-year study of farm soils was led by Dr Helena Brandt of Marlow University.",
    "Her colleague Samuel Reyes collected more than 900 soil samples from 48 farms.",
    "Fields ploughed every year held 18% less carbon than fields left unploughed.",
    "The research was funded by the Greenfield Foundation with a grant of £450,000.",
    "Riverside Rovers, the university's football club, beat Castleford Athletic in the county cup final.",
]


def judge_people(backend, sentence):
    [judgement] = backend.label_summary(PEOPLE, [sentence])
    return judgement.category, judgement.reason


def test_a_name_swapped_within_the_document_is_an_entity_error_naming_who_the_document_says(backend):
    category, reason = judge_people(backend, "Samuel Reyes led the two-year study of farm soils.")
    assert category == ENTITY
    assert reason.startswith("Offline labeler (not an LLM): with 'Helena Brandt of Marlow University' in place of "
                             "'Samuel Reyes' it is closer to S1 (cosine similarity +0.")
    category, reason = judge_people(backend, "Dr Helena Brandt collected more than 900 soil samples from 48 farms.")
    assert category == ENTITY and "with 'Samuel Reyes' in place of 'Helena Brandt'" in reason
    assert judge_people(backend, "Helena Brandt of Marlow University led a two-year study of soils on farms.")[0] \
        == NO_ERROR
    assert judge_people(backend, "The Greenfield Foundation paid for the research with a £450,000 grant.")[0] \
        == NO_ERROR


def test_two_names_in_reversed_roles_are_a_relation_error_and_the_passive_is_not(backend):
    category, reason = judge_people(backend, "Castleford Athletic beat Riverside Rovers in the county cup final.")
    assert category == RELATION
    assert reason == ("Offline labeler (not an LLM): it has 'Castleford Athletic' ... 'beat' ... 'Riverside Rovers' "
                      "in the opposite roles to S5.")
    passive = "Castleford Athletic were beaten by Riverside Rovers in the county cup final."
    assert judge_people(backend, passive)[0] == NO_ERROR


def test_a_word_whose_opposite_fits_the_document_better_is_a_relation_error(backend):
    category, reason = judge_people(backend, "Riverside Rovers lost to Castleford Athletic in the county cup final.")
    assert category == RELATION
    assert reason.startswith("Offline labeler (not an LLM): with 'wins' in place of 'lost' it is closer to S5 "
                             "(cosine similarity +0.")
    assert reason.endswith("so it may reverse what the document says.")


def test_a_sentence_gets_the_same_judgment_alone_or_inside_a_summary(backend):
    summary = [
        "The Eastfield clinic opened on 14 October.",
        "After complaints from neighbours, the car park was enlarged to 22 spaces.",
        "The striker scored twice in the second half of the cup final.",
    ]
    together = backend.label_summary(SOURCE, summary)
    alone = [backend.label_summary(SOURCE, [sentence])[0] for sentence in summary]
    assert [(j.category, j.reason) for j in together] == [(j.category, j.reason) for j in alone]
    again = OfflineSimilarityBackend(model_path="").label_summary(SOURCE, summary)
    assert [(j.category, j.reason) for j in again] == [(j.category, j.reason) for j in together]


def test_the_checks_can_be_switched_off_for_comparison(backend):
    similarity_only = OfflineSimilarityBackend(model_path="", checks=False)
    sentence = "The building cost £9.4 million, most of it paid by the county health board."
    assert similarity_only.label_summary(SOURCE, [sentence])[0].category == NO_ERROR
    assert similarity_only.prompt_version == "offline-similarity/v1 threshold=0.55"


def test_another_threshold_is_another_prompt_version_and_shares_the_document_cache(backend):
    strict = backend.with_threshold(0.99)
    assert strict.prompt_version == "offline-checks/v4.2 threshold=0.99" != backend.prompt_version
    assert strict._documents is backend._documents and backend.with_threshold(backend.threshold) is backend
    assert strict.label_summary(SOURCE, ["The clinic has 22 consulting rooms."])[0].category == OUT_OF_ARTICLE


# --- Choosing the threshold (assist.calibration): a worked example.

POINTS = [
    Point(0.2, False, True), Point(0.3, False, True), Point(0.7, True, True),  # errors; the last found by a check
    Point(0.4, False, False), Point(0.5, False, False), Point(0.6, False, False),
]


def test_balanced_accuracy_is_the_mean_of_both_recalls():
    # At 0.5: flagged 0.2, 0.3, 0.4 and the checked 0.7 -> errors 3/3, correct ones 2/3 left alone.
    assert balanced_accuracy(POINTS, 0.5) == pytest.approx((1 + 2 / 3) / 2)
    assert balanced_accuracy(POINTS, 0.0) == pytest.approx((1 / 3 + 1) / 2)  # only the check flags


def test_the_best_threshold_nearest_the_default_is_chosen():
    # Every threshold in (0.30, 0.40] separates them: the one nearest the default wins.
    near = choose_threshold(POINTS, default=0.35)
    assert (near.threshold, near.balanced_accuracy, near.sentences, near.errors) == (0.35, 1.0, 6, 3)
    above = choose_threshold(POINTS, default=0.5)
    assert above.threshold == 0.4 and above.default_balanced_accuracy == pytest.approx(5 / 6)


@pytest.mark.parametrize("points, message", [
    ([], "no sentence has a human fact-verification majority label yet"),
    ([Point(0.5, False, False)] * 3, "at least one sentence the annotators judged erroneous"),
    ([Point(0.5, False, True)] * 2, "at least one sentence the annotators judged correct"),
])
def test_labels_of_one_kind_cannot_calibrate(points, message):
    with pytest.raises(CalibrationError, match=message):
        choose_threshold(points, default=0.35)


def test_a_first_name_stated_far_away_passes_where_the_surname_is_in_the_closest_sentence(backend):
    source = [
        "Chief executive Aileen Morrow apologised to customers in a statement on 10 September.",
        "About 18,000 cheeses were withdrawn from shops across the region.",
        "Two people who ate the cheese were treated in hospital.",
        "Morrow said the company had traced the contamination to a faulty seal on a cooling pipe.",
    ]
    [judgement] = backend.label_summary(source, ["Aileen Morrow traced the contamination to a faulty seal on a "
                                                 "cooling pipe."])
    assert judgement.category == NO_ERROR, judgement.reason
    # The same first name with a surname the document does not pair with that sentence is still far.
    [judgement] = backend.label_summary(source, ["Aileen traced the contamination to a faulty seal on a cooling "
                                                 "pipe."])
    assert judgement.category == ENTITY and "'Aileen' is stated only in sentences much further" in judgement.reason
