"""The default backend: pre-labels without any network or LLM, from sentence similarity, rule-based checks and
counterfactual probes.

Each summary sentence is compared with the document's sentences by cosine similarity of their embeddings (as
SBERTScore's precision does, papers/002, eq. 1) and judged in this order:

1. Out-of-article error when no source sentence is similar enough: the best cosine is below the threshold
   (FINEGRAIN_OFFLINE_THRESHOLD, or the project's calibrated threshold).
2. Entity error when a number, time, date or redaction placeholder of the sentence appears nowhere in the document
   and does not follow from two of its numbers (a sum, a difference, a ratio), or when its closest source sentences
   (the top CLOSEST by similarity) count the same thing with another number: "22 spaces" where they say "140 spaces"
   (assist.llm.offline_checks says what is matched and how). A name the document lacks is reported, not flagged.
3. Entity error when a name or number of the sentence is stated only in document sentences far less similar to it
   than its closest one: a detail taken from another part of the document. A dialogue's speaker is named in each of
   their own turns (the labeler is given each source sentence's speaker).
4. Entity error when another name of the document, put in place of one of the sentence's, makes it fit the
   document better (assist.llm.offline_probes): the document may say this of someone else.
5. Relation error when the closest source sentence uses the opposite word (rise/fall, before/after, more/fewer...),
   when two names or two numbers stand in the opposite roles around the same word ("Castleford beat Rovers"), or
   when the opposite of one of its words makes it fit the document better.
6. Otherwise no error; the reason says which checks passed and that meaning itself was not checked.

With the verifier (assist/llm/offline_verifier.py, FINEGRAIN_OFFLINE_VERIFIER), a small model trained to read the
sentence against its closest source sentences also scores it, seeing what the checks cannot (a reversed cause, a
wrong verb, a claim on topic that the document does not make), and no single flag decides: the checks, the cosine
and the verifier's score are weighed together (assist/llm/offline_weighing.py), and the checks still give the
category and the reason (`decide`).

The thresholds were chosen on six hand-written tuning sets, keeping a check only where it helped on sets written by
people who had not seen the rules; negation, unknown names, words the document never uses and proximity pairings
("Reyes led" near "Brandt") were dropped that way (benchmarks/RESULTS.md). Every reason starts "Offline labeler (not
an LLM):" and names exactly what produced it, so annotators weigh it accordingly. The result is a deterministic
function of the document's sentences, the summary sentence and the settings (threshold, embedding model): the same
sentence gets the same judgment in a pre-label and wherever else it is judged, whatever the other sentences of its
summary.

Measured on hand-written sentences with planted errors (benchmarks/offline_judge.py, results in
benchmarks/RESULTS.md). What the checks alone cannot see: a wrong verb with no opposite in its list ("charged" for
"convicted"), a reversed cause and effect, a contradiction without an opposite word, an addition that stays on topic
in the document's own words; the verifier catches part of these. On the eighth to tenth blind sets the weighed
labeler flagged 73 of 336 faithful sentences and caught 294 of 384 errors, but only half of the relation errors (47
of 96), and on a three-sentence document it can flag a faithful near-copy: the verifier was trained on documents of
ten to sixteen sentences.
"""

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from assist import embeddings
from assist.config import DEFAULT_OFFLINE_THRESHOLD
from assist.contextual_mapping import similarity_matrix
from assist.parsing import ENTITY, NO_ERROR, OUT_OF_ARTICLE, RELATION, SentenceJudgement

from . import offline_verifier, offline_weighing
from .base import ChatBackend, Completion, Message, NotSupported
from .offline_checks import DATE, NAME, NUMBER, PLACEHOLDER, TIME, Item, analyse, opposites
from .offline_pairing import Document, Reversal
from .offline_probes import NAME as NAME_PROBE
from .offline_probes import NAME_JOIN, NAME_SOURCES, OPPOSITE_WORD, Probe, probe, variants
from .offline_verifier import passage

