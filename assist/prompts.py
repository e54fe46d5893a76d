"""The prompts of the AI assistance, versioned.

Every stored LLM output records the version of the prompt that produced it, and the cache key includes it: change a
prompt's wording and you must bump its version. The wording is ours; the facts it encodes come from the paper
(appendix B.2 for the pre-labels, appendix C table 11 for the error categories, appendix B.3 for key-facts).
Everything goes in a single user message: some Bedrock models and small local servers ignore system prompts.
"""

from collections.abc import Sequence

from assist.llm.base import Message

FACT_CHECK_VERSION = "fact-check/v1"
KEYFACT_GENERATE_VERSION = "keyfact-generate/v1"
KEYFACT_VOTE_VERSION = "keyfact-vote/v1"
PARAPHRASE_VERSION = "keyfact-paraphrase/v1"
JUDGMENT_REASON_VERSION = "judgment-reason/v1"

MAX_KEYFACTS = 20  # Paper B.3: up to 20 candidates per document.


def numbered(sentences: Sequence[str], prefix: str = "") -> str:
    """One sentence per line, numbered from 1, as the answers must refer to them."""
    return "\n".join(f"[{prefix}{number}] {' '.join(text.split())}" for number, text in enumerate(sentences, start=1))


# Paper appendix C, table 11, in our words. Order matters only for reading.
CATEGORY_GUIDE = """\
- "no error": everything the sentence says is stated in the document or follows directly from it.
- "out-of-article error": the sentence brings in something the document does not contain and that cannot be \
checked against it: an extra fact, a detail, an opinion or a judgement of its own.
- "entity error": the sentence gets an entity wrong: a wrong name, person, place, organisation, object, number, date \
or pronoun for what the document describes.
- "relation error": the entities are right but the sentence links them wrongly, for example with the wrong verb, \
preposition or adjective, so their relationship no longer matches the document.
- "sentence error": the sentence as a whole says the opposite of the document or something incompatible with it; \
fixing it would mean rewriting or deleting it."""


def fact_check_messages(source_sentences: Sequence[str], summary_sentences: Sequence[str]) -> list[Message]:
    """Ask for one category and a one-sentence reason per summary sentence (paper B.2, the pre-labels)."""
    n = len(summary_sentences)
    prompt = f"""\
You are checking a machine-written summary against the document it summarises. Judge each numbered summary \
sentence separately, using only the document as evidence, never outside knowledge.

Give every summary sentence exactly one of these five categories:
{CATEGORY_GUIDE}
When a sentence has more than one problem, choose the category of the most serious one.

Answer with JSON only: a list with exactly {n} objects, one per summary sentence, in summary order, for example
[{{"sentence": 1, "category": "no error", "reason": "..."}}, {{"sentence": 2, "category": "entity error", \
"reason": "..."}}]
- "sentence": the summary sentence's number, 1 to {n}.
- "category": one of the five names above, spelled as shown.
- "reason": a single short sentence saying why; for an error, say what is wrong and which document sentence shows it.

Document, one numbered sentence per line:
{numbered(source_sentences, "S")}

Summary, {n} numbered sentences:
{numbered(summary_sentences)}"""
    return [{"role": "user", "content": prompt}]


def keyfact_generate_messages(source_sentences: Sequence[str]) -> list[Message]:
    """Ask for the key-facts a good summary needs (paper B.3, candidate generation)."""
    document = "\n".join(" ".join(text.split()) for text in source_sentences)
    prompt = f"""\
Read the document below and list the key facts that a good summary of it would have to contain.

Rules:
- List at most {MAX_KEYFACTS} key facts, the most important first.
- Each key fact states one single piece of information, as a short plain sentence.
- Each key fact mentions at most two or three entities (people, places, organisations, numbers, dates).
- No two key facts may carry the same information.
- Use only what the document says.

The right size, shown on unrelated topics:
- The museum reopened in May.
- The new wing cost 12 million euros.
- The mayor opposed the plan.

Answer with JSON only: a list of strings, for example ["first key fact", "second key fact"].

Document:
{document}"""
    return [{"role": "user", "content": prompt}]


def keyfact_vote_messages(source_sentences: Sequence[str], candidates: Sequence[str]) -> list[Message]:
    """Ask a voter whether each candidate key-fact is worth keeping (paper B.3, cross-validation by other LLMs)."""
    n = len(candidates)
    document = "\n".join(" ".join(text.split()) for text in source_sentences)
    prompt = f"""\
Below are a document and {n} candidate key facts proposed for it. A key fact is useful when a good summary of the \
document should contain it: it matters for the document, it is correct, and the document supports it.

For each numbered candidate answer "yes" (useful) or "no" (not useful) and give a one-sentence reason.

Answer with JSON only: a list with exactly {n} objects, one per candidate, in order, for example
[{{"candidate": 1, "response": "yes", "reason": "..."}}, {{"candidate": 2, "response": "no", "reason": "..."}}]

Document:
{document}

Candidate key facts:
{numbered(candidates)}"""
    return [{"role": "user", "content": prompt}]


def paraphrase_messages(keyfact: str) -> list[Message]:
    """Ask for a summary-like rewording of a key-fact (KA attention checks, paper G.3)."""
    prompt = f"""\
Rewrite the statement below as one sentence that could appear in a summary. It must state exactly the same fact: \
add nothing, leave nothing out. Use different wording and word order from the statement.

Answer with JSON only: {{"paraphrase": "your sentence"}}

Statement: {" ".join(keyfact.split())}"""
    return [{"role": "user", "content": prompt}]


def judgment_reason_messages(source_sentences: Sequence[str], sentence: str, category_label: str) -> list[Message]:
    """Ask for the one-sentence reason behind a category that is already decided (the AI judgment of an FV
    attention check, paper G.3: the platform sets the category; the reason must read like the pre-labels' reasons,
    which `fact_check_messages` asks for)."""
    prompt = f"""\
A summary sentence has been compared with the document it summarises, using only the document as evidence, and \
given one of these five categories:
{CATEGORY_GUIDE}

The sentence below was given the category "{category_label}". That category is settled: do not judge the sentence \
again. Write the reason that goes with it, as it would be shown to a reader next to the category.

The reason is one short sentence. It relies only on the document, never on outside knowledge, and names the \
document sentence it rests on by its number (S1, S2, ...). For an error, it says what is wrong. It does not repeat \
the category's name and does not mention these instructions.

Answer with JSON only: {{"reason": "your sentence"}}

Document, one numbered sentence per line:
{numbered(source_sentences, "S")}

Summary sentence: {" ".join(sentence.split())}"""
    return [{"role": "user", "content": prompt}]
