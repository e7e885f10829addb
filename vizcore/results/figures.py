"""The class report's chart: each lesson's scores before and after, as bars of students per score. No streamlit."""

from __future__ import annotations

import plotly.graph_objects as go

from vizcore.plot import FONT_SIZE, base_layout
from vizcore.results.report import LessonReport

# Okabe-Ito orange and blue: told apart with any colour vision, and named in the legend and on the bars
PHASE_COLOURS = {"before": "#E69F00", "after": "#0072B2"}


def counts(scores: tuple[int, ...], items: int) -> list[int]:
    """How many students scored 0, 1, ..., ``items``."""
    out = [0] * (items + 1)
    for score in scores:
        out[score] += 1
    return out


def score_distribution(report: LessonReport, titled: bool = True) -> go.Figure:
    """Students per score (right answers of ``report.items``), before and after the lesson, side by side. Untitled
    (``titled=False``) where the page's heading names it: a plotly title is one line, cut on a phone."""
    scores = [str(score) for score in range(report.items + 1)]
    fig = go.Figure()
    for name, taken in (("before", report.scores_before), ("after", report.scores_after)):
        per = counts(taken, report.items)
        fig.add_bar(x=scores, y=per, name=f"{name} the lesson ({len(taken)} students)", text=per,
                    textposition="outside", marker={"color": PHASE_COLOURS[name]},
                    hovertemplate=f"{name}: %{{y}} students scored %{{x}}<extra></extra>")
    fig.update_xaxes(title=f"score (right answers of {report.items})", type="category")
    fig.update_yaxes(title="students", rangemode="tozero", dtick=1 if max(len(report.scores_before),
                                                                           len(report.scores_after), 1) <= 10 else None)
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0,
                                               "font": {"size": FONT_SIZE}}, uniformtext={"minsize": FONT_SIZE})
    base_layout(fig, f"{report.title}: scores before and after" if titled else "", 380)
    fig.update_layout(margin={"t": 90 if titled else 40})
    return fig


def distribution_text(report: LessonReport) -> str:
    """The chart in words (its text alternative): "Before (5 students): 1 scored 2, 4 scored 3. After: ..."."""
    parts = []
    for name, taken in (("Before", report.scores_before), ("After", report.scores_after)):
        per = counts(taken, report.items)
        said = ", ".join(f"{n} scored {score}" for score, n in enumerate(per) if n) or "nobody took it"
        parts.append(f"{name} the lesson ({len(taken)} students): {said}.")
    return f"Scores of {report.items}. " + " ".join(parts)
