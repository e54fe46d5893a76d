"""Every use of a library's private internals, in one module: each buys a measured speed-up on a hot path or makes a
needed thing possible, and each has a test (tests/annotation/test_internals.py) that fails on a release of Django or
Python that changes what it relies on. A trick found to buy less than 10% on its path is dropped, not kept here.

- `CompiledQuery` (Django's SQL compiler, `_iterable_class`, `get_related_populators`): the reads that every
  annotator request makes, their SQL built once per process. Measured again (benchmarks/RESULTS.md, "The
  private-internals tricks measured again"): without them a HIT page took 1.5-1.7x the CPU and a saved answer 2.5x.
- `children_allowed` (multiprocessing's `_config`): an import's splitting processes started from a Celery worker's
  child, which is daemonic.

`CompiledQuery`: the reads that every annotator request makes, their SQL built once per process, not per request.

Django turns a queryset into SQL anew each time it runs it: for the small reads of the HIT page and of saving an
answer (the permission read with its subqueries, the item, its label) that building took more CPU than the database
spent answering (benchmarks/hit_profile.py; RESULTS.md, "Serving at 10 clients, profiled and trimmed"). A
`CompiledQuery` is written as an ordinary queryset, so the rule it reads stays in one place in the ORM's words; it
is built once per database with a marker value for each parameter, and every call runs the same SQL with its own
values and returns what the queryset would (model instances with their `select_related` rows and annotations, or
`values_list` tuples).

A parameter must be a value that cannot change the SQL's shape: an id, a UUID, a string. None can (`= NULL` becomes
`IS NULL`), so a call with a None runs the queryset through the ORM instead.

For measuring what a trick buys, and only for that: FINEGRAIN_PLAIN_ORM=1 in the environment (read once, when this
module is imported) makes every trick here but `children_allowed` take the plain ORM path it replaces, with the same
results (tests/annotation/test_internals.py runs each both ways); a comma-separated list of names (e.g.
`FINEGRAIN_PLAIN_ORM=CompiledQuery`) turns off only those.
"""

import multiprocessing
import os
import uuid
from collections.abc import Callable
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models.query import ModelIterable, QuerySet, ValuesListIterable, get_related_populators

# Markers for the parameters of the compiled reads: values of each type that no row has and no constant of a query
# equals, within the range of every integer column (Django compiles an out-of-range comparison to "no rows").
MARKER_ID, MARKER_OTHER_ID, MARKER_INT = 2_000_007_001, 2_000_007_002, 2_000_007_003
MARKER_UUID = uuid.UUID("00000000-0000-4000-8000-00000000f1a6")
MARKER_TEXT = "finegrain:compiled-query:marker"

TRICKS = ("CompiledQuery",)


def plain_orm_from(setting: str) -> frozenset[str]:
    """The tricks that FINEGRAIN_PLAIN_ORM's value turns off: all for "1", else the names it lists."""
    setting = setting.strip()
    if setting in ("", "0"):
        return frozenset()
    if setting == "1":
        return frozenset(TRICKS)
    names = frozenset(name.strip() for name in setting.split(",") if name.strip())
    if names - set(TRICKS):
        raise ValueError(f"FINEGRAIN_PLAIN_ORM names no trick: {', '.join(sorted(names - set(TRICKS)))}.")
    return names


# Measurement only (see above): the tricks that run the plain ORM path instead.
PLAIN_ORM = plain_orm_from(os.environ.get("FINEGRAIN_PLAIN_ORM", ""))


class CompiledQuery:
    """`build(**markers)` returns the queryset; `markers` gives each parameter a value of its type that no real call
    uses (MARKER_ID, MARKER_UUID...), so that the built SQL shows where each one goes."""

    def __init__(self, build: Callable[..., QuerySet], **markers):
        self.build, self.markers = build, markers
        self._plans: dict[tuple[str, str], _Plan] = {}

    def __call__(self, *, using: str = DEFAULT_DB_ALIAS, **values) -> list:
        if "CompiledQuery" in PLAIN_ORM or any(value is None for value in values.values()):
            return list(self.build(**values).using(using))
        connection = connections[using]
        plan = self._plans.get((using, connection.vendor))
        if plan is None:
            plan = self._plans[using, connection.vendor] = _Plan(self.build(**self.markers).using(using),
                                                                  connection, self.markers)
        return plan.run(connection, values)


