"""REST API. Access goes through annotation.permissions, as for the pages."""

from .corpus import DocumentViewSet, KeyFactViewSet, ProjectViewSet, SummaryViewSet
from .quality import GradeViewSet
from .work import AssignmentViewSet, HitViewSet, LabelViewSet, UnitViewSet

__all__ = [
    "AssignmentViewSet",
    "DocumentViewSet",
    "GradeViewSet",
    "HitViewSet",
    "KeyFactViewSet",
    "LabelViewSet",
    "ProjectViewSet",
    "SummaryViewSet",
    "UnitViewSet",
]
