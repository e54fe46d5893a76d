from .annotator import Annotator
from .assignment import Assignment, Label
from .corpus import Document, DocumentSentence, KeyFact, Summary, SummarySentence
from .job import Job
from .project import Assistance, Membership, Project
from .work import ErrorType, Hit, Task, Unit

__all__ = [
    "Annotator",
    "Assignment",
    "Assistance",
    "Document",
    "DocumentSentence",
    "ErrorType",
    "Hit",
    "Job",
    "KeyFact",
    "Label",
    "Membership",
    "Project",
    "Summary",
    "SummarySentence",
    "Task",
    "Unit",
]