# The checks with the shipped verifier and weighing: bump it when either is retrained or refitted.
PROMPT_VERSION = "offline-checks/v9"
# The checks alone; v4.1: a name is stated where its other words are; v4.2: a speaker's name in each of their turns.
CHECKS_VERSION = "offline-checks/v4.2"
QUOTE_WORDS = 12
CLOSEST = 3  # Source sentences a detail must appear in: the best matches, as contextual mapping ranks them.
PREFIX = "Offline labeler (not an LLM): "
# Thresholds chosen on the six tuning sets (benchmarks/offline_judge.py, results in benchmarks/RESULTS.md), each
# kept only where it raised the balanced accuracy on sets written by people who had not seen the rules:
# - a detail stated only in document sentences this much less similar to the summary sentence than its closest one
#   is likely taken from another part of the document;
FAR_DETAIL = 0.3
FAR_KINDS = (NAME, NUMBER)  # Dates and times are often fused from far away: "closed until March".
# - another name of the document in place of one of the sentence's raises its best cosine by this much (or by
#   NAME_GAIN_OUTSIDE when one of its details is absent from its closest source sentences);
NAME_GAIN = 0.08
NAME_GAIN_OUTSIDE = 0.02
# - the opposite of one of its words raises its best cosine by this much.
OPPOSITE_GAIN = 0.05
# With the verifier, the checks' findings, the cosine and the verifier's score are weighed together
# (assist/llm/offline_weighing.py) and a sentence is flagged above this probability of an error.
WEIGHED_CUT = 0.5
# The probes compare a sentence with the passage it retells; below this cosine no source sentence retells it, and
# a one-word change says nothing (it also spares the probes' cost on sentences of another document).
PROBE_FLOOR = 0.4
_DOCUMENTS_KEPT = 16  # A document's vectors are reused for its other summaries, which usually come next.
# Probe variants' vectors kept per process (about 1.5 KB each): a document's sentences are judged again when its
# other summaries, its attention checks and a re-run of the assistance come, with the same variants.
_VARIANTS_KEPT = 20_000


def quote(text: str, words: int = QUOTE_WORDS) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _names(indices: Sequence[int]) -> str:
    return ", ".join(f"S{i + 1}" for i in indices)


def _listing(texts: Sequence[str]) -> str:
    quoted = [f"'{text}'" for text in dict.fromkeys(texts)]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


@dataclass(frozen=True)
class FarDetail:
    """A detail of the sentence stated only in document sentences far less similar to it than its closest one."""

    item: Item
    source_index: int  # The most similar document sentence that states it.
    score: float  # That sentence's cosine similarity to the summary sentence.


