"""Attention checks, put into HITs as they are built (paper 3.4 and G.3).

About `Project.attention_check_rate` of a HIT's units are checks, and every HIT gets at least one when the rate is
above zero, so every submission can be graded. A check is an ordinary Unit with its display snapshot (text,
highlights, AI judgment) and no link to the corpus; its expected answer sits in an AttentionCheck row that nothing
sent to an annotator reads. Checks are inserted at seeded random places and positions are renumbered to stay
contiguous, so neither order nor numbering tells them apart; the seed is the HIT's public id, so building is
deterministic per HIT.

  FV  a summary sentence of a document of another domain, with an AI judgment that says "no error" (the AI is
      wrong: expected has_error true, ai_right false) or an error (the AI is right: has_error true, ai_right
      true), half each. With an LLM backend the platform sets the judgment; with the offline labeler, whose
      judgments anybody can recompute, a check shows the labeler's own judgment of its sentence, so the sentence
      is chosen to get the kind wanted (`Injection.settle_offline_kinds`); where no foreign sentence gets "no
      error" from the labeler, the check is a sentence of the document with one name exchanged (`name_swap`), an
      error the labeler cannot see, else the check says error.
  KV  a key-fact of another document: expected useful false.
  KA  whole lines: a fake key-fact row (a key-fact of another document, aligned with nothing); a fake summary
      sentence column paraphrasing one of the HIT's key-facts (aligned with that key-fact; its other cells are not
      graded); an unrelated sentence column (aligned with nothing). A KA HIT after the first round (a top-up,
      annotation.services.topups) is a list of pairs, not a grid, and its checks are pairs too: a key-fact of
      another document with one of the HIT's sentences, or one of the HIT's key-facts with a sentence of another
      document (aligned false either way).

Only HITs nobody has been assigned are touched: what an annotator saw never changes.
"""

import random
from collections import Counter, defaultdict
from functools import cached_property
from itertools import islice

from django.db.models import Exists, F, OuterRef

from corpus.bulk import insert_objects, update_rows
from corpus.models import Document, KeyFact, Project, SummarySentence

from ..models import Assignment, AttentionCheck, Hit, Task, Unit
from .disguise import DocumentVectors, ai_judgment, backend_reasons, highlights_for, offline_labeler, says_error
from .name_swap import NameSwap, name_swaps

Kind = AttentionCheck.Kind
FV_KINDS = (Kind.FV_AI_SAYS_CORRECT, Kind.FV_AI_SAYS_ERROR, Kind.FV_NAME_SWAPPED)
_RENUMBER_OFFSET = 1_000_000  # Positions are moved out of the way first: (hit, position) is unique at every row.
# How many of the project's summary sentences an offline build judges when it looks for a check sentence of the
# kind wanted: enough to find the rare foreign sentence the labeler passes, bounded whatever the corpus's size.
FOREIGN_SAMPLE = 400
# A foreign sentence this close to a source sentence may well be true of the document: never a check (a check
# must be certainly wrong, paper G.3).
CERTAINLY_FOREIGN_BELOW = 0.7
# HITs whose units are read, and rows written, per statement.
LAYOUT_BATCH = 1000
# Name-swap candidates judged per model call, and at most this many per check: the labeler's name probes catch
# most swaps, and a build must not judge every name of a long document for each check.
NAME_SWAP_BATCH = 8
NAME_SWAP_TRIES = 48


def seeded(*parts) -> random.Random:
    return random.Random("\x1f".join(str(part) for part in ("attention-check", *parts)))


def checks_for(rate: float, real: int, rng: random.Random) -> int:
    """How many checks so that they are `rate` of the HIT's units (rounded at random, seeded), at least one."""
    if rate <= 0 or real <= 0:
        return 0
    wanted = rate / (1 - rate) * real
    count = int(wanted) + (1 if rng.random() < wanted - int(wanted) else 0)
    return max(1, count)


