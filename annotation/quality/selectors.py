"""Which labels count: aggregation, agreement and exports read labels through here (paper section 4).

A label counts when its assignment is submitted and confirmed (a crowd submission once its provider confirmed it),
its unit is a real unit (not an attention check), and the submission's grade counts: passed, or overridden to pass by
a manager. A submission with no grade (submitted before grading existed) counts. Labels of failed submissions are
kept, for audit and the quality dashboard, but excluded.
"""

from django.db.models import Exists, OuterRef, Q, QuerySet

from ..models import Assignment, AttentionCheck, Label
from ..models.assignment import counted_submission_q


def label_counts_q(prefix: str = "") -> Q:
    """The condition for a counted label, as a Q on Label; `prefix` ("labels__") applies it through a relation."""
    return counted_submission_q(f"{prefix}assignment__") & Q(**{f"{prefix}unit__attention_check__isnull": True})


def counted_labels(queryset: QuerySet[Label] | None = None) -> QuerySet[Label]:
    """`queryset` (default: every label) narrowed to the labels that count."""
    queryset = Label.objects.all() if queryset is None else queryset
    # label_counts_q, with "a real unit" as NOT EXISTS: PostgreSQL plans it as an anti-join and estimates its rows,
    # where the LEFT JOIN ... IS NULL it has from `attention_check__isnull` is estimated at one row, which made it
    # loop over every unit per HIT (1 s instead of 0.1 s for "has the project a real label" at UniSumEval scale).
    return queryset.filter(counted_submission_q("assignment__"),
                           ~Exists(AttentionCheck.objects.filter(unit_id=OuterRef("unit_id"))))


def check_labels(queryset: QuerySet[Label] | None = None) -> QuerySet[Label]:
    """Labels given on attention-check units of submitted assignments whose identity is confirmed (kept apart in
    exports, kept apart in the benchmark export): an unconfirmed crowd submission is nobody's yet."""
    queryset = Label.objects.all() if queryset is None else queryset
    return queryset.filter(assignment__status=Assignment.Status.SUBMITTED, assignment__confirmed_at__isnull=False,
                           unit__attention_check__isnull=False)
