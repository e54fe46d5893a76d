"""A project and who may work on it. The protocol's knobs (UniSumEval 3.4-3.5, G.1-G.2) are columns here."""

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class Assistance(models.TextChoices):
    """How much AI assistance an annotator sees (paper 3.4); the ablation reruns with a lower level."""

    NONE = "none", "No assistance"
    HIGHLIGHTS = "highlights", "Highlights only"
    LABEL = "label", "Highlights + AI label"
    REASON = "reason", "Highlights + AI label + reason"


class RedundancyPolicy(models.TextChoices):
    """How many labels each unit gets (annotation.redundancy says what each one does)."""

    FIXED = "fixed", "The same number of annotators for every item"
    ADAPTIVE = "adaptive", "Only as many annotators as it takes to decide the majority"
    LEAD = "lead", "More annotators until one answer leads by a margin"


def validate_hourly_wage(value: Decimal) -> None:
    """At least the operator's floor (FINEGRAIN_MIN_HOURLY_WAGE_USD), read when a project is checked, not when the
    migration was written: an operator may raise it."""
    floor = settings.FINEGRAIN_MIN_HOURLY_WAGE_USD
    if value <= 0 or value < floor:
        raise ValidationError(
            "The hourly wage is at least %(floor)s USD, the floor this site sets; "
            "got %(value)s.", code="below_floor", params={"floor": floor, "value": value})


class Project(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    # Paper 3.4: three annotators per unit, top 30% of source sentences highlighted, ~20% attention checks.
    annotators_per_unit = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1)])
    # `annotators_per_unit` is N of the fixed design; `adaptive` gives a unit fewer labels where its first ones
    # already decide N's majority, `lead` more until one answer leads by `lead_margin`, at most `lead_cap`. New
    # projects made on the page start adaptive; a project made otherwise keeps the paper's fixed design.
    redundancy_policy = models.CharField(max_length=10, choices=RedundancyPolicy.choices,
                                         default=RedundancyPolicy.FIXED)
    lead_margin = models.PositiveSmallIntegerField(default=2, validators=[MinValueValidator(1)])
    lead_cap = models.PositiveSmallIntegerField(default=5, validators=[MinValueValidator(2), MaxValueValidator(20)])
    # Where the projected cost of the labels would pass it, no more top-up labels are asked for and the undecided
    # units go to review. Empty: no cap.
    budget_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True, validators=[
        MinValueValidator(Decimal("0"), message="The budget is 0 USD or more; leave it empty for no cap.")])
    highlight_fraction = models.FloatField(
        default=0.30, validators=[MinValueValidator(0.01), MaxValueValidator(1.0)]
    )
    attention_check_rate = models.FloatField(default=0.20, validators=[MinValueValidator(0.0), MaxValueValidator(0.9)])
    assistance = models.CharField(max_length=16, choices=Assistance.choices, default=Assistance.REASON)
    # Appendix A: a document of 900 words or more is long.
    long_threshold_words = models.PositiveIntegerField(default=900)
    # How long a reserved HIT stays with one annotator before it returns to the pool.
    reservation_minutes = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1)])

    # Paper G.1-G.2: pay at least 50% above the US federal minimum wage ($7.25/h), bonus $25 per 500 good HITs.
    hourly_wage_usd = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("10.88"),
                                          validators=[validate_hourly_wage])
    # 0 pays no bonus (annotation.quality.policy pays one only above 0); a negative bonus would take money back.
    bonus_usd = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("25.00"), validators=[
        MinValueValidator(Decimal("0"), message="The bonus is 0 USD (no bonus) or more.")])
    bonus_every_hits = models.PositiveIntegerField(default=500, validators=[MinValueValidator(1)])
    min_approval_rate = models.PositiveSmallIntegerField(default=95, validators=[MaxValueValidator(100)])
    min_approved_hits = models.PositiveIntegerField(default=1000)
    worker_locales = models.CharField(max_length=100, default="AU,CA,NZ,GB,US")

    # Quality control (paper G.1, G.3; annotation/quality/). A submission passes when the share of its attention
    # checks that failed is at most `max_failed_check_share` (0: every check must pass).
    max_failed_check_share = models.FloatField(default=0.0,
                                               validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    # Crowd workers (MTurk, Prolific) only: in-house annotators are never paid or refused through a provider.
    reject_failed = models.BooleanField(default=True, help_text="Reject crowd submissions that fail their checks")
    block_after_failures = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1)])
    pause_below_pass_rate = models.FloatField(default=0.5, validators=[MinValueValidator(0.0),
                                                                       MaxValueValidator(1.0)])
    pass_rate_window = models.PositiveSmallIntegerField(default=10, validators=[MinValueValidator(1)])
    # The dashboard flags annotators whose median time per item is below this (implausibly fast work).
    fast_seconds_per_item = models.FloatField(default=3.0, validators=[MinValueValidator(0.0)])
    # The offline pre-labeler's similarity threshold for this project (assist.llm.offline); empty: the
    # FINEGRAIN_OFFLINE_THRESHOLD setting. `calibrate_offline` sets it from the project's own human labels.
    offline_threshold = models.DecimalField(max_digits=3, decimal_places=2, null=True, blank=True,
                                            validators=[MinValueValidator(-1), MaxValueValidator(1)],
                                            help_text="Cosine similarity below which the offline labeler flags a "
                                                      "sentence; empty: the FINEGRAIN_OFFLINE_THRESHOLD setting")

    class Qualification(models.TextChoices):
        CROWD = "crowd", "Crowd and link annotators must pass the screening test"
        ALL = "all", "Everybody must pass the screening test"
        NONE = "none", "No screening test"

    # Paper G.1: a 10-question comprehension test passed at 100%. In-house accounts are trained in person.
    qualification_required = models.CharField(max_length=8, choices=Qualification.choices,
                                              default=Qualification.CROWD)
    # Attempts at the screening test per annotator in this project: a test retried without limit, with its score
    # shown, is guessed rather than passed.
    screening_attempts = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1)])
    # Review: a reviewer's adjudicated label replaces the annotators' majority in the scores only where the project
    # says so; it is always kept apart from the annotators' labels and exported as its own field.
    # The sentence-transformers model of the project's SBERTScore and FactSim runs: one of the directories the
    # operator allows (FINEGRAIN_EVALUATOR_MODELS); empty: FINEGRAIN_EMBEDDING_MODEL, else the bundled model.
    evaluator_model = models.CharField(max_length=500, blank=True, default="")
    adjudication_in_aggregation = models.BooleanField(
        default=False, help_text="Where a reviewer adjudicated a unit, its scores use the adjudicated label instead "
                                 "of the annotators' majority")

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name

    def length_for(self, word_count: int) -> str:
        return "long" if word_count >= self.long_threshold_words else "short"

    def role_of(self, user) -> str | None:
        if not user.is_authenticated:
            return None
        membership = self.memberships.filter(user=user).first()
        return membership.role if membership else None