class ForeignText:
    """Texts of the project's other documents, grouped by domain, read once per build."""

    def __init__(self, project: Project):
        self.project = project
        self._pools: dict[str, dict[str, list[tuple[int, str]]]] = {}

    def _pool(self, what: str) -> dict[str, list[tuple[int, str]]]:
        if what not in self._pools:
            if what == "sentence":
                rows = (SummarySentence.objects.filter(summary__document__project=self.project)
                        .values_list("summary__document_id", "summary__document__domain", "text"))
            else:
                rows = (KeyFact.objects.filter(document__project=self.project)
                        .values_list("document_id", "document__domain", "text"))
            pool: dict[str, list[tuple[int, str]]] = {}
            for document_id, domain, text in rows.order_by("pk"):
                pool.setdefault(domain, []).append((document_id, text))
            self._pools[what] = pool
        return self._pools[what]

    def pick(self, what: str, document: Document, rng: random.Random, avoid: set[str]) -> tuple[int, str] | None:
        """A `what` ("sentence" or "keyfact") of another domain's document (another document when there is one
        domain only), not among `avoid`."""
        pool = self._pool(what)
        if not pool and what == "keyfact":
            return self.pick("sentence", document, rng, avoid)
        domains = sorted(domain for domain in pool if domain != document.domain)
        for _ in range(30):
            if domains:
                found = rng.choice(pool[rng.choice(domains)])
            elif pool.get(document.domain):
                found = rng.choice(pool[document.domain])
            else:
                return None
            if found[0] != document.pk and found[1] not in avoid:
                return found
        return None


class ForeignSample:
    """A seeded sample of the project's summary sentences, judged by the offline labeler against a document when an
    FV check needs a sentence that gets a given judgment."""

    def __init__(self, foreign: ForeignText):
        pool = foreign._pool("sentence")
        entries = [(document_id, domain, text) for domain in sorted(pool) for document_id, text in pool[domain]]
        rng = seeded(foreign.project.pk, "fv-sample")
        self.entries = rng.sample(entries, min(len(entries), FOREIGN_SAMPLE))

    def choose(self, document: Document, *, wanted_error: bool, labeler, vectors: DocumentVectors,
               rng: random.Random, avoid: set[str]) -> tuple[int, str] | None:
        """A (document id, sentence) of another domain (another document when the sample has no other domain)
        that the labeler judges as wanted and that is certainly foreign to `document`; None if there is none."""
        entries = [entry for entry in self.entries if entry[0] != document.pk and entry[2] not in avoid]
        entries = [entry for entry in entries if entry[1] != document.domain] or entries
        texts = [text for _, _, text in entries]
        judged = vectors.offline_judgments(labeler, document, texts)
        closest = vectors.closest(document, texts)
        fitting = [(document_id, text) for (document_id, _, text), (category, _), score in zip(entries, judged, closest)
                   if says_error(category) == wanted_error and score < CERTAINLY_FOREIGN_BELOW]
        return rng.choice(fitting) if fitting else None