class _Plan:
    def __init__(self, queryset: QuerySet, connection, markers: dict):
        if queryset._iterable_class not in (ModelIterable, ValuesListIterable) or queryset._prefetch_related_lookups \
                or queryset._known_related_objects:
            raise TypeError("A CompiledQuery reads model rows or values_list tuples, without prefetches.")
        compiler = queryset.query.get_compiler(connection=connection)
        self.sql, params = compiler.as_sql()
        self.params = [_slot(param, markers) for param in params]
        missing = set(markers) - {slot[1] for slot in self.params if slot[0] != "constant"}
        if missing:
            raise ValueError(f"The built SQL does not use the parameter(s) {', '.join(sorted(missing))}.")
        self.col_count = compiler.col_count
        # Columns selected only to order by, after the ones the rows are made of.
        self.trim = compiler.has_extra_select
        self.converters = list(compiler.get_converters([s[0] for s in compiler.select[:compiler.col_count]]).items())
        self.models = queryset._iterable_class is ModelIterable
        if self.models:
            klass_info, select = compiler.klass_info, compiler.select
            self.model = klass_info["model"]
            fields = klass_info["select_fields"]
            self.start, self.end = fields[0], fields[-1] + 1
            self.init_list = [f[0].target.attname for f in select[self.start:self.end]]
            self.related = get_related_populators(klass_info, select, queryset.db)
            self.annotations = list(compiler.annotation_col_map.items())
        self.db = queryset.db

    def run(self, connection, values: dict) -> list:
        params = [slot[1] if slot[0] == "constant" else _prepared(slot, values[slot[1]]) for slot in self.params]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        if self.converters or self.trim:
            rows = [self._convert(row, connection) for row in rows]
        if not self.models:
            return [tuple(row) for row in rows]
        objects = []
        for row in rows:
            obj = self.model.from_db(self.db, self.init_list, row[self.start:self.end])
            for populator in self.related:
                populator.populate(row, obj)
            for name, position in self.annotations:
                setattr(obj, name, row[position])
            objects.append(obj)
        return objects

    def _convert(self, row, connection) -> list:
        row = list(row[:self.col_count])
        for position, (converters, expression) in self.converters:
            value = row[position]
            for converter in converters:
                value = converter(value, expression, connection)
            row[position] = value
        return row


def _slot(param, markers: dict) -> tuple:
    """Where a parameter of the built SQL comes from: a call's value, and how the backend passes it (PostgreSQL's
    wraps some integers in a type of its driver, SQLite's takes a UUID as hex), or the SQL itself (a constant)."""
    for name, marker in markers.items():
        if isinstance(marker, uuid.UUID):
            if isinstance(param, uuid.UUID) and param == marker:
                return "uuid", name
            if isinstance(param, str) and param == marker.hex:
                return "uuid_hex", name
        elif isinstance(param, type(marker)) and not isinstance(param, bool) and param == marker:
            return ("value", name) if type(param) is type(marker) else ("wrapped", name, type(param))
    return ("constant", param)


def _prepared(slot: tuple, value):
    kind = slot[0]
    if kind == "value":
        return value
    if kind == "wrapped":
        return slot[2](value)
    value = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    return value if kind == "uuid" else value.hex


@contextmanager
def children_allowed(allow: bool = True):
    """Let this process start processes while inside, though it is daemonic (a Celery prefork worker's child, which
    runs an uploaded file's import): multiprocessing refuses to, a rule that keeps a daemon's children from outliving
    it. The caller's children never do: they are joined before the block ends."""
    config = multiprocessing.current_process()._config
    lifted = allow and bool(config.get("daemon"))
    if lifted:
        config["daemon"] = False
    try:
        yield
    finally:
        if lifted:
            config["daemon"] = True
