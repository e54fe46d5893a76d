from .documents import Document, DocumentSentence, KeyFact, Summary, SummarySentence
from .job import Job, JobAlreadyOpen, JobQuerySet, ProgressReporter, job_start, job_upload_to
from .project import (
    Assistance,
    Invitation,
    Membership,
    MembershipEvent,
    PasswordChangeRequired,
    Project,
    RedundancyPolicy,
)
from .snapshot import Snapshot

__all__ = [
    "Assistance",
    "Document",
    "Invitation",
    "DocumentSentence",
    "Job",
    "JobAlreadyOpen",
    "JobQuerySet",
    "KeyFact",
    "Membership",
    "MembershipEvent",
    "PasswordChangeRequired",
    "ProgressReporter",
    "Project",
    "RedundancyPolicy",
    "Snapshot",
    "Summary",
    "SummarySentence",
    "job_start",
    "job_upload_to",
]