class Injection:
    """What one build shares between HITs: the other documents' texts, the documents' embeddings, and the writes.

    Nothing is written per HIT: new layouts are kept (`save_layout`) and written for all HITs at once, then the
    checks' snapshots are filled from the vectors the contextual mapping kept, every text without one embedded in one
    batch (`finish`)."""

    def __init__(self, project: Project):
        self.project = project
        self.foreign = ForeignText(project)
        self.vectors = DocumentVectors(project.pk)
        self._sample: ForeignSample | None = None
        # Checks whose snapshot is filled at the end, so that all their texts are embedded in one batch.
        self.pending: list[tuple[Hit, Unit, AttentionCheck, list[Unit]]] = []
        # (hit, its real units renumbered, its new check units) waiting to be written.
        self.layouts: list[tuple[Hit, list[Unit], list[tuple[Unit, AttentionCheck]]]] = []
        # HITs whose real units were laid out before they were first written (`write_new_hits`): nothing to move.
        self.written_laid_out: set[int] = set()
        # Half each (paper G.3) across the project, and the same kinds whenever a HIT is rebuilt: the kind follows
        # the parity of the HIT's position plus the check's number, from a start seeded by the project.
        self.fv_first_is_error = seeded(project.pk, "fv-kinds").random() < 0.5

    def fv_kind(self, hit: Hit, number: int) -> str:
        error = ((hit.position + number) % 2 == 0) == self.fv_first_is_error
        return Kind.FV_AI_SAYS_ERROR if error else Kind.FV_AI_SAYS_CORRECT

    @cached_property
    def labeler(self):
        """The offline labeler when it is the configured backend (looked up once per build), else None."""
        return offline_labeler()

    def disguise_later(self, hit: Hit, unit: Unit, check: AttentionCheck, real: list[Unit]) -> None:
        self.pending.append((hit, unit, check, real))

    def save_layout(self, hit: Hit, moved: list[Unit], new: list[tuple[Unit, AttentionCheck]]) -> int:
        """Keep a HIT's new layout for `write_layouts`; returns how many check units it adds."""
        self.layouts.append((hit, moved, new))
        return len(new)

    def write_layouts(self) -> None:
        """Write the kept layouts of all HITs in a few statements: positions moved out of the way, real units
        renumbered, check units and their expected answers created."""
        if not self.layouts:
            return
        stored = [(hit, units) for hit, units, _ in self.layouts if hit.pk not in self.written_laid_out]
        hit_ids = [hit.pk for hit, _ in stored]
        for start in range(0, len(hit_ids), LAYOUT_BATCH):
            Unit.objects.filter(hit_id__in=hit_ids[start:start + LAYOUT_BATCH]).update(
                position=F("position") + _RENUMBER_OFFSET)
        moved = [unit for _, units in stored for unit in units]
        new = [pair for _, _, pairs in self.layouts for pair in pairs]
        update_rows(moved, ["position", "row", "column"])
        created = Unit.objects.bulk_create([unit for unit, _ in new], batch_size=LAYOUT_BATCH)
        for unit, (_, check) in zip(created, new):
            check.unit = unit
        AttentionCheck.objects.bulk_create([check for _, check in new], batch_size=LAYOUT_BATCH)
        self.layouts = []

    def _embed_pending(self) -> None:
        """Embed, in one batch, the texts of the pending checks that need vectors (highlights or an AI judgment),
        and read or compute their documents' vectors together."""
        needed = [(hit, unit) for hit, unit, _, real in self.pending
                  if _common_count(real) is not None
                  or (hit.task == Task.FACT_VERIFICATION and _common_source(real))]
        if not needed:
            return
        self.vectors.prefetch_documents([hit.document for hit, _ in needed])
        self.vectors.prefetch(unit.text for _, unit in needed)

    def finish(self) -> None:
        self.write_layouts()
        if not self.pending:
            return
        self._embed_pending()
        settled = self.settle_offline_kinds()
        for hit, unit, check, real in self.pending:
            _disguise_fv_kv(hit, unit, check.kind, real, self)
        # With an LLM backend, the LLM words the checks' reasons, as it worded their real neighbours'.
        judged = [(hit, unit) for hit, unit, _, _ in self.pending if unit.ai_category and self.labeler is None]
        reasons = backend_reasons(self.vectors, [(hit.document, unit.text, unit.ai_category) for hit, unit in judged])
        for (_, unit), reason in zip(judged, reasons):
            if reason:
                unit.ai_reason = reason
        update_rows([unit for _, unit, _, _ in self.pending],
                    ["text", "highlighted", "ai_category", "ai_reason", "ai_source"])
        update_rows(settled, ["kind", "expected", "origin_document", "note"])
        self.pending = []

    def settle_offline_kinds(self) -> list[AttentionCheck]:
        """With the offline labeler, give each FV check that shows an AI judgment the kind its sentence's genuine
        judgment makes: a sentence whose judgment is not the kind wanted is exchanged for a foreign sentence whose
        judgment is, when the sample has one; a check that should show "no error" and cannot is made of a
        sentence of the document with one name exchanged (`name_swap`); else the kind follows the judgment.
        Returns the checks changed.

        Only checks of HITs nobody has been assigned come here, so nobody has seen what changes."""
        fv = [(hit, unit, check, real) for hit, unit, check, real in self.pending
              if check.kind in FV_KINDS and _common_source(real)]
        if not fv or self.labeler is None:
            return []
        shown: dict[int, set[str]] = {}
        for hit, unit, _, real in self.pending:
            shown.setdefault(hit.pk, {u.text for u in real}).add(unit.text)
        changed = []
        for hit, unit, check, _ in fv:
            document, wanted_error = hit.document, check.kind == Kind.FV_AI_SAYS_ERROR
            (category, _), = self.vectors.offline_judgments(self.labeler, document, [unit.text])
            if check.kind == Kind.FV_NAME_SWAPPED and not says_error(category):
                continue  # Still the error the labeler misses: the check stays as it was made.
            close = self.vectors.closest(document, [unit.text])[0] >= CERTAINLY_FOREIGN_BELOW
            replaced = False
            if says_error(category) != wanted_error or close:
                if self._sample is None:
                    self._sample = ForeignSample(self.foreign)
                found = self._sample.choose(document, wanted_error=wanted_error, labeler=self.labeler,
                                            vectors=self.vectors, rng=seeded(hit.public_id, "fv", unit.position),
                                            avoid=shown[hit.pk])
                if found is not None:
                    shown[hit.pk].discard(unit.text)
                    check.origin_document_id, unit.text = found
                    check.note = ""
                    shown[hit.pk].add(unit.text)
                    (category, _), = self.vectors.offline_judgments(self.labeler, document, [unit.text])
                    replaced = True
            kind = Kind.FV_AI_SAYS_ERROR if says_error(category) else Kind.FV_AI_SAYS_CORRECT
            if kind != check.kind and not wanted_error and (swap := self._name_swap(hit, unit, shown[hit.pk])):
                shown[hit.pk].discard(unit.text)
                unit.text, check.origin_document_id = swap.text, document.pk
                shown[hit.pk].add(unit.text)
                kind, replaced = Kind.FV_NAME_SWAPPED, True
                check.note = f"names {swap.wrong} where the document has {swap.right}"
            expected = {"has_error": True, "ai_right": kind == Kind.FV_AI_SAYS_ERROR}
            if replaced or (check.kind, check.expected) != (kind, expected):
                check.kind, check.expected = kind, expected
                changed.append(check)
        return changed

    def _name_swap(self, hit: Hit, unit: Unit, avoid: set[str]) -> NameSwap | None:
        """A sentence of the HIT's document with one name exchanged that the labeler judges "no error", when the
        document has one: the check where the offline AI is wrong."""
        source, _ = self.vectors.get(hit.document)
        candidates = islice((swap for swap in name_swaps(source, seeded(hit.public_id, "name-swap", unit.position))
                             if swap.text not in avoid), NAME_SWAP_TRIES)
        # Judged a few at a time (one model call for several candidates), in the candidates' seeded order.
        while chunk := list(islice(candidates, NAME_SWAP_BATCH)):
            judged = self.vectors.offline_judgments(self.labeler, hit.document, [swap.text for swap in chunk])
            for swap, (category, _) in zip(chunk, judged):
                if not says_error(category):
                    return swap
        return None


