"""The prompts of the LLM evaluators, versioned like assist.prompts (a changed wording needs a new version).

The wording is ours. What the prompts ask for comes from the papers: FineSurE's fact checking as a categorisation
with a reasoning step, over the error typology it adopts from FRANK, and its key-fact alignment as plain
instructions (paper 000, 3.2-3.3 and appendices A-B); FactSim's claim tuples (paper 001, 3.1-3.2).
"""

from collections.abc import Sequence

from assist.llm.base import Message
from assist.prompts import numbered

FINESURE_FACT_CHECK_VERSION = "finesure-fact-check/v1"
FINESURE_ALIGNMENT_VERSION = "finesure-keyfact-alignment/v1"
FACTSIM_SOURCE_CLAIMS_VERSION = "factsim-source-claims/v1"
FACTSIM_SUMMARY_CLAIMS_VERSION = "factsim-summary-claims/v1"

# FineSurE's nine categories (paper 000, 3.1 and appendix A, table 8), in our words; slugs as stored.
FINESURE_CATEGORIES = {
    "no_error": ("no error", "everything the sentence says is stated in the document or follows directly from it."),
    "out_of_context": ("out of context error", "the sentence contains information that the document does not."),
    "predicate": ("predicate error", "the main verb or action of the sentence does not match the document."),
    "entity": ("entity error", "a main participant of the action (a person, object, place, number, ...) or one of "
                               "its attributes is wrong."),
    "circumstance": ("circumstance error", "what surrounds the action, such as its time, place or manner, is wrong."),
    "coreference": ("coreference error", "a pronoun or other reference points to the wrong thing, or to nothing."),
    "discourse_link": ("discourse link error", "statements are linked wrongly, for example in the wrong order in "
                                               "time or with a cause and effect the document does not give."),
    "grammatical": ("grammatical error", "the sentence is so ungrammatical that it no longer has a clear meaning."),
    "other": ("other error", "a factual error that fits none of the categories above."),
}


def finesure_fact_check_messages(source_sentences: Sequence[str], summary_sentences: Sequence[str]) -> list[Message]:
    """FineSurE task 1: one category and a short reason per summary sentence."""
    n = len(summary_sentences)
    guide = "\n".join(f'- "{label}": {meaning}' for label, meaning in FINESURE_CATEGORIES.values())
    prompt = f"""\
Below are a document and a machine-written summary of it, one summary sentence per numbered line. Check every \
summary sentence for factual errors, using the document as the only evidence.

Instructions:
1. Read the document, then the summary.
2. For each summary sentence, work out in one short sentence whether the document supports everything it says.
3. Then put the sentence in exactly one of these categories:
{guide}
If a sentence has several errors, choose the category of the most serious one.

Answer with JSON only: a list of exactly {n} objects, one per summary sentence, in order, for example
[{{"sentence": 1, "reason": "...", "category": "no error"}}, {{"sentence": 2, "reason": "...", \
"category": "entity error"}}]
- "sentence": the number of the summary sentence, 1 to {n}.
- "reason": your one short sentence of reasoning.
- "category": one of the category names above, spelled as shown.

Document:
{numbered(source_sentences, "S")}

Summary, {n} numbered sentences:
{numbered(summary_sentences)}"""
    return [{"role": "user", "content": prompt}]


def finesure_alignment_messages(keyfacts: Sequence[str], summary_sentences: Sequence[str]) -> list[Message]:
    """FineSurE task 2: for each key-fact, whether the summary conveys it and in which sentences."""
    m, n = len(keyfacts), len(summary_sentences)
    prompt = f"""\
Below are a summary, one sentence per numbered line, and {m} numbered key facts about the document it summarises. \
Decide for each key fact whether it can be inferred from the summary.

Instructions:
1. Compare each key fact with the summary sentences.
2. Answer "yes" when the summary conveys the key fact, in any wording, and "no" when it does not.
3. For a "yes", list the numbers of all the summary sentences that convey it; for a "no", give an empty list.

Answer with JSON only: a list of exactly {m} objects, one per key fact, in order, for example
[{{"key fact": 1, "response": "yes", "sentences": [1, 3]}}, {{"key fact": 2, "response": "no", "sentences": []}}]

Summary, {n} numbered sentences:
{numbered(summary_sentences)}

Key facts, {m} numbered:
{numbered(keyfacts)}"""
    return [{"role": "user", "content": prompt}]


CLAIM_RULES = """\
- A claim is a pair ["subject", "description"]. The subject is who or what the claim is about, in at most three \
words; the description says what holds for the subject, in at most five words.
- Say each thing directly: rewrite negations and roundabout phrases into plain wording ("not fast at all" becomes \
"slow", "did not win" becomes "lost").
- One claim per fact; do not repeat a claim.
- Use only what the text says, never outside knowledge."""


def factsim_source_claims_messages(passage: Sequence[str]) -> list[Message]:
    """FactSim: the claims of one passage of the document (the paper extracts them from each source text)."""
    text = "\n".join(" ".join(sentence.split()) for sentence in passage)
    prompt = f"""\
List the factual claims the text below makes, as short claim pairs like the entries of a knowledge graph.

Rules:
{CLAIM_RULES}

Answer with JSON only: a list of pairs, for example [["library", "opened in 1928"], ["roof", "needs repair"]]. \
Answer [] if the text makes no claim.

Text:
{text}"""
    return [{"role": "user", "content": prompt}]


def factsim_summary_claims_messages(summary_sentences: Sequence[str]) -> list[Message]:
    """FactSim: the claims of a summary, sentence by sentence (so each claim can be traced to its sentence)."""
    n = len(summary_sentences)
    prompt = f"""\
List the factual claims each numbered sentence below makes, as short claim pairs like the entries of a knowledge \
graph.

Rules:
{CLAIM_RULES}

Answer with JSON only: a list of exactly {n} objects, one per sentence, in order, for example
[{{"sentence": 1, "claims": [["library", "opened in 1928"]]}}, {{"sentence": 2, "claims": []}}]

Sentences:
{numbered(summary_sentences)}"""
    return [{"role": "user", "content": prompt}]
