import pytest

from corpus.models import Project
from tests.conftest import project_built_once
from tests.work import add_assistance, build_all, import_generated, import_small


def with_checks(project: Project, rate: float = 0.2) -> Project:
    """tests.work's importers switch attention checks off; quality tests switch them back on after importing."""
    project.attention_check_rate = rate
    project.save(update_fields=["attention_check_rate"])
    return project


def build_checked(project: Project) -> Project:
    """The small corpus (three task types, two domains) with assistance and checks at the default rate."""
    import_small(project)
    add_assistance(project)
    with_checks(project)
    build_all(project)
    return project


@pytest.fixture
def checked_project(project):
    return build_checked(project)


def build_big(project: Project) -> Project:
    """Eighteen FV HITs over two domains, with assistance and checks at the default rate (0.20); the documents name
    people and places, so that the offline labeler's "no error" checks can be made (`name_swap`)."""
    import_generated(project, documents=6, summarizers=3, sentences=3, names=True)
    add_assistance(project)
    with_checks(project)
    build_all(project)
    return project


# Built once per module (about 2 s each on a quiet machine, four times that under load, and most tests here need it);
# each test's own writes are rolled back with its savepoint.
big_project_built = project_built_once(build_big, slug="big", name="Big")


@pytest.fixture
def big_project(big_project_built, db):
    return Project.objects.get(pk=big_project_built)