@dataclass(frozen=True)
class Findings:
    """What the checks found for one summary sentence, before a threshold turns it into a category."""

    best: int  # Index of the most similar source sentence.
    score: float  # Its cosine similarity.
    closest: tuple[int, ...]  # The CLOSEST most similar source sentences, most similar first.
    checked: tuple[Item, ...]  # The numbers, dates, names... that were looked for.
    absent: tuple[Item, ...]  # Numbers, dates, times and placeholders that the document neither states nor implies.
    conflicts: tuple[tuple[Item, int, str], ...]  # (item, source index, what that sentence says instead).
    opposites: tuple[tuple[str, str], ...]  # (summary word, word of the best source sentence) of opposite meaning.
    reversed: tuple[Reversal, ...] = ()  # Two names in the opposite order around the same word.
    far: FarDetail | None = None  # The detail stated furthest from the sentence's closest source sentence.
    outside: bool = False  # A detail it shares with the document is in none of its closest source sentences.
    probes: dict[str, Probe] = field(default_factory=dict)  # The best variant of each kind (offline_probes).
    unknown_names: tuple[str, ...] = ()  # Names the document does not have: reported, not flagged.
    derived: tuple[str, ...] = ()  # Numbers the document does not state but that follow from two of its numbers.
    verifier: float | None = None  # The verifier's probability that its passage does not support it (None: not run).
    weighed: float | None = None  # The weighed probability of an error (None: the verifier did not run).

    @property
    def name_probe(self) -> Probe | None:
        found = self.probes.get(NAME_PROBE)
        needed = NAME_GAIN_OUTSIDE if self.outside else NAME_GAIN
        return found if found and found.gain > needed else None

    @property
    def opposite_probe(self) -> Probe | None:
        found = self.probes.get(OPPOSITE_WORD)
        return found if found and found.gain > OPPOSITE_GAIN else None

    @property
    def far_detail(self) -> FarDetail | None:
        return self.far if self.far and self.score - self.far.score > FAR_DETAIL else None

    @property
    def checks_flag(self) -> bool:
        """Some check flags the sentence."""
        return bool(self.absent or self.conflicts or self.far_detail or self.name_probe or self.opposites
                    or self.reversed or self.opposite_probe)

    @property
    def content_flag(self) -> bool:
        """Flagged above the similarity threshold (whatever the threshold): by the weighed evidence where the
        verifier ran, by any check otherwise (`decide`)."""
        if self.weighed is not None:
            return self.weighed > WEIGHED_CUT
        return self.checks_flag


def inspect(source: Document, sentence: str, similarities: np.ndarray, *, checks: bool = True) -> Findings:
    """Findings for one summary sentence from its similarity to each source sentence (one row)."""
    order = np.argsort(-similarities, kind="stable")
    closest = tuple(int(i) for i in order[:CLOSEST])
    best = closest[0]
    if not checks:
        return Findings(best, float(similarities[best]), closest, (), (), (), ())
    analysis = analyse(sentence)
    items = source.checked_items(analysis)
    missing = [item for item in items if not source.anywhere(item)]
    # A name the document lacks is more often a nationality, an acronym or a word written with a capital than an
    # invented person, on the tuning sets; a number the document lacks may be computed from two of its numbers.
    unknown_names = tuple(item.text for item in missing if item.kind == NAME)
    absent = tuple(item for item in missing if item.kind in (DATE, TIME, PLACEHOLDER) or (
        item.kind == NUMBER and not {round(value, 6) for value in item.values} & source.derived_numbers))
    derived = tuple(item.text for item in missing if item.kind == NUMBER and item not in absent)
    present = [item for item in items if item not in missing]
    conflicts = tuple((item, *found) for item in present for found in [source.conflict(item, closest)] if found)
    opposite = tuple(opposites(analysis, source.analyses[best]))
    far, outside = None, False
    for item in present:
        if item.kind not in FAR_KINDS:
            continue
        where = _where_named(source, item, present, sentence) or list(range(len(source.sentences)))
        nearest = max(where, key=lambda i: similarities[i])
        if far is None or similarities[nearest] < far.score:
            far = FarDetail(item, nearest, float(similarities[nearest]))
        outside = outside or not set(where) & set(closest)
    return Findings(best, float(similarities[best]), closest, tuple(items), absent, conflicts, opposite,
                    reversed=tuple(source.reversals(source.summary_frame(sentence, analysis))), far=far,
                    outside=outside, unknown_names=unknown_names, derived=derived)


def _where_named(source: Document, item: Item, present: Sequence[Item], sentence: str) -> list[int]:
    """The source sentences that state the item; for a word of a name, those that state any word of the same name:
    "Aileen Morrow" is stated where the document says "Morrow" again."""
    where = set(source.where(item))
    if item.kind == NAME:
        run = [other for other in present if other.kind == NAME]
        run.sort(key=lambda other: other.span)
        at = run.index(item)
        left = at
        while left > 0 and _joined(sentence, run[left - 1], run[left]):
            left -= 1
        right = at
        while right + 1 < len(run) and _joined(sentence, run[right], run[right + 1]):
            right += 1
        for other in run[left:right + 1]:
            where.update(source.where(other))
    return sorted(where)


