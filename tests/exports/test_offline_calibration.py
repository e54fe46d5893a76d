"""calibrate_offline: the offline threshold chosen on a project's counted human FV labels, stored, shown where AI
runs start, and used by the next assist run."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Annotator, Hit, Task
from annotation.services.hits import build_hits
from assist.llm.registry import clear_backends
from assist.models import OfflineCalibration, PreLabel
from corpus.importing import import_dataset

from ..work import without_attention_checks
from .labels import annotate

pytestmark = pytest.mark.django_db

DOCUMENT = (
    "The new Eastfield clinic opened on Monday, 14 October, after two years of construction.\n"
    "The building cost £8.4 million, most of it paid by the county health board.\n"
    "It has 22 consulting rooms, a pharmacy and a small X-ray unit.\n"
    "Dr Amara Lindqvist said it would serve about 30,000 patients who used to travel to Kettering.\n"
    "Because of neighbours' concerns, the car park was enlarged to 140 spaces."
)
# (sentence, the annotators' verdict: has an error)
SUMMARIES = {
    "model-a": [
        ("The Eastfield clinic opened on 14 October after two years of building work.", False),
        ("The clinic has a pharmacy, an X-ray unit and 22 consulting rooms.", False),
        ("The striker scored twice in the second half of the cup final.", True),
    ],
    "model-b": [
        ("Lindqvist expects it to serve around 30,000 patients who travelled to Kettering.", False),
        ("The building cost £9.4 million, mostly paid by the county health board.", True),
        ("Interest rates on mortgages in Norway went up sharply last spring.", True),
    ],
}


@pytest.fixture(autouse=True)
def fresh_backends(settings):
    # The calibration's arithmetic is checked on the checks alone, whose flags on these sentences are known by hand;
    # with the verifier on, Findings.content_flag adds its flags (tests/assist/test_offline_verifier.py).
    settings.FINEGRAIN_OFFLINE_VERIFIER = False
    settings.FINEGRAIN_OFFLINE_THRESHOLD = 0.55
    clear_backends()
    yield
    clear_backends()


@pytest.fixture
def labeled(project):
    without_attention_checks(project)
    rows = [{"uid": "clinic", "doc_id": "1", "source": "Hand", "domain": "news", "input_type": "non-dialogue",
             "model": model, "document": DOCUMENT, "summary": " ".join(text for text, _ in sentences),
             "sentences": [text for text, _ in sentences]} for model, sentences in SUMMARIES.items()]
    import_dataset(project=project, data="\n".join(map(json.dumps, rows)).encode(), filename="clinic.jsonl")
    build_hits(project, Task.FACT_VERIFICATION)
    for hit in Hit.objects.filter(project=project, task=Task.FACT_VERIFICATION).select_related("summary"):
        units = list(hit.units.order_by("position"))
        verdicts = [error for _, error in SUMMARIES[hit.summary.model]]
        annotate(hit, units, verdicts, name="careful", provider=Annotator.Provider.PROLIFIC)
        # Two failed submissions that say the opposite: were they counted, they would outvote the careful one.
        for name in ("careless-1", "careless-2"):
            annotate(hit, units, [not v for v in verdicts], name=name, provider=Annotator.Provider.PROLIFIC,
                     passed=False)
    return project


def test_it_picks_a_threshold_on_the_counted_majority_and_stores_it(labeled, settings, capsys):
    settings.FINEGRAIN_OFFLINE_THRESHOLD = 0.9  # Flags the faithful sentences too: calibration must lower it.
    call_command("calibrate_offline", "--project", "alpha", verbosity=0)
    record = OfflineCalibration.objects.get()
    labeled.refresh_from_db()
    assert (record.sentences, record.errors, record.label_source) == (6, 3, "real")
    assert record.balanced_accuracy == 1.0 and record.default_balanced_accuracy < 1.0
    assert record.default_threshold == 0.9 and record.threshold < 0.9
    assert float(labeled.offline_threshold) == record.threshold
    assert record.prompt_version == "offline-checks/v4.2"
    output = capsys.readouterr().out
    assert f"Offline threshold of 'alpha': {record.threshold:.2f} (was 0.9 (the setting))" in output
    assert "Balanced accuracy 1.000 on the 6 sentences with a human majority label (3 with an error" in output


def test_the_next_assist_run_uses_the_project_threshold(labeled):
    call_command("calibrate_offline", "--project", "alpha", verbosity=0)
    labeled.refresh_from_db()
    call_command("run_assist", "--project", "alpha", "--steps", "mapping,prelabels", verbosity=0)
    versions = set(PreLabel.objects.values_list("prompt_version", flat=True))
    assert versions == {f"offline-checks/v4.2 threshold={float(labeled.offline_threshold):g}"}
    flagged = dict(PreLabel.objects.values_list("summary_sentence__text", "category"))
    assert [flagged[text] != "no_error" for text, _ in SUMMARIES["model-b"]] == [False, True, True]


def test_the_assist_card_shows_the_threshold_and_where_it_came_from(client, labeled, manager):
    client.force_login(manager)
    page = client.get(reverse("project_detail", args=["alpha"])).content.decode()
    assert "Offline threshold <strong>0.55</strong> (the site's default; not calibrated yet" in page
    # How to calibrate is the operators' business (deploy/OPERATIONS.md): no setting name, no shell command here.
    assert "FINEGRAIN_" not in page and "manage.py" not in page
    call_command("calibrate_offline", "--project", "alpha", verbosity=0)
    record = OfflineCalibration.objects.get()
    page = client.get(reverse("project_detail", args=["alpha"])).content.decode()
    assert (f"Offline threshold <strong>{record.threshold:.2f}</strong>: calibrated on 6 sentences with human "
            f"labels (3 with an error, real labels), balanced accuracy 1.000 on them") in page
    labeled.offline_threshold = "0.50"
    labeled.save()
    page = client.get(reverse("project_detail", args=["alpha"])).content.decode()
    assert "Offline threshold <strong>0.50</strong> (set on the project)." in page


def test_without_labels_it_refuses_with_a_reason(project):
    with pytest.raises(CommandError, match="cannot calibrate 'alpha': no sentence has a human fact-verification "
                                           "majority label yet"):
        call_command("calibrate_offline", "--project", "alpha", verbosity=0)
    assert not OfflineCalibration.objects.exists() and project.offline_threshold is None