def write_new_hits(new: list[tuple[Hit, list[Unit]]], injection: Injection | None) -> int:
    """Lay out the checks of HITs just created, whose units (`new`, each HIT's in position order) are not written
    yet, and write all their units: a real unit is written once, where it ends up. The check units are written by
    `injection.finish()`. Returns how many check units were laid out."""
    created = 0
    if injection is not None:
        created = sum(inject_into_hit(hit, injection, units) for hit, units in new if units)
        injection.written_laid_out.update(hit.pk for hit, _ in new)
    # Nothing refers to a real unit in this write (a check's row points at its own unit): no ids to read back.
    insert_objects([unit for _, units in new for unit in units])
    return created


def inject_attention_checks(project: Project, task: str, new: list[tuple[Hit, list[Unit]]] = ()) -> int:
    """Put checks into the HITs of `task` that nobody has been assigned and that have none yet; bring the
    snapshots of existing checks in line with their real neighbours (assistance run after building). `new`: the
    HITs a build has just created with their units, not written yet (`write_new_hits`). Returns how many check
    units were created."""
    injection = Injection(project) if project.attention_check_rate > 0 else None
    created = write_new_hits(list(new), injection)
    if injection is None:
        return 0
    taken = Assignment.objects.filter(hit=OuterRef("pk"))
    hits = (Hit.objects.filter(project=project, task=task).exclude(Exists(taken))
            .select_related("document", "project").order_by("position", "pk"))
    written = {hit.pk for hit, _ in new}
    hits = [hit for hit in hits if hit.pk not in written]
    for start in range(0, len(hits), LAYOUT_BATCH):
        chunk = hits[start:start + LAYOUT_BATCH]
        # The units of many HITs in one query, not one query per HIT.
        units_of: dict[int, list[Unit]] = defaultdict(list)
        for unit in (Unit.objects.filter(hit__in=chunk).select_related("attention_check")
                     .order_by("hit_id", "position")):
            units_of[unit.hit_id].append(unit)
        # The HITs that get units are locked, then asked again whether somebody took one since the list was read:
        # a HIT's units never change once it has an assignment (a submission labels every unit of its HIT). A
        # reservation skips a locked HIT; a HIT somebody holds locked is being taken, and is left as it is.
        growing = {hit.pk for hit in chunk if units_of[hit.pk] and not any(_check_of(u) for u in units_of[hit.pk])}
        if growing:
            locked = set(Hit.objects.filter(pk__in=growing).order_by("pk")
                         .select_for_update(skip_locked=True, of=("self",)).values_list("pk", flat=True))
            locked -= set(Assignment.objects.filter(hit__in=locked).values_list("hit_id", flat=True))
            chunk = [hit for hit in chunk if hit.pk not in growing or hit.pk in locked]
        created += sum(inject_into_hit(hit, injection, units_of[hit.pk]) for hit in chunk)
    injection.finish()
    return created


