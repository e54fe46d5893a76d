"""Writing many rows at once, for the imports and builds that write tens of thousands of them, and what such jobs
need around the writes (the cycle collector paused, the planner's statistics of what they read kept fresh).

Django's `bulk_update` writes `SET column = CASE WHEN id = 1 THEN ... WHEN id = 2 THEN ... END` and compiles one
expression per row and column: at 45,000 units that compilation took minutes, far longer than the write itself.
`update_rows` sends the same values as a VALUES list joined on the primary key (`UPDATE ... FROM`, which PostgreSQL
and SQLite >= 3.33 both have): one short statement per batch, the values passed as parameters.
"""

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter

from django.db import connections, models, router
from django.db.models import Field, Model

# SQLite allows 32,766 parameters per statement, PostgreSQL 65,535; batches stay well under both.
MAX_PARAMETERS = 30_000


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Python's cycle collector off for the duration of a job that makes hundreds of thousands of objects (an
    import's rows, tokens and sentences; a build's units): every collection they trigger scans every live object
    of the process, so the scans grow with the job's own size on top of Django's. In an import's forked splitting
    workers they also copy the parent's memory pages. Measured at UniSumEval scale: a 1x import 1.2 to 0.85 s, a 10x
    FV build's CPU 13.5 to 9.9 s, peak memory unchanged. The objects are freed by reference counting; any cycle
    among them is collected once the collector is back on. A caller that had it off keeps it off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def update_rows(objects: Sequence[Model], fields: Sequence[str]) -> int:
    """Write `fields` of every object in `objects` (all of one model, all saved) to its row; returns the rows sent."""
    if not objects:
        return 0
    model = type(objects[0])
    meta = model._meta
    database = router.db_for_write(model)
    connection = connections[database]
    quote = connection.ops.quote_name
    primary_key = meta.pk
    columns = [meta.get_field(name) for name in fields]
    # PostgreSQL types a VALUES column from its values, and a parameter has none: each is cast to its column's type.
    postgres = connection.vendor == "postgresql"
    cast = [f"CAST(%s AS {field.cast_db_type(connection)})" if postgres else "%s"
            for field in [primary_key, *columns]]
    row_sql = "(" + ", ".join(cast) + ")"
    names = ["pk", *(f"v{number}" for number in range(len(columns)))]
    assignments = ", ".join(f"{quote(field.column)} = v.{name}" for field, name in zip(columns, names[1:]))
    table = quote(meta.db_table)
    batch = max(1, MAX_PARAMETERS // len(names))
    rows = _prepared([(instance.pk, *(getattr(instance, field.attname) for field in columns))
                      for instance in objects], [primary_key, *columns], connection)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            cursor.execute(
                f"WITH v({', '.join(names)}) AS (VALUES {', '.join([row_sql] * len(chunk))}) "
                f"UPDATE {table} SET {assignments} FROM v WHERE {table}.{quote(primary_key.column)} = v.pk",
                [value for row in chunk for value in row])
    return len(objects)


# Django's own column types whose database value is the Python value itself, on PostgreSQL and SQLite, when it is
# already of the column's type (or None, which is NULL for each of them): a column whose values all are skips
# Django's per-value preparation, which took a fifth to a third of an import's write. Exact classes: a subclass
# may prepare its values differently.
PLAIN_TYPES = {models.AutoField: int, models.BigAutoField: int, models.SmallAutoField: int,
               models.IntegerField: int, models.BigIntegerField: int, models.SmallIntegerField: int,
               models.PositiveIntegerField: int, models.PositiveBigIntegerField: int,
               models.PositiveSmallIntegerField: int, models.CharField: str, models.TextField: str,
               models.BooleanField: bool}


def _prepared(rows: Sequence[Sequence], columns: Sequence[Field], connection) -> Sequence[Sequence]:
    """`rows` with each value as the database takes it: unchanged where a column's values are all plain."""
    preparers = []
    for position, field in enumerate(columns):
        target = field.target_field if type(field) in (models.ForeignKey, models.OneToOneField) else field
        plain = PLAIN_TYPES.get(type(target)) if connection.vendor in ("postgresql", "sqlite") else None
        if plain is not None and set(map(type, map(itemgetter(position), rows))) <= {plain, type(None)}:
            continue
        preparers.append((position, field))
    if not preparers:
        return rows
    prepared = []
    for row in rows:
        values = list(row)
        for position, field in preparers:
            values[position] = field.get_db_prep_save(values[position], connection)
        prepared.append(values)
    return prepared


def _insertion(model: type[Model], fields: Sequence[str], rows: Sequence[Sequence]) -> tuple:
    """The connection to write `model` through, its table with the `fields`' columns (quoted, for an INSERT or a
    COPY), and `rows` as the database takes them."""
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    columns = [model._meta.get_field(name) for name in fields]
    table = f"{quote(model._meta.db_table)} ({', '.join(quote(field.column) for field in columns)})"
    return connection, table, _prepared(rows, columns, connection)


def insert_rows(model: type[Model], fields: Sequence[str], rows: Sequence[Sequence]) -> int:
    """Insert `rows` (tuples of values in `fields` order) into `model`'s table, for rows whose primary keys nobody
    needs back: no model instance is made for them (an import's tens of thousands of sentences). Returns the rows."""
    if not rows:
        return 0
    connection, table, values = _insertion(model, fields, rows)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # COPY streams the rows in one statement: at an import's 28,000 sentences it wrote them ~4x faster
            # than a pipelined INSERT per row. Errors still arrive as Django's (an IntegrityError for a race).
            with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {table} FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
        else:
            cursor.executemany(f"INSERT INTO {table} VALUES ({', '.join(['%s'] * len(fields))})", values)
    return len(rows)


def insert_rows_returning(model: type[Model], fields: Sequence[str], rows: Sequence[Sequence],
                          returning: Sequence[str]) -> list[tuple]:
    """Insert `rows` as `insert_rows` does and return the `returning` fields of every inserted row (its primary key
    and a unique key, to tell which row got which): without a model instance per row, whose construction and
    per-value SQL compilation took most of `bulk_create`'s time at an import's 2,025 summaries. The rows come back
    in no promised order: neither PostgreSQL nor SQLite documents RETURNING's order for a multi-row INSERT."""
    if not rows:
        return []
    connection, table, values = _insertion(model, fields, rows)
    quote = connection.ops.quote_name
    row_sql = "(" + ", ".join(["%s"] * len(fields)) + ")"
    statement = (f"INSERT INTO {table} VALUES {{}} "
                 f"RETURNING {', '.join(quote(model._meta.get_field(name).column) for name in returning)}")
    batch = max(1, MAX_PARAMETERS // len(fields))
    inserted = []
    with connection.cursor() as cursor:
        for start in range(0, len(values), batch):
            chunk = values[start:start + batch]
            cursor.execute(statement.format(", ".join([row_sql] * len(chunk))),
                           [value for row in chunk for value in row])
            inserted += cursor.fetchall()
    return inserted


def insert_objects(objects: Sequence[Model]) -> int:
    """Insert unsaved `objects` (all of one model, defaults already filled in by their constructor) without reading
    their primary keys back: for rows nothing refers to in the same write."""
    if not objects:
        return 0
    meta = type(objects[0])._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    return insert_rows(type(objects[0]), [field.name for field in fields],
                       [[getattr(instance, field.attname) for field in fields] for instance in objects])


def refresh_stale_statistics(*models: type[Model]) -> list[str]:
    """ANALYZE those of `models`' PostgreSQL tables whose planner statistics are stale, by autovacuum's own rule
    (never analyzed, or more than 50 + 10% of their rows changed since); returns the tables analyzed.

    A job that reads what the job before it bulk-wrote (a build right after an import and a mapping) can run
    before autovacuum's next pass, and a planner that believes a table of 108,000 kept vectors holds none reads all
    of them for each batch of 500 it looks up: at 10x UniSumEval a lookup took 217 ms instead of 7.7 ms, and a
    build's time grew faster than its size. SQLite has no such statistics."""
    connection = connections[router.db_for_write(models[0])]
    if connection.vendor != "postgresql":
        return []
    tables = [model._meta.db_table for model in models]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid "
            "WHERE n.nspname = current_schema() AND c.relname = ANY(%s) AND (c.reltuples < 0 "
            "OR COALESCE(s.n_mod_since_analyze, 0) > 50 + 0.1 * c.reltuples)", [tables])
        stale = sorted(name for (name,) in cursor.fetchall())
        for table in stale:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    return stale
