"""Nothing an annotator receives tells an attention check from a real unit (paper G.3): not the HIT page's
HTML, not the REST API's JSON; not an attribute, class, id, field, ordering or word."""

import pytest

from annotation.models import Hit, Unit
from corpus.models import Project
from tests.conftest import project_built_once
from tests.quality.conftest import build_checked
from tests.quality.leaks import assert_api_hides_checks, assert_hit_page_hides_checks

pytestmark = pytest.mark.django_db


# These tests only read the checked project: built once for the module.
shared_project = project_built_once(build_checked)


@pytest.fixture
def project(shared_project, db):
    return Project.objects.get(pk=shared_project)


@pytest.fixture
def checked_project(project):
    return project


@pytest.mark.parametrize("task", ["fv", "kv", "ka"])
def test_the_hit_page_does_not_tell_checks_apart(checked_project, annotator, client, task):
    assert_hit_page_hides_checks(checked_project, annotator, client, task)


@pytest.mark.parametrize("task", ["fv", "kv", "ka"])
def test_the_api_does_not_tell_checks_apart(checked_project, annotator, client, task):
    assert_api_hides_checks(checked_project, annotator, client, task)


def test_checks_sit_at_varied_places_across_hits(checked_project):
    places = set()
    for hit in Hit.objects.filter(project=checked_project, task__in=["fv", "kv"]):
        count = hit.units.count()
        for position in Unit.objects.filter(hit=hit, attention_check__isnull=False).values_list("position",
                                                                                                flat=True):
            places.add("last" if position == count - 1 else "not last")
    assert "not last" in places
