"""How a HIT's items, their questions and the AI judgment's maker are named to annotators.

The pages and the API list what is missing with these words, and the services word their refusals with them, so an
annotator reads the same name everywhere. Below the services: it knows the models and nothing else.
"""

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
