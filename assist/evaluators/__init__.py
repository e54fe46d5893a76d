"""The automatic evaluators the platform runs (SBERTScore, FineSurE, FactSim), one module each, behind one
interface (base.py).

- sbertscore: offline, sentence embeddings (paper 002).
- finesure: an LLM fact-checks sentences and aligns key-facts (papers 000/003).
- factsim: an LLM extracts claims, compared offline by embedding similarity (paper 001).
Runs over a project (a Job row, a Celery task per document) are in assist.evaluators.runs; benchmarking the scores
against the human labels is in exports.evaluator_benchmark.
"""

from assist.config import ConfigError

from .base import Evaluator
from .factsim import FactSimEvaluator
from .finesure import FineSurEEvaluator
from .sbertscore import SBERTScoreEvaluator

EVALUATORS: dict[str, type[Evaluator]] = {
    cls.name: cls for cls in (SBERTScoreEvaluator, FineSurEEvaluator, FactSimEvaluator)
}
NAMES = tuple(EVALUATORS)


def build_evaluator(name: str, *, backend: str | None = None, model_path: str | None = None) -> Evaluator:
    """The evaluator `name`; `backend` names the LLM backend as FINEGRAIN_LLM_BACKEND does (default: that setting),
    `model_path` a sentence-transformers directory (default: FINEGRAIN_EMBEDDING_MODEL, else the bundled model).
    Raises ConfigError for an unknown name or an LLM evaluator without a language model."""
    cls = EVALUATORS.get(name)
    if cls is None:
        raise ConfigError(f"unknown evaluator {name!r}: choose from {', '.join(NAMES)}")
    if not cls.uses_llm:
        return cls(model_path=model_path)
    from assist.llm.registry import get_backend

    chat = get_backend(backend)
    if chat.name == "offline-similarity":
        raise ConfigError(f"{name} needs a language model: set FINEGRAIN_LLM_BACKEND to openai or bedrock, or "
                          f"pass a backend such as openai:MODEL")
    if cls is FactSimEvaluator:
        return cls(backend=chat, model_path=model_path)
    return cls(backend=chat)


def dimension_sources(name: str) -> dict[str, str]:
    """Which of a built-in evaluator's own scores stands for each human dimension; {} for an imported one."""
    cls = EVALUATORS.get(name)
    return dict(cls.dimension_sources) if cls else {}
