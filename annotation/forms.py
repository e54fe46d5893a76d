import re
from decimal import Decimal

from django import forms
from django.conf import settings
from django.template.defaultfilters import pluralize
from django.utils.text import slugify

from assist.config import ConfigError
from assist.embeddings import resolve_model_path
from corpus.models import Project, RedundancyPolicy

from .models import Decision, PrivateLink, Task
from .services.project_settings import (
    BUDGET_NEGATIVE,
    CAP_TOO_LARGE,
    CAP_TOO_SMALL,
    MARGIN_TOO_SMALL,
    SIMULATED_ANNOTATORS,
    SIMULATED_SHARES,
)


def form_problems(*forms_) -> str:
    """Every error of the bound forms in one line, for the message on the page the manager is sent back to."""
    return " ".join(dict.fromkeys(message for form in forms_ if form is not None
                                  for errors in form.errors.values() for message in errors))


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = [
            "name", "slug", "description", "annotators_per_unit", "redundancy_policy", "highlight_fraction",
            "attention_check_rate", "assistance", "long_threshold_words", "hourly_wage_usd", "bonus_usd",
            "bonus_every_hits", "min_approval_rate", "min_approved_hits", "worker_locales", "offline_threshold",
        ]
        labels = {"annotators_per_unit": "Annotators the result stands for",
                  "redundancy_policy": "How many annotators each item gets"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        policy = self.fields["redundancy_policy"]
        # A project made on this page starts adaptive: the labels of the fixed design for less. A form sent without
        # the field (a script written before it) keeps the model's default, the paper's fixed design.
        policy.initial, policy.required = RedundancyPolicy.ADAPTIVE, False
        policy.help_text = "Adaptive asks a third annotator only where the first two disagree: the same labels, " \
                           "fewer to pay for. The settings page explains each choice and previews its cost."


class ImportForm(forms.Form):
    file = forms.FileField(help_text="JSONL or CSV with the UniSumEval field names; one row per summary.")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = settings.FINEGRAIN_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; this site takes files up to {limit:,} bytes, a limit its "
                "operators set. Nothing was saved."
            )
        if not upload.name.lower().endswith((".jsonl", ".ndjson", ".json", ".csv")):
            raise forms.ValidationError("Upload a .jsonl or .csv file.")
        return upload


# The protocol's settings in the protocol's words (UniSumEval 3.4-3.5, G.1-G.3), grouped as the settings page shows
# them: (heading, what the group is for, fields).
SETTING_GROUPS = [
    ("The study", "", ["name", "description"]),
    ("Labels per item", "How many annotators label each item, and what the study may spend. The figures come from "
     "a simulation calibrated to the paper's agreement, not from your crowd.",
     ["annotators_per_unit", "redundancy_policy", "lead_margin", "lead_cap", "budget_usd"]),
    ("Annotation", "How each unit is labelled (paper 3.4).",
     ["assistance", "highlight_fraction", "reservation_minutes", "long_threshold_words"]),
    ("Attention checks and quality", "Checks hidden among the real units, and what happens to work that fails them "
     "(paper G.3).", ["attention_check_rate", "max_failed_check_share", "reject_failed", "block_after_failures",
                      "pause_below_pass_rate", "pass_rate_window", "fast_seconds_per_item"]),
    ("Screening", "The comprehension test before the first HIT (paper G.1).",
     ["qualification_required", "screening_attempts"]),
    ("Pay", "What crowd workers earn (paper G.2: at least 50% above the US federal minimum wage).",
     ["hourly_wage_usd", "bonus_usd", "bonus_every_hits"]),
    ("Who may take the HITs on MTurk", "MTurk qualifications, kept for MTurk's record.",
     ["min_approval_rate", "min_approved_hits", "worker_locales"]),
    ("Review", "Adjudicated labels are always kept apart from the annotators' labels and exported as their own "
     "fields.", ["adjudication_in_aggregation"]),
    ("Automatic evaluators", "The sentence-embedding model of SBERTScore and FactSim runs.", ["evaluator_model"]),
    ("Offline AI labeler", "", ["offline_threshold"]),
]