def _joined(sentence: str, first: Item, second: Item) -> bool:
    """Two capitalised words of one name: next to each other, or joined by a particle ("Ana de Souza")."""
    return bool(re.fullmatch(NAME_JOIN, sentence[first.span[1]:second.span[0]]))


def decide(findings: Findings, source_sentences: Sequence[str], threshold: float) -> tuple[str, str]:
    """(category, reason) from the findings and a similarity threshold.

    Below the threshold no source sentence retells the sentence: out of article. Above it the checks decide, in
    `_checked`'s order; where the verifier ran, the weighed evidence decides whether the sentence is flagged and the
    checks still give the category and the reason: a check's finding that the weighing overrules is kept in the
    reason of an unflagged sentence, and a sentence no check flags but the weighing does takes `_unsupported`'s
    category and reason.
    """
    score = findings.score
    if score < threshold:
        best = findings.best
        return OUT_OF_ARTICLE, (
            f"{PREFIX}no source sentence is close to it: the closest is S{best + 1} "
            f"(\"{quote(source_sentences[best])}\") with cosine similarity {score:.2f}, below the threshold "
            f"{threshold:.2f}, so it may state something the document does not.")
    category, reason = _checked(findings, threshold)
    if findings.weighed is None:
        return category, reason
    if category != NO_ERROR:
        if findings.content_flag:
            return category, f"{reason[:-1]}; weighed with the verifier model, it is flagged {_weighed(findings)}."
        return NO_ERROR, (f"{PREFIX}the verifier model finds it supported by its closest source sentences "
                          f"{_weighed(findings)}, so it is not flagged; a check noted: {reason[len(PREFIX):]}")
    if findings.content_flag:
        return _unsupported(findings)
    return NO_ERROR, (f"{reason[:-len(' Its meaning is not checked.')]} The verifier model finds it supported by "
                      f"its closest source sentences {_weighed(findings)}.")


def _weighed(findings: Findings) -> str:
    """The verifier's score and the weighed chance, as one aside (annotation.wording leaves it out for annotators)."""
    return f"(score {findings.verifier:.2f} for unsupported, chance of an error {findings.weighed:.2f})"


def _checked(findings: Findings, threshold: float) -> tuple[str, str]:
    """(category, reason) from the checks alone, for a sentence at or above the similarity threshold."""
    closest, score = findings.closest, findings.score
    if findings.absent or findings.conflicts:
        parts = []
        if findings.absent:
            missing = [item.text for item in findings.absent]
            parts.append(f"{_listing(missing)} appear{'s' if len(set(missing)) == 1 else ''} nowhere in the document, "
                         f"nor follow{'s' if len(set(missing)) == 1 else ''} from two of its numbers")
        for item, index, other in findings.conflicts[:2]:
            parts.append(f"'{item.phrase or item.text}' does not match the closest source sentence S{index + 1}, "
                         f"which has '{other}'")
        return ENTITY, f"{PREFIX}{'; '.join(parts)}."
    if far := findings.far_detail:
        return ENTITY, (f"{PREFIX}'{far.item.text}' is stated only in sentences much further from it, the closest "
                        f"being S{far.source_index + 1} (cosine similarity {far.score:.2f}), than its closest source "
                        f"sentence S{findings.best + 1} (cosine similarity {score:.2f}), so it may be taken from "
                        "another part of the document.")
    if found := findings.name_probe:
        return ENTITY, (f"{PREFIX}with '{found.variant.replacement}' in place of '{found.variant.replaced}' it is "
                        f"closer to S{found.source_index + 1} (cosine similarity +{found.gain:.2f}), so the "
                        f"document may say this of '{found.variant.replacement}'.")
    if findings.opposites:
        said, found = findings.opposites[0]
        return RELATION, (f"{PREFIX}it says '{said}' where the closest source sentence S{findings.best + 1} says "
                          f"'{found}'.")
    if findings.reversed:
        r = findings.reversed[0]
        return RELATION, (f"{PREFIX}it has '{r.first}' ... '{r.word}' ... '{r.second}' in the opposite roles to "
                          f"S{r.source_index + 1}.")
    if found := findings.opposite_probe:
        return RELATION, (f"{PREFIX}with '{found.variant.replacement}' in place of '{found.variant.replaced}' it is "
                          f"closer to S{found.source_index + 1} (cosine similarity +{found.gain:.2f}), so it may "
                          "reverse what the document says.")
    found = [item.text for item in findings.checked
             if item.text not in findings.unknown_names and item.text not in findings.derived]
    details = (f"the document contains its {_listing(found)}, and those sentences give no other value for them"
               if found else "it has no number, date or name to check" if not findings.checked else "")
    if findings.derived:
        details += (f"{'; ' if details else ''}{_listing(findings.derived)} follow"
                    f"{'s' if len(findings.derived) == 1 else ''} from two of its numbers")
    if findings.unknown_names:
        details += (f"{'; ' if details else ''}{_listing(findings.unknown_names)} "
                    f"{'is' if len(findings.unknown_names) == 1 else 'are'} not in the document "
                    "(not flagged on its own)")
    return NO_ERROR, (f"{PREFIX}the closest source sentences are {_names(closest)} (cosine similarity "
                      f"{score:.2f}, at or above the threshold {threshold:.2f}); {details}. Its meaning is not "
                      "checked.")


