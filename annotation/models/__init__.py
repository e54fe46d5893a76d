from .annotator import Annotator
from .assignment import Assignment, Label
from .crowd import CrowdBatch, CrowdClaim, CrowdHit, LedgerEntry, PrivateLink, Provider, ProviderResource
from .corpus import Document, DocumentSentence, KeyFact, Summary, SummarySentence
from .job import Job
from .project import Assistance, Membership, Project
from .quality import AttentionCheck, Decision, Grade
from .work import ErrorType, Hit, Task, Unit

__all__ = [
    "Annotator",
    "Assignment",
    "Assistance",
    "AttentionCheck",
    "CrowdBatch",
    "CrowdClaim",
    "CrowdHit",
    "Decision",
    "Document",
    "DocumentSentence",
    "ErrorType",
    "Grade",
    "Hit",
    "Job",
    "KeyFact",
    "Label",
    "LedgerEntry",
    "Membership",
    "PrivateLink",
    "Project",
    "Provider",
    "ProviderResource",
    "Summary",
    "SummarySentence",
    "Task",
    "Unit",
]