def inject_into_hit(hit: Hit, injection: Injection, units: list[Unit] | None = None) -> int:
    """Checks for `hit` (its `units` in position order, read here when not given)."""
    if units is None:
        units = list(hit.units.select_related("attention_check").order_by("position"))
    if not units:
        return 0
    if any(_check_of(unit) for unit in units):
        refresh_check_snapshots(hit, units, injection)
        return 0
    if hit.task == Task.KEYFACT_ALIGNMENT:
        return _inject_ka(hit, units, injection) if hit.round == 0 else _inject_ka_pairs(hit, units, injection)
    return _inject_list(hit, units, injection)


def _check_of(unit: Unit) -> AttentionCheck | None:
    try:
        return unit.attention_check
    except AttentionCheck.DoesNotExist:
        return None


def _common_count(units: list[Unit]) -> int | None:
    """How many source sentences the real units highlight (None: they show no highlights yet)."""
    counts = Counter(len(unit.highlighted) for unit in units if unit.highlighted is not None)
    return counts.most_common(1)[0][0] if counts else None


def _common_source(units: list[Unit]) -> str:
    sources = Counter(unit.ai_source for unit in units if unit.ai_category)
    return sources.most_common(1)[0][0] if sources else ""


def _disguise_fv_kv(hit: Hit, unit: Unit, kind: str, real: list[Unit], injection: Injection) -> None:
    """Fill the check's snapshot the way its real neighbours' are filled (nothing where they show nothing)."""
    unit.highlighted = highlights_for(injection.vectors, hit.document, unit.text, _common_count(real))
    source = _common_source(real) if hit.task == Task.FACT_VERIFICATION else ""
    if source and injection.labeler is not None:
        (unit.ai_category, unit.ai_reason), = injection.vectors.offline_judgments(
            injection.labeler, hit.document, [unit.text])
        unit.ai_source = source
    elif source:
        unit.ai_category, unit.ai_reason = ai_judgment(
            injection.vectors, hit.document, unit.text, says_error=kind == Kind.FV_AI_SAYS_ERROR,
            rng=seeded(unit.public_id))
        unit.ai_source = source
    else:
        unit.ai_category = unit.ai_reason = unit.ai_source = ""


def _inject_list(hit: Hit, real: list[Unit], injection: Injection) -> int:
    rng = seeded(hit.public_id)
    count = checks_for(hit.project.attention_check_rate, len(real), rng)
    fv = hit.task == Task.FACT_VERIFICATION
    avoid = {unit.text for unit in real}
    order: list = list(real)
    new: list[tuple[Unit, AttentionCheck]] = []
    for number in range(count):
        found = injection.foreign.pick("sentence" if fv else "keyfact", hit.document, rng, avoid)
        if found is None:
            break
        origin, text = found
        avoid.add(text)
        if fv:
            kind = injection.fv_kind(hit, number)
            expected = {"has_error": True, "ai_right": kind == Kind.FV_AI_SAYS_ERROR}
        else:
            kind, expected = Kind.KV_IRRELEVANT, {"useful": False}
        unit = Unit(hit=hit, task=hit.task, position=0, text=text)
        check = AttentionCheck(kind=kind, expected=expected, origin_document_id=origin)
        injection.disguise_later(hit, unit, check, real)
        new.append((unit, check))
        order.insert(rng.randint(0, len(order)), unit)
    if not new:
        return 0
    for position, unit in enumerate(order):
        unit.position = position
    return injection.save_layout(hit, real, new)