class Membership(models.Model):
    class Role(models.TextChoices):
        MANAGER = "manager", "Manager"
        # Reads the labels and settles disagreements; neither manages the project nor annotates in it.
        REVIEWER = "reviewer", "Reviewer"
        ANNOTATOR = "annotator", "Annotator"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class Invitation(models.Model):
    """A link that makes a person a member of a project with a role, creating their account on first use.

    Only a hash of the token is stored: the link is shown once, to the manager who made it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=16, choices=Membership.Role.choices)
    label = models.CharField(max_length=200, help_text="Who the invitation is for, e.g. 'Reviewer, Anna'")
    token_sha256 = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "corpus_invitation"
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Invitation of {self.label} as {self.role} to {self.project}"


class MembershipEvent(models.Model):
    """Who did what to a project's people: the audit list of the people page."""

    class Action(models.TextChoices):
        INVITED = "invited", "invited"
        JOINED = "joined", "joined through an invitation"
        ACCOUNT_CREATED = "account_created", "created an account with a one-time password for"
        ROLE_CHANGED = "role_changed", "changed the role of"
        REMOVED = "removed", "removed"
        REVOKED = "revoked", "revoked the invitation of"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="membership_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=16, choices=Action.choices)
    # The person acted on, by name: kept when the account goes.
    subject = models.CharField(max_length=200)
    detail = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "corpus_membership_event"
        ordering = ["-created", "-pk"]


class PasswordChangeRequired(models.Model):
    """An account made with a one-time password: its owner chooses a password of their own at the first log-in."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "corpus_password_change_required"
