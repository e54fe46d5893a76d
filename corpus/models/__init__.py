from .documents import Document, DocumentSentence, KeyFact, Summary, SummarySentence
from .job import Job, JobAlreadyOpen, JobQuerySet, ProgressReporter, job_start, job_upload_to
from .project import Assistance, Membership, Project

__all__ = [
    "Assistance",
    "Document",
    "DocumentSentence",
    "Job",
    "JobAlreadyOpen",
    "JobQuerySet",
    "KeyFact",
    "Membership",
    "ProgressReporter",
    "Project",
    "Summary",
    "SummarySentence",
    "job_start",
    "job_upload_to",
]