def number_ka_pairs(units: list[Unit]) -> None:
    """Number the key-facts (`row`) and sentences (`column`) of a list of KA pairs (`units` in position order) in
    the order they first appear: the numbers its page and the graders' messages name, which say nothing of where
    a pair came from."""
    rows: dict[str, int] = {}
    columns: dict[str, int] = {}
    for unit in units:
        unit.row = rows.setdefault(unit.text, len(rows))
        unit.column = columns.setdefault(unit.sentence_text, len(columns))


def _inject_ka_pairs(hit: Hit, real: list[Unit], injection: Injection) -> int:
    """Checks for a list of KA pairs: each pairs a foreign key-fact with one of the HIT's sentences, or one of the
    HIT's key-facts (with its highlights) with a foreign sentence, the two kinds in turn from a seeded start."""
    rng = seeded(hit.public_id)
    count = checks_for(hit.project.attention_check_rate, len(real), rng)
    avoid = {unit.text for unit in real} | {unit.sentence_text for unit in real}
    kinds = [Kind.KA_FAKE_KEYFACT, Kind.KA_UNRELATED_SENTENCE]
    rng.shuffle(kinds)
    order: list = list(real)
    new: list[tuple[Unit, AttentionCheck]] = []
    for number in range(count):
        kind = kinds[number % len(kinds)]
        fake_keyfact = kind == Kind.KA_FAKE_KEYFACT
        found = injection.foreign.pick("keyfact" if fake_keyfact else "sentence", hit.document, rng, avoid)
        if found is None:
            continue
        origin, text = found
        avoid.add(text)
        partner = rng.choice(real)
        if fake_keyfact:
            unit = Unit(hit=hit, task=hit.task, position=0, text=text, sentence_text=partner.sentence_text)
        else:
            unit = Unit(hit=hit, task=hit.task, position=0, text=partner.text, sentence_text=text,
                        highlighted=partner.highlighted)
        check = AttentionCheck(kind=kind, expected={"aligned": False}, origin_document_id=origin)
        if fake_keyfact:  # Highlighted from its own text, like a real key-fact.
            injection.disguise_later(hit, unit, check, real)
        new.append((unit, check))
        order.insert(rng.randint(0, len(order)), unit)
    if not new:
        return 0
    for position, unit in enumerate(order):
        unit.position = position
    number_ka_pairs(order)
    return injection.save_layout(hit, real, new)


def _ka_lines(rate: float, rows: int, columns: int, rng: random.Random) -> list[str]:
    """Check lines (fake rows and columns, kinds in a seeded cycle) until they hold `rate` of the units."""
    kinds = [Kind.KA_FAKE_KEYFACT, Kind.KA_PARAPHRASE, Kind.KA_UNRELATED_SENTENCE]
    rng.shuffle(kinds)
    lines: list[str] = []
    checks, total = 0, rows * columns
    while rate > 0 and len(lines) < 3 * (rows + columns):
        kind = kinds[len(lines) % len(kinds)]
        added = columns if kind == Kind.KA_FAKE_KEYFACT else rows
        rows, columns = (rows + 1, columns) if kind == Kind.KA_FAKE_KEYFACT else (rows, columns + 1)
        lines.append(kind)
        checks, total = checks + added, total + added
        if checks / total >= rate:
            break
    return lines