def _unsupported(findings: Findings) -> tuple[str, str]:
    """The verifier's finding, when no check names a detail: the category from what the sentence's details are."""
    said = (f"{PREFIX}the verifier model finds it unsupported by its closest source sentences "
            f"{_names(sorted(findings.closest))} {_weighed(findings)}")
    if findings.unknown_names:
        return OUT_OF_ARTICLE, (f"{said}, and it names {_listing(findings.unknown_names)}, which the document does "
                                "not.")
    if findings.outside:
        return ENTITY, f"{said}, and one of its details is stated only elsewhere in the document."
    return RELATION, (f"{said}; its details are in the document, so what it says of them may be wrong. The model "
                      "can be wrong: check the sentence against those sentences.")


class OfflineSimilarityBackend(ChatBackend):
    name = "offline-similarity"
    label = "Offline labeler"

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_OFFLINE_THRESHOLD,
        model_path: str | None = None,
        encode: Callable[[Sequence[str]], np.ndarray] | None = None,
        identity: str | None = None,
        checks: bool = True,
        verifier: "offline_verifier.Verifier | None" = None,
        weighing: "offline_weighing.Weighing | None" = None,
    ) -> None:
        self.threshold = threshold
        self.model_path = model_path
        self.checks = checks  # False: similarity alone, as the first offline labeler did (benchmarks compare).
        self._encode = encode
        # Stored with every pre-label: which embedding model, which release, decided it.
        self.model = identity or str(embeddings.model_identity(model_path))
        self._documents: OrderedDict[str, tuple[np.ndarray | None, Document | None]] = OrderedDict()
        self._variants: OrderedDict[str, np.ndarray] = OrderedDict()
        self._scores: OrderedDict[str, float] = OrderedDict()
        self.verifier = verifier  # assist.llm.offline_verifier's, when FINEGRAIN_OFFLINE_VERIFIER is on.
        self.weighing = weighing  # With the verifier; None: the shipped weights (offline_weighing.shipped).
        self._lock = threading.Lock()

    @property
    def method(self) -> str:
        """What judges, without the threshold: similarity alone, the checks, or the checks with the verifier."""
        if not self.checks:
            return "offline-similarity/v1"
        if self.verifier is None or not self.verifier.available:
            return CHECKS_VERSION
        return PROMPT_VERSION

    @property
    def prompt_version(self) -> str:
        """Stored with each pre-label: a new threshold makes new pre-labels rather than reusing the old ones."""
        return f"{self.method} threshold={self.threshold:g}"

    def with_threshold(self, threshold: float) -> "OfflineSimilarityBackend":
        """The same backend with another threshold (a project's calibrated one); shares the cached documents."""
        if threshold == self.threshold:
            return self
        copy = OfflineSimilarityBackend.__new__(OfflineSimilarityBackend)
        copy.__dict__.update(self.__dict__)
        copy.threshold = threshold
        return copy

    def complete(self, messages: list[Message], *, max_tokens: int, temperature: float) -> Completion:
        raise NotSupported(
            "The offline backend has no language model: it cannot generate or vote on key-facts or write "
            "paraphrases. Import key-facts with the dataset, or set FINEGRAIN_LLM_BACKEND to openai or bedrock."
        )

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        if self._encode is not None:
            return self._encode(sentences)
        return embeddings.encode(sentences, model_path=self.model_path)

    def _document(self, source_sentences: Sequence[str], speakers: Sequence[str], *,
                  vectors: bool) -> tuple[np.ndarray | None, Document]:
        """The document's vectors (when asked for) and its analysed sentences, kept for its next summaries."""
        key = hashlib.sha256("\x1e".join([*source_sentences, "\x1f", *speakers]).encode()).hexdigest()
        with self._lock:
            stored_vectors, source = self._documents.get(key, (None, None))
            if key in self._documents:
                self._documents.move_to_end(key)
        if source is None:
            source = Document(source_sentences, speakers)
        if vectors and stored_vectors is None:
            stored_vectors = self.encode(source_sentences)
        with self._lock:
            self._documents[key] = (stored_vectors, source)
            while len(self._documents) > _DOCUMENTS_KEPT:
                self._documents.popitem(last=False)
        return stored_vectors, source

    def label_summary(self, source_sentences: list[str], summary_sentences: list[str], *,
                      speakers: Sequence[str] = ()) -> list[SentenceJudgement]:
        """One judgement per summary sentence, each from that sentence and the source sentences alone.

        `speakers`: for a dialogue, each source sentence's speaker label (DocumentSentence.speaker, "" where none),
        which summaries name but utterances do not contain; pass them wherever the same document is judged, so a
        sentence gets the same judgment.
        """
        if not summary_sentences or not source_sentences:
            return self.judge(source_sentences, summary_sentences, None, None)
        source_vectors, _ = self._document(source_sentences, speakers, vectors=True)
        return self.judge(source_sentences, summary_sentences, source_vectors, self.encode(summary_sentences),
                          speakers=speakers)

    def findings(
        self,
        source_sentences: Sequence[str],
        summary_sentences: Sequence[str],
        source_vectors: np.ndarray,
        summary_vectors: np.ndarray,
        *,
        speakers: Sequence[str] = (),
    ) -> list[Findings]:
        """What the checks found for each summary sentence, before the threshold (calibration sweeps it)."""
        _, source = self._document(source_sentences, speakers, vectors=False)
        similarities = similarity_matrix(summary_vectors, source_vectors)
        if not self.checks:
            return [inspect(source, sentence, row, checks=False)
                    for sentence, row in zip(summary_sentences, similarities)]
        found = [inspect(source, sentence, row) for sentence, row in zip(summary_sentences, similarities)]
        # The probes run only where no earlier check has decided (decide's order): they are most of the cost.
        nearby = [source.names_near(np.argsort(-row, kind="stable")[:NAME_SOURCES]) for row in similarities]
        found = self._verified(found, source_sentences, summary_sentences, similarities)
        found = self._probed(found, summary_sentences, nearby, source_vectors, summary_vectors, NAME_PROBE,
                             lambda f: f.score >= PROBE_FLOOR and not (f.absent or f.conflicts or f.far_detail))
        found = self._probed(found, summary_sentences, nearby, source_vectors, summary_vectors, OPPOSITE_WORD,
                             lambda f: f.score >= PROBE_FLOOR and not (f.absent or f.conflicts or f.far_detail
                                                                       or f.name_probe or f.opposites or f.reversed))
        if self.verifier is None or not self.verifier.available:
            return found
        weighing, dialogue = self.weighing or offline_weighing.shipped(), any(speakers)
        return [replace(f, weighed=weighing.probability(f, dialogue)) for f in found]

    def _verified(self, found: list[Findings], source_sentences: Sequence[str], sentences: Sequence[str],
                  similarities: np.ndarray) -> list[Findings]:
        """`found` with the verifier's score added, when the labeler has one. Scored one pair at a time: a
        batch pads its inputs to one length, which moves a score in its last digits, and a judgment must not depend
        on the other sentences of its summary."""
        if self.verifier is None or not self.verifier.available:
            return found
        scored = []
        for f, sentence, row in zip(found, sentences, similarities):
            pair = (passage(source_sentences, row), sentence)
            key = hashlib.sha256("\x1f".join(pair).encode()).hexdigest()
            with self._lock:
                score = self._scores.get(key)
            if score is None:
                [score] = self.verifier.scores([pair])
                with self._lock:
                    self._scores[key] = score
                    while len(self._scores) > _VARIANTS_KEPT:
                        self._scores.popitem(last=False)
            scored.append(replace(f, verifier=float(score)))
        return scored

    def _probed(self, found: list[Findings], sentences: Sequence[str], nearby: list[list[str]],
                source_vectors: np.ndarray, summary_vectors: np.ndarray, kind: str,
                needed: Callable[[Findings], bool]) -> list[Findings]:
        """`found` with the probe of `kind` added where `needed`; every variant embedded in one call, so the
        model's batches fill."""
        made = [variants(sentence, names, kind) if needed(f) else []
                for sentence, names, f in zip(sentences, nearby, found)]
        texts = [variant.text for variants_made in made for variant in variants_made]
        if not texts:
            return found
        vectors = self._variant_vectors(texts)
        ends = np.cumsum([len(variants_made) for variants_made in made])
        return [replace(f, probes={**f.probes, **probe(vector, source_vectors, variants_made,
                                                      vectors[end - len(variants_made):end])})
                if variants_made else f
                for f, vector, variants_made, end in zip(found, summary_vectors, made, ends)]

    def _variant_vectors(self, texts: list[str]) -> np.ndarray:
        """The variants' embeddings, from the process's cache where it has them; the others in one call."""
        with self._lock:
            known = {text: self._variants[text] for text in texts if text in self._variants}
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            fresh = dict(zip(missing, self.encode(missing)))
            known.update(fresh)
            with self._lock:
                self._variants.update(fresh)
                while len(self._variants) > _VARIANTS_KEPT:
                    self._variants.popitem(last=False)
        return np.stack([known[text] for text in texts])

    def judge(
        self,
        source_sentences: Sequence[str],
        summary_sentences: Sequence[str],
        source_vectors: np.ndarray | None,
        summary_vectors: np.ndarray | None,
        *,
        speakers: Sequence[str] = (),
    ) -> list[SentenceJudgement]:
        """Label from vectors already computed, so that the assist pipeline embeds each document only once."""
        if not summary_sentences:
            return []
        if not source_sentences:
            reason = f"{PREFIX}the document has no sentences to compare this sentence with."
            return [SentenceJudgement(i, OUT_OF_ARTICLE, reason) for i in range(len(summary_sentences))]
        judgements = []
        for index, found in enumerate(self.findings(source_sentences, summary_sentences, source_vectors,
                                                    summary_vectors, speakers=speakers)):
            category, reason = decide(found, source_sentences, self.threshold)
            judgements.append(SentenceJudgement(index=index, category=category, reason=reason))
        return judgements
