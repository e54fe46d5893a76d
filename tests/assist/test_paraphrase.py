"""Paraphrases for key-fact alignment attention checks (paper G.3)."""

import json

import pytest

from assist.llm.offline import OfflineSimilarityBackend
from assist.llm.openai_compatible import OpenAICompatibleBackend
from assist.paraphrase import llm_paraphrase, paraphrase_keyfact, rule_paraphrase
from assist.prompts import PARAPHRASE_VERSION

from .conftest import chat_reply

FACTS = [
    "The mayor opposed the plan.",
    "Tom Hale scored two goals.",
    "The museum reopened in May.",
    "Lake Garda hotels are cheaper than chalets in Austria.",
    "Mara Voss posts travel photos on Instagram.",
    "Portugal has cheap hostels because rents are low.",
    "The train departs at 08:15.",
]


def words(text):
    return text.lower().replace(",", "").rstrip(".").split()


@pytest.mark.parametrize("fact", FACTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_paraphrase_differs_in_wording(fact, seed):
    paraphrase = rule_paraphrase(fact, seed=seed)
    assert words(paraphrase) != words(fact)
    assert paraphrase.endswith(".") and paraphrase[0].isupper()


@pytest.mark.parametrize("fact", FACTS)
def test_the_paraphrase_is_deterministic_for_a_seed(fact):
    assert rule_paraphrase(fact, seed=7) == rule_paraphrase(fact, seed=7)


def test_simple_facts_become_passive():
    assert rule_paraphrase("The mayor opposed the plan.", seed=0) == "The plan was opposed by the mayor."
    assert rule_paraphrase("Tom Hale scored two goals.", seed=1) == "Two goals were scored by Tom Hale."


def test_time_phrases_and_causes_move_to_the_front():
    assert rule_paraphrase("The museum reopened in May.", seed=0).startswith("In May, the museum reopened")
    assert rule_paraphrase("Portugal has cheap hostels because rents are low.").startswith(
        "Because rents are low, Portugal has inexpensive hostels"
    )


def test_names_keep_their_capitals():
    for seed in range(5):
        assert "Mara Voss posts travel photos on Instagram" in rule_paraphrase(FACTS[4], seed=seed)


def test_every_entity_survives():
    # Entailment needs the entities and numbers of the key-fact, unchanged.
    for fact, entities in [
        ("Tom Hale scored two goals.", ["Tom Hale", "two goals"]),
        ("The train departs at 08:15.", ["train", "08:15"]),
        ("Lake Garda hotels are cheaper than chalets in Austria.", ["Lake Garda hotels", "chalets in Austria"]),
    ]:
        for seed in range(5):
            paraphrase = rule_paraphrase(fact, seed=seed).lower()
            assert all(entity.lower() in paraphrase for entity in entities), paraphrase


def test_an_empty_fact_is_refused():
    with pytest.raises(ValueError):
        rule_paraphrase("  ")


def test_the_llm_paraphrase(chat_server):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="m", timeout=2)
    chat_server.add(chat_reply(json.dumps({"paraphrase": "The plan met the mayor's opposition."})))

    result = llm_paraphrase(backend, "The mayor opposed the plan.", max_retries=0)

    assert (result.text, result.method, result.prompt_version) == (
        "The plan met the mayor's opposition.", "llm", PARAPHRASE_VERSION
    )
    assert "The mayor opposed the plan." in chat_server.requests[0].json["messages"][0]["content"]


def test_an_llm_echo_is_retried(chat_server, sleeps):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="m", timeout=2)
    chat_server.add(
        chat_reply('{"paraphrase": "The mayor opposed the plan."}'),
        chat_reply('{"paraphrase": "The plan was opposed by the mayor."}'),
    )

    result = llm_paraphrase(backend, "The mayor opposed the plan.", max_retries=1, sleep=sleeps.append)

    assert result.text == "The plan was opposed by the mayor." and result.attempts == 2


def test_the_rules_step_in_when_the_llm_fails(chat_server, sleeps):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="m", timeout=2)
    chat_server.add(chat_reply("{}"))

    result = paraphrase_keyfact(backend, "The mayor opposed the plan.", max_retries=0, sleep=sleeps.append)

    assert result.method == "rules" and result.text == rule_paraphrase("The mayor opposed the plan.")
    assert "ParseError" in result.error


def test_the_offline_backend_uses_the_rules():
    backend = OfflineSimilarityBackend(identity="test@0", encode=lambda sentences: None)
    result = paraphrase_keyfact(backend, "The mayor opposed the plan.", seed=3)
    assert result.method == "rules" and result.text == rule_paraphrase("The mayor opposed the plan.", seed=3)