def _inject_ka(hit: Hit, units: list[Unit], injection: Injection) -> int:
    from assist.llm import get_backend
    from assist.paraphrase import paraphrase_keyfact

    rng = seeded(hit.public_id)
    grid = {(unit.row, unit.column): unit for unit in units}
    n_rows, n_columns = max(u.row for u in units) + 1, max(u.column for u in units) + 1
    row_text = {row: grid[(row, 0)].text for row in range(n_rows)}
    row_highlights = {row: grid[(row, 0)].highlighted for row in range(n_rows)}
    column_text = {column: grid[(0, column)].sentence_text for column in range(n_columns)}
    avoid = set(row_text.values()) | set(column_text.values())
    targets = list(range(n_rows))
    rng.shuffle(targets)
    rows: list = [("real", row) for row in range(n_rows)]
    columns: list = [("real", column) for column in range(n_columns)]
    fake_rows, fake_columns = [], []
    for kind in _ka_lines(hit.project.attention_check_rate, n_rows, n_columns, rng):
        if kind == Kind.KA_PARAPHRASE:
            target = targets[len([c for c in fake_columns if c["kind"] == kind]) % n_rows]
            text = paraphrase_keyfact(get_backend(), row_text[target], seed=rng.randrange(1 << 30)).text
            spec = {"kind": kind, "text": text, "target": target, "origin": None}
        else:
            found = injection.foreign.pick("keyfact" if kind == Kind.KA_FAKE_KEYFACT else "sentence",
                                           hit.document, rng, avoid)
            if found is None:
                continue
            spec = {"kind": kind, "origin": found[0], "text": found[1]}
        avoid.add(spec["text"])
        if kind == Kind.KA_FAKE_KEYFACT:
            fake_rows.append(spec)
            rows.insert(rng.randint(0, len(rows)), ("fake", len(fake_rows) - 1))
        else:
            fake_columns.append(spec)
            columns.insert(rng.randint(0, len(columns)), ("fake", len(fake_columns) - 1))
    if not fake_rows and not fake_columns:
        return 0
    moved, new = [], []
    for new_row, (row_kind, row) in enumerate(rows):
        for new_column, (column_kind, column) in enumerate(columns):
            position = new_row * len(columns) + new_column
            if row_kind == "real" and column_kind == "real":
                unit = grid[(row, column)]
                unit.row, unit.column, unit.position = new_row, new_column, position
                moved.append(unit)
                continue
            if row_kind == "fake":
                spec = fake_rows[row]
                expected = {"aligned": False}
            else:
                spec = fake_columns[column]
                if spec["kind"] == Kind.KA_UNRELATED_SENTENCE:
                    expected = {"aligned": False}
                else:  # Only the cell of the paraphrased key-fact is graded.
                    expected = {"aligned": True} if spec["target"] == row else {}
            unit = Unit(
                hit=hit, task=hit.task, position=position, row=new_row, column=new_column,
                text=fake_rows[row]["text"] if row_kind == "fake" else row_text[row],
                sentence_text=fake_columns[column]["text"] if column_kind == "fake" else column_text[column],
                highlighted=None if row_kind == "fake" else row_highlights[row])
            check = AttentionCheck(kind=spec["kind"], expected=expected, origin_document_id=spec["origin"])
            if row_kind == "fake":  # Highlighted from its own text, like a real key-fact's row.
                injection.disguise_later(hit, unit, check, units)
            new.append((unit, check))
    return injection.save_layout(hit, moved, new)


def refresh_check_snapshots(hit: Hit, units: list[Unit], injection: Injection) -> int:
    """Re-disguise checks whose snapshot no longer matches their real neighbours' (e.g. highlights or AI
    judgments added after building). A check's content and expected answer do not change, except an FV check's
    under the offline labeler, whose judgment must stay the labeler's own (`Injection.settle_offline_kinds`);
    only HITs nobody has been assigned come here."""
    real = [unit for unit in units if _check_of(unit) is None]
    changed = []
    if hit.task == Task.KEYFACT_ALIGNMENT:
        row_highlights = {unit.row: unit.highlighted for unit in real}
        count = _common_count(real)
        fake_rows: dict[int, list[int] | None] = {}
        for unit in units:
            if _check_of(unit) is None:
                continue
            if unit.row in row_highlights:
                wanted = row_highlights[unit.row]
            else:
                if unit.row not in fake_rows:
                    current = unit.highlighted
                    fake_rows[unit.row] = current if (current is None) == (count is None) and (
                        count is None or len(current) == count) else highlights_for(
                        injection.vectors, hit.document, unit.text, count)
                wanted = fake_rows[unit.row]
            if unit.highlighted != wanted:
                unit.highlighted = wanted
                changed.append(unit)
        fields = ["highlighted"]
    else:
        count, source = _common_count(real), _common_source(real) if hit.task == Task.FACT_VERIFICATION else ""
        for unit in units:
            check = _check_of(unit)
            if check is None:
                continue
            current = unit.highlighted
            highlights_ok = (current is None) == (count is None) and (count is None or len(current) == count)
            # The offline labeler's judgments are judged again every time: they must be what it says today.
            offline_judged = bool(source) and injection.labeler is not None
            if highlights_ok and unit.ai_source == source and bool(unit.ai_category) == bool(source) and (
                    not offline_judged):
                continue
            injection.disguise_later(hit, unit, check, real)
        fields = []
    if changed and fields:
        update_rows(changed, fields)
    return len(changed)
