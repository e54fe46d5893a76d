"""The SVG charts' axes: tick labels are distinct numbers, never "-0.0", and a missing value is never "undefined"."""

import math
import random
import re

import pytest
from django.template.loader import render_to_string

from exports import plots


def texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", text) for text in re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)]


def tick_texts(chart: dict) -> list[str]:
    return [tick["text"] for tick in chart["ticks"]]


def assert_clean_axis(labels: list[str]) -> None:
    assert len(labels) >= 2, labels
    assert len(set(labels)) == len(labels), f"identical labels: {labels}"
    for label in labels:
        assert not re.fullmatch(r"-0(\.0+)?", label), f"negative zero: {labels}"
        assert math.isfinite(float(label)), labels
    assert [float(label) for label in labels] == sorted(float(label) for label in labels)


def test_the_agreement_axis_shows_zero_as_0_0():
    chart = plots.intervals([{"label": "overall", "value": 0.5, "ci_low": 0.3, "ci_high": 0.7}])
    labels = tick_texts(chart)
    assert_clean_axis(labels)
    assert "0.0" in labels and labels[0] == "-0.2" and labels[-1] == "1.0"
    svg = render_to_string("exports/_svg_intervals.html", {"chart": chart, "title": "FV"})
    assert "-0.0" not in texts(svg)


@pytest.mark.parametrize("low, high", [(-0.2, 1.0), (-1.0, 1.0), (0.0, 1.0), (0.9, 1.0), (0.95, 0.96),
                                       (-0.001, 0.001), (0.0, 250.0), (-3.0, 0.0), (0.5, 0.5)])
def test_tick_labels_are_distinct_numbers_for_any_range(low, high):
    labels = [text for _, text in plots.axis_ticks(low, high)]
    assert_clean_axis(labels)


def test_tick_labels_are_distinct_numbers_for_random_ranges():
    rng = random.Random(7)
    for _ in range(500):
        low = rng.uniform(-5, 5) * 10 ** rng.randint(-4, 3)
        high = low + abs(rng.gauss(0, 1)) * 10 ** rng.randint(-5, 3)
        ticks = plots.axis_ticks(low, high)
        assert_clean_axis([text for _, text in ticks])
        assert ticks[0][0] <= low + 1e-12 and ticks[-1][0] >= high - 1e-12, (low, high, ticks)


def test_values_below_the_axis_widen_it_rather_than_sit_at_its_edge():
    chart = plots.intervals([{"label": "news", "value": -0.45, "ci_low": -0.8, "ci_high": -0.1}])
    labels = tick_texts(chart)
    assert_clean_axis(labels)
    assert float(labels[0]) <= -0.8
    row = chart["rows"][0]
    assert chart["x0"] <= row["x1"] < row["x"] < row["x2"] <= chart["x_end"]
    assert row["x1"] != chart["x0"] or float(labels[0]) == -0.8


def test_a_missing_value_says_so_in_words():
    chart = plots.intervals([{"label": "overall", "value": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                              "title": "too few units"},
                             {"label": "news", "value": 0.4, "ci_low": None, "ci_high": None}])
    svg = render_to_string("exports/_svg_intervals.html", {"chart": chart, "title": "KA"})
    words = texts(svg)
    assert "undefined" not in " ".join(words).lower() and "nan" not in words
    assert "no estimate" in words
    assert svg.count("<circle") == 1


def test_a_progress_chart_of_one_day_names_that_day_once():
    chart = plots.lines({"fv": [("2026-11-24 08:00", 120)], "kv": [("2026-11-24 08:00", 40)]})
    svg = render_to_string("exports/_svg_lines.html", {"chart": chart, "title": "progress"})
    words = texts(svg)
    assert words.count("2026-11-24 08:00") == 1
    two_days = plots.lines({"fv": [("2026-11-23", 10), ("2026-11-24", 30)]})
    words = texts(render_to_string("exports/_svg_lines.html", {"chart": two_days, "title": "progress"}))
    assert words.count("2026-11-23") == 1 and words.count("2026-11-24") == 1
    assert sorted(text for text in words if re.fullmatch(r"-?\d+(\.\d+)?", text)) == ["0", "30"]


def test_heat_map_cells_never_show_negative_zero():
    chart = plots.heatmap(["a"], ["x", "y"], [[-0.0, -0.04]])
    assert [cell["text"] for cell in chart["cells"]] == ["0.0", "0.0"]
