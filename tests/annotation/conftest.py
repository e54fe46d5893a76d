import pytest

from tests.work import add_assistance, build_all, import_small


@pytest.fixture
def corpus(project):
    """The small test corpus with AI assistance and every HIT that can be built."""
    import_small(project)
    add_assistance(project)
    build_all(project)
    return project
