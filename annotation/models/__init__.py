from .annotator import Annotator, ProjectAnnotator
from .assignment import Assignment, ItemFlag, Label
from .crowd import CrowdBatch, CrowdClaim, CrowdHit, LedgerEntry, PrivateLink, Provider, ProviderResource
from .quality import AttentionCheck, Decision, Grade
from .review import Adjudication, SplitUnit, SplitUnitLabel
from .work import ErrorType, Hit, Task, Unit, UnitState

__all__ = [
    "Adjudication",
    "Annotator",
    "Assignment",
    "AttentionCheck",
    "CrowdBatch",
    "CrowdClaim",
    "CrowdHit",
    "Decision",
    "ErrorType",
    "Grade",
    "Hit",
    "ItemFlag",
    "Label",
    "LedgerEntry",
    "PrivateLink",
    "ProjectAnnotator",
    "Provider",
    "ProviderResource",
    "SplitUnit",
    "SplitUnitLabel",
    "Task",
    "Unit",
    "UnitState",
]
