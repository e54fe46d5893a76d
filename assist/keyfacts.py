"""Key-fact candidates (paper B.3): one LLM proposes up to 20, other LLMs vote, the majority decides.

Tie rule: a candidate is kept unless a strict majority of the voters that answered rejects it. A tie, or no voter
answering at all, keeps it. The paper drops "those the majority disagree with", and keeping a doubtful candidate is
cheap: key-fact validation by three annotators (KV) decides in the end, while a wrongly dropped one is lost for good.
"""

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from assist.config import backend_config
from assist.llm.base import ChatBackend, ResponseCache, RetryPolicy, cache_key, cached_completion
from assist.parsing import parse_keyfacts, parse_votes
from assist.prompts import (
    KEYFACT_GENERATE_VERSION,
    KEYFACT_VOTE_VERSION,
    MAX_KEYFACTS,
    keyfact_generate_messages,
    keyfact_vote_messages,
)


@dataclass(frozen=True)
class KeyFactGeneration:
    """The candidates one backend proposed for one document, or why there are none."""

    candidates: list[str]
    status: str  # "ok" or "failed"
    error: str
    backend: str
    model: str
    prompt_version: str
    raw_response: str
    latency_ms: int
    input_tokens: int | None
    output_tokens: int | None
    attempts: int
    cached: bool = False


@dataclass(frozen=True)
class KeyFactVote:
    backend: str
    model: str
    accept: bool | None  # None: this voter gave no usable answer (see error).
    reason: str
    error: str = ""


@dataclass(frozen=True)
class KeyFactVerdict:
    candidate: str
    votes: list[KeyFactVote] = field(default_factory=list)
    accept_count: int = 0
    reject_count: int = 0
    accepted: bool = True  # Kept unless a strict majority of the answering voters rejects it (module docstring).


def _dedupe_key(text: str) -> str:
    return re.sub(r"[^\w\s]", "", text.casefold()).strip()


def clean_candidates(candidates: Sequence[str], limit: int = MAX_KEYFACTS) -> list[str]:
    """Strip, collapse spaces, drop empties and repeats (ignoring case and punctuation), keep the first `limit`."""
    kept, seen = [], set()
    for candidate in candidates:
        text = " ".join(str(candidate).split())
        key = _dedupe_key(text)
        if not key or key in seen:
            continue
        seen.add(key)
        kept.append(text)
        if len(kept) == limit:
            break
    return kept


def generate_keyfacts(
    backend: ChatBackend,
    source_sentences: Sequence[str],
    *,
    max_retries: int | None = None,
    cache: ResponseCache | None = None,
    sleep: Callable[[float], None] = time.sleep,
    limit: int = MAX_KEYFACTS,
) -> KeyFactGeneration:
    """Ask one backend for key-fact candidates. The offline backend raises NotSupported: import key-facts instead."""
    if max_retries is None:
        max_retries = backend_config().llm_max_retries
    messages = keyfact_generate_messages(source_sentences)
    result = cached_completion(
        backend,
        messages,
        lambda text: clean_candidates(parse_keyfacts(text), limit),
        cache=cache,
        key=cache_key(backend.name, backend.model, KEYFACT_GENERATE_VERSION, messages),
        policy=RetryPolicy(max_retries=max_retries, sleep=sleep),
        max_tokens=1500,
        temperature=0.0,
    )
    return KeyFactGeneration(
        candidates=result.value or [],
        status="ok" if result.ok else "failed",
        error=result.error,
        backend=backend.name,
        prompt_version=KEYFACT_GENERATE_VERSION,
        **result.details(),
    )


def decide(candidate: str, votes: list[KeyFactVote]) -> KeyFactVerdict:
    """Apply the tie rule of the module docstring to one candidate's votes."""
    accept_count = sum(1 for vote in votes if vote.accept is True)
    reject_count = sum(1 for vote in votes if vote.accept is False)
    answered = accept_count + reject_count
    return KeyFactVerdict(
        candidate=candidate,
        votes=votes,
        accept_count=accept_count,
        reject_count=reject_count,
        accepted=not (2 * reject_count > answered),
    )


def vote_keyfacts(
    voters: Sequence[ChatBackend],
    source_sentences: Sequence[str],
    candidates: Sequence[str],
    *,
    max_retries: int | None = None,
    cache: ResponseCache | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[KeyFactVerdict]:
    """Every voter judges all candidates in one request; a voter that fails counts as not answering."""
    candidates = list(candidates)
    if not candidates:
        return []
    if max_retries is None:
        max_retries = backend_config().llm_max_retries
    messages = keyfact_vote_messages(source_sentences, candidates)
    votes: list[list[KeyFactVote]] = [[] for _ in candidates]
    for voter in voters:
        result = cached_completion(
            voter,
            messages,
            lambda text: parse_votes(text, len(candidates)),
            cache=cache,
            key=cache_key(voter.name, voter.model, KEYFACT_VOTE_VERSION, messages),
            policy=RetryPolicy(max_retries=max_retries, sleep=sleep),
            max_tokens=min(8192, 200 + 120 * len(candidates)),
        )
        for position in range(len(candidates)):
            if result.ok:
                accept, reason = result.value[position]
                votes[position].append(KeyFactVote(voter.name, result.model, accept, reason))
            else:
                votes[position].append(KeyFactVote(voter.name, result.model, None, "", result.error))
    return [decide(candidate, candidate_votes) for candidate, candidate_votes in zip(candidates, votes)]
