"""Key-fact generation and voting (paper B.3)."""

import json

import pytest

from assist.keyfacts import KeyFactVote, clean_candidates, decide, generate_keyfacts, vote_keyfacts
from assist.llm.base import NotSupported
from assist.llm.offline import OfflineSimilarityBackend
from assist.llm.openai_compatible import OpenAICompatibleBackend
from assist.prelabel import InMemoryCache
from assist.prompts import KEYFACT_GENERATE_VERSION

from .conftest import Reply, chat_reply

SOURCE = ["The museum reopened in May after a two-year renovation.", "The new wing cost 12 million euros."]


def vote(accept):
    return KeyFactVote("openai", "m", accept, "" if accept is None else "why", "" if accept is not None else "failed")


@pytest.mark.parametrize(
    "accepts, accepted",
    [
        ([True, True, False], True),
        ([True, False, False], False),
        ([False, False, False], False),
        ([True, False], True),  # Tie: kept, the annotators decide.
        ([False, None, None], False),  # Only one voter answered, and it rejected.
        ([True, False, None], True),  # Tie among those that answered.
        ([None, None, None], True),  # Nobody answered: nothing rejects it.
        ([], True),
    ],
)
def test_a_strict_majority_of_answering_voters_drops_a_candidate(accepts, accepted):
    verdict = decide("fact", [vote(a) for a in accepts])
    assert verdict.accepted is accepted
    assert verdict.accept_count == accepts.count(True) and verdict.reject_count == accepts.count(False)


def test_candidates_are_stripped_deduplicated_and_capped():
    raw = ["  The museum reopened  in May. ", "the museum reopened in may", "", "A"]
    raw += [f"Fact {i}." for i in range(30)]
    cleaned = clean_candidates(raw)
    assert cleaned[:2] == ["The museum reopened in May.", "A"]
    assert len(cleaned) == 20


def test_generation_asks_once_and_caches(chat_server):
    facts = ["The museum reopened in May.", "The museum reopened in May", "The new wing cost 12 million euros."]
    facts += [f"Extra fact number {i}." for i in range(25)]
    chat_server.add(chat_reply("```json\n" + json.dumps(facts) + "\n```"))
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="gen", timeout=2)
    cache = InMemoryCache()

    first = generate_keyfacts(backend, SOURCE, max_retries=0, cache=cache)
    second = generate_keyfacts(backend, SOURCE, max_retries=0, cache=cache)

    assert first.status == "ok" and first.prompt_version == KEYFACT_GENERATE_VERSION
    assert first.candidates[:2] == ["The museum reopened in May.", "The new wing cost 12 million euros."]
    assert len(first.candidates) == 20
    assert second.cached and second.candidates == first.candidates
    assert len(chat_server.requests) == 1
    assert "The new wing cost 12 million euros." in chat_server.requests[0].json["messages"][0]["content"]


def test_a_failed_generation_says_why(chat_server, sleeps):
    chat_server.add(Reply(status=500, body="down"), Reply(status=500, body="down"))
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="gen", timeout=2)

    result = generate_keyfacts(backend, SOURCE, max_retries=1, sleep=sleeps.append)

    assert (result.status, result.candidates, result.attempts) == ("failed", [], 2)
    assert "HTTP 500" in result.error


def test_the_offline_backend_cannot_generate_key_facts():
    backend = OfflineSimilarityBackend(identity="test@0", encode=lambda sentences: None)
    with pytest.raises(NotSupported, match="Import key-facts"):
        generate_keyfacts(backend, SOURCE, max_retries=3)


def test_voters_vote_and_the_majority_decides(chat_server, sleeps):
    candidates = ["The museum reopened in May.", "The museum serves lunch.", "The wing cost 12 million euros."]
    answers = {
        "voter-a": ["yes", "no", "yes"],
        "voter-b": ["yes", "no", "no"],
        "voter-c": None,  # Always broken: counts as not answering.
    }

    def respond(request):
        said = answers[request.json["model"]]
        if said is None:
            return chat_reply("Sorry, I can't.", model=request.json["model"])
        votes = [{"candidate": i, "response": r, "reason": f"Reason {i}."} for i, r in enumerate(said, start=1)]
        return chat_reply(json.dumps(votes), model=request.json["model"])

    chat_server.responder = respond
    voters = [OpenAICompatibleBackend(base_url=chat_server.base_url, model=m, timeout=2) for m in answers]

    verdicts = vote_keyfacts(voters, SOURCE, candidates, max_retries=1, sleep=sleeps.append)

    assert [v.accepted for v in verdicts] == [True, False, True]  # The third is a 1-1 tie: kept.
    assert [(v.accept_count, v.reject_count) for v in verdicts] == [(2, 0), (0, 2), (1, 1)]
    first = verdicts[0].votes
    assert [(v.model, v.accept) for v in first] == [("voter-a", True), ("voter-b", True), ("voter-c", None)]
    assert first[0].reason == "Reason 1."
    assert "no JSON" in first[2].error
    assert len(chat_server.requests) == 1 + 1 + 2
    prompt = chat_server.requests[0].json["messages"][0]["content"]
    assert "[2] The museum serves lunch." in prompt


def test_no_candidates_no_requests(chat_server):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="m", timeout=2)
    assert vote_keyfacts([backend], SOURCE, []) == []
    assert chat_server.requests == []
