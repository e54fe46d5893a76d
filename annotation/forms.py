from django import forms
from django.conf import settings

from corpus.models import Project


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = [
            "name", "slug", "description", "annotators_per_unit", "highlight_fraction", "attention_check_rate",
            "assistance", "long_threshold_words", "hourly_wage_usd", "bonus_usd", "bonus_every_hits",
            "min_approval_rate", "min_approved_hits", "worker_locales", "offline_threshold",
        ]


class ImportForm(forms.Form):
    file = forms.FileField(help_text="JSONL or CSV with the UniSumEval field names; one row per summary.")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.FINEGRAIN_MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; the limit is {settings.FINEGRAIN_MAX_UPLOAD_BYTES:,}."
            )
        if not upload.name.lower().endswith((".jsonl", ".ndjson", ".json", ".csv")):
            raise forms.ValidationError("Upload a .jsonl or .csv file.")
        return upload
