"""corpus.internals, the one module that relies on private internals: one test per trick, on the real library, so
that a Django or Python release that changes what a trick relies on fails here. A compiled read returns what its
queryset returns, for every call's values; a daemonic process may start children inside `children_allowed`. Each
trick also runs with FINEGRAIN_PLAIN_ORM's plain path (how its speed-up is measured), which must give the same
results."""

import uuid

import pytest
from django.db import connection
from django.db.models import Exists, OuterRef
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment, Label, Unit
from annotation.services.assignment import reserve_next_hit
from corpus import internals
from corpus.internals import MARKER_ID, MARKER_INT, MARKER_UUID, TRICKS, CompiledQuery, children_allowed, plain_orm_from
from tests.work import annotator_for

pytestmark = pytest.mark.django_db


def own(public_id, annotator_id):
    return (Assignment.objects.select_related("hit__project").filter(public_id=public_id, annotator_id=annotator_id)
            .annotate(_labelled=Exists(Label.objects.filter(assignment=OuterRef("pk")))))


OWN = CompiledQuery(own, public_id=MARKER_UUID, annotator_id=MARKER_ID)
UNIT_AT = CompiledQuery(lambda hit_id, position: Unit.objects.filter(hit_id=hit_id, position=position),
                        hit_id=MARKER_ID, position=MARKER_INT)
POSITIONS = CompiledQuery(lambda hit_id: Unit.objects.filter(hit_id=hit_id).order_by("-position")
                          .values_list("position", "public_id"), hit_id=MARKER_ID)


@pytest.fixture
def assignment(corpus, annotator):
    return reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)


def test_it_returns_the_rows_of_its_queryset_with_related_rows_and_annotations(assignment):
    for public_id in (assignment.public_id, str(assignment.public_id)):
        [found] = OWN(public_id=public_id, annotator_id=assignment.annotator_id)
        [expected] = own(public_id, assignment.annotator_id)
        assert found.pk == expected.pk and found.reserved_at == expected.reserved_at
        assert found.hit.project.slug == expected.hit.project.slug and found._labelled is expected._labelled is False
    assert OWN(public_id=uuid.uuid4(), annotator_id=assignment.annotator_id) == []
    assert OWN(public_id=assignment.public_id, annotator_id=assignment.annotator_id + 1) == []


def test_it_builds_the_sql_once_and_runs_one_statement_a_call(assignment):
    units = list(Unit.objects.filter(hit=assignment.hit).order_by("position"))
    UNIT_AT(hit_id=assignment.hit_id, position=0)
    with CaptureQueriesContext(connection) as queries:
        for unit in units:
            assert UNIT_AT(hit_id=assignment.hit_id, position=unit.position) == [unit]
    assert len(queries) == len(units)
    assert POSITIONS(hit_id=assignment.hit_id) == [(u.position, u.public_id) for u in reversed(units)]


def test_a_none_runs_through_the_orm_since_it_changes_the_sql(assignment):
    assert UNIT_AT(hit_id=None, position=0) == []


def test_a_parameter_the_sql_does_not_use_is_refused(assignment):
    unused = CompiledQuery(lambda hit_id, position: Unit.objects.filter(hit_id=hit_id), hit_id=MARKER_ID,
                           position=MARKER_INT)
    with pytest.raises(ValueError, match="position"):
        unused(hit_id=assignment.hit_id, position=1)


def _data(found) -> list:
    """What a read returned, comparable: each model instance's loaded values, its `select_related` rows and its
    annotations (tuples as they are)."""
    def instance(obj):
        if not hasattr(obj, "_state"):
            return obj
        values = {name: value for name, value in vars(obj).items() if name != "_state"}
        return {**values, "_related": {name: instance(related) for name, related in obj._state.fields_cache.items()}}

    return [instance(obj) for obj in found]


class _Refused:
    """Stands for corpus.internals' `connections` on the plain paths: the compiled ones look their connection up
    there, the plain ones go through the ORM."""

    def __getitem__(self, alias):
        raise AssertionError("FINEGRAIN_PLAIN_ORM ran a compiled path")


@pytest.fixture
def plain(monkeypatch):
    """Runs `read()` with the tricks on, then with FINEGRAIN_PLAIN_ORM=1's plain paths (which must not run any)."""
    def both_ways(read):
        monkeypatch.setattr(internals, "PLAIN_ORM", frozenset())
        tricked = read()
        with monkeypatch.context() as plain_only:
            plain_only.setattr(internals, "PLAIN_ORM", frozenset(TRICKS))
            plain_only.setattr(internals, "connections", _Refused())
            plainly = read()
        return tricked, plainly

    return both_ways


def test_the_plain_orm_switch_names_tricks():
    assert plain_orm_from("") == plain_orm_from("0") == frozenset()
    assert plain_orm_from("1") == frozenset(TRICKS)
    assert plain_orm_from(" CompiledQuery ") == {"CompiledQuery"}
    with pytest.raises(ValueError, match="Compiled"):
        plain_orm_from("Compiled")


def test_a_compiled_read_gives_what_the_plain_orm_gives(assignment, plain):
    Label.objects.create(assignment=assignment, unit=Unit.objects.filter(hit=assignment.hit).first(),
                         annotator_id=assignment.annotator_id)
    units = list(Unit.objects.filter(hit=assignment.hit).order_by("position"))
    reads = [lambda: OWN(public_id=assignment.public_id, annotator_id=assignment.annotator_id),
             lambda: OWN(public_id=str(assignment.public_id), annotator_id=assignment.annotator_id),
             lambda: OWN(public_id=uuid.uuid4(), annotator_id=assignment.annotator_id),
             lambda: POSITIONS(hit_id=assignment.hit_id),
             *(lambda unit=unit: UNIT_AT(hit_id=assignment.hit_id, position=unit.position) for unit in units)]
    for read in reads:
        tricked, plainly = plain(lambda read=read: _data(read()))
        assert tricked == plainly
    [found] = OWN(public_id=assignment.public_id, annotator_id=assignment.annotator_id)
    assert found._labelled is True and found.hit.project.slug  # the comparison saw the annotation and the joins


def _start_a_child(allow: bool) -> str:
    # In a daemonic process, as a Celery prefork worker's child is.
    import multiprocessing

    context = multiprocessing.get_context("fork")
    try:
        with children_allowed(allow):
            child = context.Process(target=int)
            child.start()
            child.join()
        return "started"
    except AssertionError as error:  # multiprocessing's own refusal
        return f"refused: {error}"
    finally:
        assert multiprocessing.current_process()._config.get("daemon") is True  # put back as it was


def _in_a_daemon(allow, queue):
    queue.put(_start_a_child(allow))


@pytest.mark.parametrize("allow, outcome", [(True, "started"), (False, "refused")])
def test_a_daemonic_process_starts_children_only_inside_children_allowed(allow, outcome):
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    daemon = context.Process(target=_in_a_daemon, args=(allow, queue), daemon=True)
    daemon.start()
    result = queue.get(timeout=60)
    daemon.join(timeout=60)
    assert result.startswith(outcome), result
