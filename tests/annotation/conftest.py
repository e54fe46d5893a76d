import pytest

from corpus.models import RedundancyPolicy
from tests.work import add_assistance, build_all, import_small


@pytest.fixture
def corpus(project):
    """The small test corpus with AI assistance and every HIT that can be built."""
    import_small(project)
    add_assistance(project)
    build_all(project)
    return project


@pytest.fixture
def adaptive(project):
    """The small corpus under the adaptive policy (N = 3: two labels first), with assistance and its HITs."""
    project.redundancy_policy = RedundancyPolicy.ADAPTIVE
    project.save(update_fields=["redundancy_policy"])
    import_small(project)
    add_assistance(project)
    build_all(project)
    return project