class ProjectSettingsForm(forms.ModelForm):
    """Every protocol setting of a project but its slug (URLs and exports name the project by it)."""

    class Meta:
        model = Project
        fields = [name for _, _, names in SETTING_GROUPS for name in names]
        labels = {
            "annotators_per_unit": "Annotators the result stands for",
            "redundancy_policy": "How many annotators each item gets",
            "lead_margin": "Lead that settles an item (votes)",
            "lead_cap": "Most annotators per item",
            "budget_usd": "Budget (USD, optional)",
            "assistance": "AI assistance shown",
            "highlight_fraction": "Share of source sentences highlighted",
            "reservation_minutes": "Minutes an annotator holds a HIT",
            "long_threshold_words": "Words from which a document counts as long",
            "attention_check_rate": "Share of a HIT's units that are attention checks",
            "max_failed_check_share": "Share of a HIT's checks that may fail and the HIT still pass",
            "reject_failed": "Reject crowd submissions that fail their checks",
            "block_after_failures": "Block a crowd worker after this many failed HITs",
            "pause_below_pass_rate": "Pause an annotator whose recent pass rate falls below",
            "pass_rate_window": "Recent HITs the pass rate is taken over",
            "fast_seconds_per_item": "Seconds per item below which work is flagged as too fast",
            "qualification_required": "Who takes the screening test",
            "screening_attempts": "Tries at the screening test",
            "hourly_wage_usd": "Hourly wage (USD)",
            "bonus_usd": "Bonus (USD)",
            "bonus_every_hits": "A bonus for every this many good HITs",
            "min_approval_rate": "Lowest MTurk approval rate (%)",
            "min_approved_hits": "Fewest approved MTurk HITs",
            "worker_locales": "Countries (ISO codes, comma-separated)",
            "offline_threshold": "Offline labeler's similarity threshold",
            "adjudication_in_aggregation": "Scores use adjudicated labels where a reviewer settled a unit",
        }
        help_texts = {
            "annotators_per_unit": "Each item's label is the majority this many annotators give; the protocol uses "
                                   "3 (under lead, only the design the cost is compared with). May rise at any time; "
                                   "may fall only before annotation starts.",
            "lead_margin": "An item is settled once one answer has this many more votes than the other.",
            "lead_cap": "An item still split at this many annotators goes to review (at most 20).",
            "budget_usd": "Once the expected cost would pass it, no more extra annotators are asked for and items "
                          "still split go to review. Empty: no cap. May rise at any time; never below what was "
                          "already paid.",
            "assistance": "What the AI shows next to each item; fixed once HITs at this level have started.",
            "highlight_fraction": "0.30 highlights the top 30% of the source sentences most similar to the item "
                                  "(the protocol's value). Not while someone holds a HIT.",
            "reservation_minutes": "After this, an unsubmitted HIT returns to the pool.",
            "long_threshold_words": "For the short/long split in analytics (the protocol: 900).",
            "attention_check_rate": "0.20 makes about a fifth of each HIT's units checks (the protocol's value); "
                                    "applies to HITs built from now on.",
            "max_failed_check_share": "0 means every check must pass (the protocol). Applies to submissions graded "
                                      "from now on; earlier grades can be overridden on the quality page.",
            "pause_below_pass_rate": "0.5 pauses an annotator who passes fewer than half of their recent HITs.",
            "hourly_wage_usd": "A HIT pays this wage for its expected time (a time per unit the site's operators set). "
                               "The protocol pays $10.88, 50% above the US federal minimum of $7.25.",
            "bonus_every_hits": "The protocol pays $25 for every 500 HITs that pass.",
            "offline_threshold": "A sentence less similar than this to every source sentence is flagged; empty: "
                                 "the site's default. The site's operators can calibrate it from this project's "
                                 "human labels.",
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 3}), "redundancy_policy": forms.RadioSelect}
        # The model's bounds in the words of annotation.services.project_settings, which checks them again.
        error_messages = {
            "lead_margin": {"min_value": MARGIN_TOO_SMALL},
            "lead_cap": {"min_value": CAP_TOO_SMALL, "max_value": CAP_TOO_LARGE},
            "budget_usd": {"min_value": BUDGET_NEGATIVE},
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        allowed = [("", "The site's default model")]
        allowed += [(path, path) for path in settings.FINEGRAIN_EVALUATOR_MODELS]
        self.fields["evaluator_model"] = forms.ChoiceField(
            choices=allowed, required=False, label="Sentence-embedding model",
            help_text="The models the site's operators allow. A new run scores with it; "
                      "earlier scores keep the model they name.")

    def clean_evaluator_model(self):
        chosen = self.cleaned_data["evaluator_model"]
        if chosen:
            try:
                resolve_model_path(chosen)
            except ConfigError as problem:
                raise forms.ValidationError(str(problem)) from None
        return chosen

    def clean_worker_locales(self):
        codes = [code.strip().upper() for code in self.cleaned_data["worker_locales"].split(",") if code.strip()]
        wrong = [code for code in codes if not re.fullmatch(r"[A-Z]{2}", code)]
        if wrong or not codes:
            raise forms.ValidationError("Give two-letter country codes separated by commas, e.g. US,GB,CA"
                                        + (f" (not {', '.join(wrong[:5])})." if wrong else "."))
        return ",".join(codes)

    def groups(self):
        return [{"id": slugify(heading), "heading": heading, "about": about, "fields": [self[name] for name in names]}
                for heading, about, names in SETTING_GROUPS]

    def annotators(self) -> int:
        """N as the page shows it now: the value sent when it is a whole number of at least 1, else the saved one."""
        try:
            return max(1, int(self["annotators_per_unit"].value()))
        except (TypeError, ValueError):
            return self.instance.annotators_per_unit

    def lead_shown(self) -> bool:
        """The lead's margin and cap are shown when lead is chosen (or when either needs a change)."""
        return (self["redundancy_policy"].value() == RedundancyPolicy.LEAD
                or bool(self["lead_margin"].errors or self["lead_cap"].errors))

    def policy_options(self) -> list[tuple]:
        """Each choice of the labels per item with its one-line explanation for N annotators."""
        n = self.annotators()
        return [(radio, policy_explanation(radio.data["value"], n)) for radio in self["redundancy_policy"]]


def _saving(policy: str, *tasks: str) -> int:
    """The simulation's saving against 3 fixed annotators, in percent, over `tasks` (their plain mean)."""
    shares = [SIMULATED_SHARES[policy][task] for task in tasks]
    return round(100 * (1 - sum(shares) / len(shares)))


def policy_explanation(policy: str, n: int) -> str:
    """What a choice of the labels per item means for a project of N annotators, in a manager's words."""
    tasks = tuple(Task.values)
    if policy == RedundancyPolicy.FIXED:
        return f"Every item gets {n} annotator{pluralize(n)}, as in the paper."
    if policy == RedundancyPolicy.ADAPTIVE:
        first = n // 2 + 1
        if first == n:
            return f"With {n} annotator{pluralize(n)} the same as fixed: every one is needed to know the majority."
        if n == SIMULATED_ANNOTATORS:
            return (f"Two annotators first; a third only where they disagree. The same labels as three for every "
                    f"item, about {_saving(policy, *tasks)}% cheaper (simulation).")
        return (f"{first} annotators first; more only while they cannot yet "
                f"tell the majority of {n}. The same labels as {n} for every item, for less.")
    return (f"Two annotators first, then more until one answer leads by the margin; an item still split "
            f"at the most goes to review. Fewer wrong labels than three fixed annotators in the simulation, about "
            f"{_saving(policy, *tasks)}% cheaper.")


class PrivateLinkForm(forms.Form):
    """A private link for an in-house annotator or an expert (annotation.crowd.links)."""

    label = forms.CharField(max_length=PrivateLink._meta.get_field("label").max_length, error_messages={
        "required": "Say who the link is for.",
        "max_length": "Say who the link is for in at most %(limit_value)d characters (this has %(show_value)d)."})
    task = forms.ChoiceField(choices=Task.choices, error_messages={
        "required": "Choose the task the link opens.", "invalid_choice": "Choose the task the link opens."})
    # Empty: the longest life a link may have.
    days = forms.IntegerField(required=False, min_value=1, error_messages={
        "invalid": "Give the link's life as a whole number of days.", "min_value": "A link lives at least 1 day."})

    def clean_days(self):
        days, longest = self.cleaned_data["days"], settings.FINEGRAIN_LINK_MAX_AGE_DAYS
        if days is not None and days > longest:
            raise forms.ValidationError(f"A link lives at most {longest} days on this site.")
        return days


class DecisionForm(forms.Form):
    """A manager's decision about one crowd worker; the outbox carries it out (annotation.crowd.outbox)."""

    kind = forms.ChoiceField(choices=Decision.Kind.choices, error_messages={
        "required": "A decision needs a kind and a reason.", "invalid_choice": "A decision needs a kind and a reason."})
    reason = forms.CharField(error_messages={"required": "A decision needs a kind and a reason."})
    # The page's one-time value that keeps a form sent twice from paying twice.
    nonce = forms.CharField(max_length=40, error_messages={
        "required": "This form is out of date: open the worker's page again.",
        "max_length": "This form is out of date: open the worker's page again."})
    assignment = forms.UUIDField(required=False, error_messages={
        "invalid": "Choose one of the worker's submitted assignments."})


BONUS_RANGE = "A bonus is between 0.01 and 100.00 USD, to the cent."


class BonusForm(forms.Form):
    """The amount of a manual bonus. A DecimalField refuses NaN and the infinities before any bound is compared (a
    Decimal NaN raises on comparison)."""

    amount = forms.DecimalField(min_value=Decimal("0.01"), max_value=Decimal("100.00"), max_digits=5, decimal_places=2,
                                error_messages=dict.fromkeys(("required", "invalid", "min_value", "max_value",
                                                              "max_digits", "max_decimal_places", "max_whole_digits"),
                                                             BONUS_RANGE))


class AblationForm(forms.Form):
    """The draw of the assistance ablation (paper 3.4): a share of a task's HITs nobody has started, the same HITs
    for the same seed. The level is checked by the service (annotation.services.assistance)."""

    task = forms.ChoiceField(choices=Task.choices, error_messages=dict.fromkeys(
        ("required", "invalid_choice"), f"Choose a task ({', '.join(Task.values)})."))
    # A FloatField refuses NaN and the infinities, which a range check alone would let through.
    share = forms.FloatField(min_value=0, max_value=100, error_messages=dict.fromkeys(
        ("required", "invalid", "min_value", "max_value"), "The share is a percentage between 0 and 100."))
    # Not below 0: random.Random(-n) draws as Random(n), so a negative seed would only alias another.
    seed = forms.IntegerField(required=False, min_value=0, error_messages=dict.fromkeys(
        ("invalid", "min_value"), "The seed is a whole number, 0 or more."))
