"""Geometry for the server-rendered SVG charts of the analytics pages (templates/exports/_svg_*.html).

No JavaScript and no style attributes (the CSP allows neither): the functions here compute coordinates, and
colours come from CSS classes in static/finegrain/app.css (heat-0..heat-9, series-0..series-7).
"""

import math

HEAT_STEPS = 10
SERIES = 8


def _finite(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def number(value: float, decimals: int) -> str:
    """`value` with `decimals` digits, never "-0.0": a value that rounds to zero is shown as zero."""
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def axis_ticks(low: float, high: float, *, count: int = 6) -> list[tuple[float, str]]:
    """Round tick values from at most `low` to at least `high`, about `count` steps of 1, 2, 2.5 or 5 x 10^k apart,
    each labelled with the decimals its step needs: so the labels are distinct, and zero reads "0.0", not "-0.0"."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"An axis needs finite bounds, not {low!r} and {high!r}.")
    low, high = min(low, high), max(low, high)
    if high - low <= 1e-12 * max(1.0, abs(low)):  # one value: an axis around it
        pad = max(abs(low) * 0.1, 0.5)
        low, high = low - pad, high + pad
    raw = (high - low) / count
    exponent = math.floor(math.log10(raw))
    factor = next(f for f in (1, 2, 2.5, 5, 10) if raw <= f * 10 ** exponent * (1 + 1e-9))
    if factor == 10:
        factor, exponent = 1, exponent + 1
    step = factor * 10 ** exponent
    decimals = max(0, -exponent + (1 if factor == 2.5 else 0))
    return [(k * step, number(k * step, decimals))
            for k in range(math.floor(low / step), math.ceil(high / step) + 1)]


def _grid(rows: list[str], columns: list[str], steps: list[list], texts: list[list], titles: list[list], *,
          cell_w: int, cell_h: int, label_w: int, header_h: int) -> dict:
    """The layout heatmap and rank_grid share: a cell per row and column, shaded by its step (None: heat-none), with
    its text and title, and the row and column labels."""
    cells = []
    for r in range(len(rows)):
        for c in range(len(columns)):
            step = steps[r][c]
            cells.append({"x": label_w + c * cell_w, "y": header_h + r * cell_h, "w": cell_w - 2, "h": cell_h - 2,
                          "tx": label_w + c * cell_w + cell_w / 2 - 1, "ty": header_h + r * cell_h + cell_h / 2 + 4,
                          "cls": "heat-none" if step is None else f"heat-{step}",
                          "dark": step is not None and step >= 6, "text": texts[r][c], "title": titles[r][c]})
    return {
        "width": label_w + len(columns) * cell_w + 4, "height": header_h + len(rows) * cell_h + 4, "cells": cells,
        "row_labels": [{"text": name, "x": label_w - 8, "y": header_h + r * cell_h + cell_h / 2 + 4}
                       for r, name in enumerate(rows)],
        "column_labels": [{"text": name, "x": label_w + c * cell_w + cell_w / 2, "y": header_h - 10}
                          for c, name in enumerate(columns)],
    }


def heatmap(rows: list[str], columns: list[str], values: list[list], *, cell_w: int = 92, cell_h: int = 30,
            label_w: int = 150, header_h: int = 58) -> dict:
    """Cells of a rows x columns table of percentages; darker = higher. Missing values get class heat-none."""
    finite = [v for row in values for v in row if _finite(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 100.0)
    span = (high - low) or 1.0
    steps = [[min(HEAT_STEPS - 1, int((value - low) / span * HEAT_STEPS)) if _finite(value) else None
              for value in row] for row in values]
    texts = [[number(value, 1) if _finite(value) else "—" for value in row] for row in values]
    titles = [[f"{rows[r]} × {columns[c]}: " + (number(value, 1) if _finite(value) else "no score")
               for c, value in enumerate(row)] for r, row in enumerate(values)]
    return {**_grid(rows, columns, steps, texts, titles, cell_w=cell_w, cell_h=cell_h, label_w=label_w,
                    header_h=header_h), "low": low, "high": high}


def stacked_bars(groups: dict, *, width: int = 640, bar_h: int = 22, label_w: int = 170) -> dict:
    """One horizontal 100% bar per group, a segment per category (shares summing to 1)."""
    categories = sorted({name for shares in groups.values() for name in shares})
    plot_w = width - label_w - 10
    bars = []
    for g, (group, shares) in enumerate(groups.items()):
        x, segments = label_w, []
        for k, name in enumerate(categories):
            share = shares.get(name, 0.0)
            if share > 0:
                segments.append({"x": x, "w": share * plot_w, "cls": f"series-{k % SERIES}",
                                 "title": f"{group}: {name} {100 * share:.1f}%",
                                 "text": f"{100 * share:.0f}%" if share * plot_w > 34 else "",
                                 "tx": x + share * plot_w / 2})
            x += share * plot_w
        bars.append({"label": str(group), "y": 10 + g * (bar_h + 8), "h": bar_h, "ty": 10 + g * (bar_h + 8) + 15,
                     "segments": segments})
    legend = [{"text": name, "cls": f"series-{k % SERIES}", "x": label_w + k * 130, "tx": label_w + k * 130 + 16}
              for k, name in enumerate(categories)]
    height = 10 + len(bars) * (bar_h + 8) + 34
    return {"width": width, "height": height, "bars": bars, "legend": legend, "legend_y": height - 22,
            "legend_ty": height - 11, "label_x": label_w - 8}


def intervals(points: list[dict], *, low: float = -0.2, high: float = 1.0, width: int = 640, row_h: int = 24,
              label_w: int = 190, reference: float | None = None) -> dict:
    """A dot per group with its interval, on one horizontal axis from `low` to `high`, widened to round ticks and to
    any value or interval end beyond them (an agreement coefficient can be below -0.2). A group without a value
    says "no estimate"."""
    plot_w = width - label_w - 20
    given = [value for point in points for value in (point.get("value"), point.get("ci_low"), point.get("ci_high"))
             if _finite(value)]
    ticks = axis_ticks(min([low, *given]), max([high, *given]))
    low, high = ticks[0][0], ticks[-1][0]

    def x(value: float) -> float:
        return label_w + (min(max(value, low), high) - low) / (high - low) * plot_w

    rows = []
    for i, point in enumerate(points):
        y = 14 + i * row_h
        value, ci_low, ci_high = point.get("value"), point.get("ci_low"), point.get("ci_high")
        rows.append({"label": point["label"], "y": y, "ty": y + 4, "defined": _finite(value),
                     "x": x(value) if _finite(value) else None,
                     "x1": x(ci_low) if _finite(ci_low) else None, "x2": x(ci_high) if _finite(ci_high) else None,
                     "title": point.get("title", ""), "cls": point.get("cls", "series-0")})
    bottom = 14 + len(points) * row_h
    return {"width": width, "height": bottom + 24, "rows": rows, "ticks": [{"x": x(value), "text": text}
                                                                          for value, text in ticks],
            "axis_y": bottom - 6,
            "tick_ty": bottom + 12, "label_x": label_w - 8, "x0": label_w, "x_end": label_w + plot_w,
            "reference": x(reference) if reference is not None else None}


def lines(series: dict[str, list[tuple[str, float]]], *, width: int = 640, height: int = 220, left: int = 60) -> dict:
    """Cumulative counts over days, one polyline per series; x = day index, y = count."""
    days = sorted({day for points in series.values() for day, _ in points})
    top = max((value for points in series.values() for _, value in points), default=0) or 1
    plot_w, plot_h = width - left - 20, height - 50
    position = {day: i for i, day in enumerate(days)}

    def xy(day, value):
        share = position[day] / (len(days) - 1) if len(days) > 1 else 0.5  # One day: in the middle.
        x = left + share * plot_w
        return round(x, 1), round(10 + plot_h - value / top * plot_h, 1)

    drawn = []
    for k, (name, points) in enumerate(series.items()):
        coords = [xy(day, value) for day, value in points]
        drawn.append({"name": name, "cls": f"series-{k % SERIES}", "points": " ".join(f"{x},{y}" for x, y in coords),
                      "dots": [{"x": x, "y": y} for x, y in coords], "lx": left + k * 150, "ltx": left + k * 150 + 16})
    # The first and the last day at the ends of the axis; a single day (or hour) once, under its points.
    if len(days) > 1:
        day_labels = [{"x": left, "text": days[0], "anchor": "start"},
                      {"x": left + plot_w, "text": days[-1], "anchor": "end"}]
    else:
        day_labels = [{"x": left + plot_w / 2, "text": day, "anchor": "middle"} for day in days]
    return {"width": width, "height": height, "series": drawn, "x0": left, "x_end": left + plot_w,
            "y_axis": 10 + plot_h, "top": top, "top_y": 14, "left_label": left - 6,
            "day_labels": day_labels, "day_y": 10 + plot_h + 16,
            "legend_y": height - 14, "legend_ty": height - 4}


def roc_curves(curves: dict[str, list[tuple[float, float]]], *, size: int = 260, left: int = 54,
               legend_w: int = 190) -> dict:
    """ROC curves in one square (x = false positive rate, y = true positive rate), the chance diagonal dashed."""
    top, bottom = 10, 10 + size

    def xy(fpr: float, tpr: float) -> tuple[float, float]:
        return round(left + fpr * size, 1), round(bottom - tpr * size, 1)

    drawn = []
    for k, (name, points) in enumerate(curves.items()):
        drawn.append({"name": name, "cls": f"series-{k % SERIES}",
                      "points": " ".join("{},{}".format(*xy(fpr, tpr)) for fpr, tpr in points),
                      "ly": top + 6 + k * 20, "lty": top + 15 + k * 20})
    # The y labels sit on their grid lines (baseline 4 px below), not above them, so "0.0" twice reads as two axes.
    ticks = [{"value": f"{t:.1f}", "x": left + t * size, "y": bottom - t * size, "ty": bottom - t * size + 4}
             for t in (0, 0.5, 1)]
    return {"width": left + size + 24 + legend_w, "height": bottom + 36, "x0": left, "x_end": left + size,
            "top": top, "bottom": bottom, "series": drawn, "ticks": ticks, "tick_ty": bottom + 14,
            "label_x": left - 6, "axis_title_y": bottom + 30, "mid_x": left + size / 2, "mid_y": top + size / 2,
            "y_title_x": 12,
            "legend_x": left + size + 24, "legend_tx": left + size + 40}


def rank_grid(rows: list[str], columns: list[str], ranks: list[list], *, cell_w: int = 112, cell_h: int = 30,
              label_w: int = 150, header_h: int = 40) -> dict:
    """A heatmap's shape for ranks (1 = best): the best cell darkest, the worst lightest, each labelled with its
    rank; a missing rank gets class heat-none."""
    worst = max(len(rows), 1)
    steps = [[None if rank is None else round((worst - rank) / max(worst - 1, 1) * (HEAT_STEPS - 1)) for rank in row]
             for row in ranks]
    texts = [["—" if rank is None else str(rank) for rank in row] for row in ranks]
    titles = [[f"{rows[r]}: " + ("no rank" if rank is None else f"rank {rank} of {worst}") + f" in {columns[c].lower()}"
               for c, rank in enumerate(row)] for r, row in enumerate(ranks)]
    return _grid(rows, columns, steps, texts, titles, cell_w=cell_w, cell_h=cell_h, label_w=label_w,
                 header_h=header_h)
