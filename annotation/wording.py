"""How a HIT's items, their questions and the AI judgment's maker are named to annotators.

The pages and the API list what is missing with these words, and the services word their refusals with them, so an
annotator reads the same name everywhere. Below the services: it knows the models and nothing else.
"""

import re

from .models import Task, Unit

QUESTION_NAMES = {
    "ai_right": "is the AI right?",
    "has_error": "does it have a factual error?",
    "error_types": "which error types?",
    "useful": "is it useful?",
    "aligned": "can the key-fact be inferred?",
}


def describe_unit(unit: Unit) -> str:
    """How pages and messages name a unit: by its number in the HIT, the way the annotator sees it."""
    if unit.task == Task.FACT_VERIFICATION:
        return f"sentence {unit.position + 1}"
    if unit.task == Task.KEYFACT_VALIDATION:
        return f"key-fact {unit.position + 1}"
    return f"key-fact {unit.row + 1} × sentence {unit.column + 1}"


def describe_source(backend: str, model: str) -> str:
    """The name annotators see next to an AI judgment; the offline labeler must never pass for an LLM."""
    if backend.startswith("offline"):
        return "Offline labeler (sentence similarity and rules, not an LLM)"
    return f"{backend} · {model}" if model else backend


# --- The AI's reason as an annotator reads it. The stored reason keeps the offline labeler's numbers (cosine
# similarity, threshold) and the "S12" references the LLM prompts ask for; managers' pages show it as stored.
# Annotators get sentence numbers in words, the way the page numbers the source, and no similarity numbers: a
# cosine means nothing to them and its threshold is the manager's setting; nor does the verifier model's score
# (assist.llm.offline writes these reasons).
_MAKER = re.compile(r"^Offline (?:similarity )?(?:labeler|check)(?: \((?:not an|no) LLM\))?:\s*")
_SIMILARITY = (r"(?:with )?cosine similarity [-+]?\d+(?:\.\d+)?"
               r"(?:,? (?:at or above|below) the threshold -?\d+(?:\.\d+)?)?")
_SIMILARITY_ASIDE = re.compile(rf"\s*\({_SIMILARITY}\)|\s*{_SIMILARITY}"
                               r"|\s*\(score \d\.\d\d for unsupported, (?:above |at or below |chance of an error )"
                               r"\d\.\d\d\)")
_REF = r"S(\d{1,4})"
# A run of sentence references: "S4", "S1, S6, S28", "S2 and S5", "S1-S3".
_REFS = re.compile(rf"(?<![\w'\"‘“]){_REF}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*[-–]\s*){_REF})*(?![\w'\"’”])")
_SAID_BEFORE = re.compile(r"\b[Ss]entences?\s+(?:(?:is|are)\s+)?$")
_CLOSEST = re.compile(rf"^the closest source sentences are ({_REF}(?:,\s*{_REF})*)\s*[;.]\s*")
# Quoted text is the document's or the summary's own words: never reworded ("the Galaxy S10" stays).
_QUOTED = re.compile(r"(\"[^\"\n]*\"|“[^”\n]*”|(?<!\w)'[^'\n]*'(?!\w)|‘[^’\n]*’)")


def _joined(numbers: list[str]) -> str:
    return numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]


def _sentence_numbers(text: str) -> str:
    """"S1, S6, S28" as "sentences 1, 6 and 28", "S1-S3" as "sentences 1 to 3"; "sentence" is left out where the
    text has just said it."""
    def words(match: re.Match) -> str:
        listed: list[str] = []
        for separator, number in re.findall(r"([^S\d]*)S(\d+)", match[0]):
            if listed and re.search(r"[-–]", separator):
                listed[-1] += f" to {number}"
            else:
                listed.append(number)
        plural = len(listed) > 1 or " to " in listed[0]
        if _SAID_BEFORE.search(text, 0, match.start()):
            return _joined(listed)
        said = ("sentences " if plural else "sentence ") + _joined(listed)
        starts = not text[:match.start()].strip() or re.search(r"[.!?]\s+$", text[:match.start()])
        return said.capitalize() if starts else said

    return _REFS.sub(words, text)


def plain_reason(reason: str) -> str:
    """The AI's reason in an annotator's words: "Closest source sentences: 1, 6 and 28. ..." for the offline
    labeler's "the closest source sentences are S1, S6, S28 (cosine similarity 0.81, ...)"."""
    if not reason:
        return reason
    text = _MAKER.sub("", reason.strip())  # The page names the maker beside the judgment.
    pieces = _QUOTED.split(text)
    for i in range(0, len(pieces), 2):  # Odd pieces are quotations.
        piece, lead = _SIMILARITY_ASIDE.sub("", pieces[i]), ""
        closest = _CLOSEST.match(piece) if i == 0 else None
        if closest:
            lead = "Closest source sentences: " + _joined(re.findall(r"\d+", closest[1])) + ". "
            piece = piece[closest.end():]
            piece = piece[:1].upper() + piece[1:]
        pieces[i] = lead + _sentence_numbers(piece)
    text = "".join(pieces).strip()
    return text[:1].upper() + text[1:]
