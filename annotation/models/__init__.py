from .corpus import Document, DocumentSentence, KeyFact, Summary, SummarySentence
from .job import Job
from .project import Membership, Project

__all__ = [
    "Document",
    "DocumentSentence",
    "Job",
    "KeyFact",
    "Membership",
    "Project",
    "Summary",
    "SummarySentence",
]
