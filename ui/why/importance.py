"""The Why? page's importance part: rank every head by ablation and by gradient, then prune heads in
that order (computation: vizcore/why/importance.py, figures: vizcore/why/figures.py).

The run is a background job (``ImportanceJob``) in the server's one queue (``ui/jobs.py``), kept in this
session's state under ``why.importance.job`` with its result; its progress is redrawn every second.
"""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from ui import jobs, url_state
from ui.feedback import CHART
from ui.layout import for_screen
from ui.why.page import WhyContext
from vizcore.why.figures import importance_heatmap, pruning_lines, rank_scatter
from vizcore.why.heldout import SENTENCES
from vizcore.why.importance import (
    DEFAULT_CURVE_POINTS,
    GRADIENT_COST,
    RANKINGS,
    HeadImportance,
    ImportanceJob,
    classifier_target,
    curve_steps,
    masked_lm_target,
)

KEY_JOB = "why.importance.job"
KEY_TARGET = "why.importance.target"
KEY_COUNT = "why.importance.count"
KEY_METRIC = "why.importance.metric"
KEY_GRADIENT = "why.importance.gradient"
TARGETS = {"mlm": "Masked-LM on held-out sentences", "classifier": "Fine-tuned classifier on its held-out set"}
DEFAULT_COUNT = 24  # about 25 s on one core for the shipped 6 x 12-head masked-LM (measured)
MIN_COUNT = 2
METRIC_NAMES = {"log_prob": "mean log-probability of the masked words", "loss": "cross-entropy loss",
                "accuracy": "accuracy"}
DROP_NAMES = {"log_prob": "drop in mean log-prob", "loss": "rise in loss", "accuracy": "drop in accuracy"}


# count's top is the number of examples the target has: checked where its slider is drawn
URL_PARAMS = {"target": (KEY_TARGET, url_state.OneOf(tuple(TARGETS))),
              "count": (KEY_COUNT, url_state.Integer(MIN_COUNT))}


def show(ctx: WhyContext) -> dict:
    """Draw the part; returns its URL parameters."""
    st.markdown(
        "Which heads does the model need? **Ablation**: switch each head off alone and measure how much worse "
        "the model gets over many sentences. **Gradient** (Michel et al. 2019): how steeply the loss changes "
        "when a head's output is scaled, |∂L/∂ξ| at ξ = 1, averaged over the sentences: no head is removed. "
        "Then remove heads together, least important first: how many can go before the model breaks?")
    target = _choose_target(ctx)
    count = _choose_count(ctx, target)
    _controls(ctx, target, count)
    job = jobs.current(KEY_JOB)
    if job is not None:
        jobs.live(KEY_JOB, _draw_live)
        if job.finished and job.result is not None:
            _results(job.result)
    return {"target": target, "count": count}


def _choose_target(ctx: WhyContext) -> str:
    if st.session_state.get(KEY_TARGET) not in TARGETS:
        st.session_state[KEY_TARGET] = "mlm"
    target = st.radio("Measure on", list(TARGETS), format_func=TARGETS.get, key=KEY_TARGET, horizontal=True)
    if target == "mlm":
        st.caption(f"**{ctx.model}** on held-out sentences written for this page, about 15 % of each one's "
                   "words masked (always the same ones); metric: the mean log-probability of the masked words.")
    elif ctx.classifier is None:
        st.info("This session has no fine-tuned classifier: train one in the **Fine-tuning lab**, then come back "
                "to rank its heads on its held-out set.")
    else:
        st.caption(f"The classifier fine-tuned from **{ctx.classifier.result.model_name}** in this session, on "
                   "its held-out set; metrics: cross-entropy loss (ranks the heads) and accuracy.")
    return target


def _available(ctx: WhyContext, target: str) -> int:
    """How many examples the target has (0: none to measure on)."""
    if target == "mlm":
        return len(SENTENCES)
    return 0 if ctx.classifier is None else len(ctx.classifier.data.test)


def _choose_count(ctx: WhyContext, target: str) -> int:
    available = _available(ctx, target)
    if available < MIN_COUNT:  # nothing to measure on (the part says so): keep the count for later
        return int(st.session_state.get(KEY_COUNT, DEFAULT_COUNT))
    url_state.settle(KEY_COUNT, DEFAULT_COUNT, MIN_COUNT, available)
    what = "Sentences" if target == "mlm" else "Held-out examples"
    count = st.slider(what, MIN_COUNT, available, key=KEY_COUNT,
                      help="More examples: a steadier ranking, a longer run (the time grows in proportion).")
    heads = ctx.loaded.num_layers * ctx.loaded.num_heads
    passes = count * (GRADIENT_COST + 1 + heads + len(RANKINGS) * (len(curve_steps(heads)) - 3))
    st.caption(f"About {passes:,} sentence-sized forward passes for {heads} heads; the default "
               f"({DEFAULT_COUNT}) takes about half a minute on one core for the 6 x 12-head masked-LM.")
    return count


def _make_target(ctx: WhyContext, target: str, count: int):
    if target == "mlm":
        return masked_lm_target(ctx.loaded, count)
    classifier = ctx.classifier
    return classifier_target(classifier.base, classifier.result, classifier.data.test, limit=count)


def _new_job(ctx: WhyContext, target: str, count: int) -> ImportanceJob:
    return ImportanceJob(_make_target(ctx, target, count), DEFAULT_CURVE_POINTS)


def _controls(ctx: WhyContext, target: str, count: int) -> None:
    left, right, note = st.columns([1, 1, 5], vertical_alignment="center")
    jobs.start_stop(KEY_JOB, lambda: _new_job(ctx, target, count), "Start",
                    ("why.importance.start", "why.importance.stop"), where=(left, right),
                    ready=_available(ctx, target) >= MIN_COUNT,
                    helps=("Rank every head of this model on these examples, in the background",
                           "Ends after the current batch; a stopped run shows nothing (a half-ranked model says "
                           "little)"))
    note.caption("The run goes on in the background on one CPU core, so the rest of the app stays usable; "
                 "runs of every user share one line.")


def _draw_live(job: ImportanceJob) -> None:
    fraction, text = job.progress()
    st.progress(min(1.0, fraction), text=text)
    if job.status == "error":
        st.error(job.error)
    elif job.status == "stopped":
        st.warning(jobs.stopped_text(job, "Stopped: nothing to show. Start again to rank the heads."))


def _results(result: HeadImportance) -> None:
    what = "sentences" if result.target == "masked-lm" else "held-out examples"
    plain = ", ".join(f"{METRIC_NAMES[m]} {v:.4f}" for m, v in zip(result.metrics, result.plain))
    st.markdown(f"**{result.model}** on {result.examples} {what} ({result.averaged_over} "
                f"{'masked words' if result.target == 'masked-lm' else 'examples'}), all heads: {plain}.")
    metric = 0
    if len(result.metrics) > 1:
        name = st.radio("Ablation metric", result.metrics, format_func=METRIC_NAMES.get, key=KEY_METRIC,
                        horizontal=True, help="The loss ranks the heads and orders the pruning curve")
        metric = result.metrics.index(name)
    normalised = st.radio("Gradient score", ["normalised", "raw"], key=KEY_GRADIENT, horizontal=True,
                          format_func={"normalised": "per-layer L2-normalised (Michel et al.; ranks the heads)",
                                       "raw": "raw mean |∂L/∂ξ|"}.get) == "normalised"
    _maps(result, metric, normalised)
    _pruning(result, metric)
    st.download_button("Download JSON", json.dumps(result.to_dict(), indent=1), key="why.importance.download",
                       file_name=f"head-importance-{result.target}.json", mime="application/json")


def _maps(result: HeadImportance, metric: int, normalised: bool) -> None:
    name = result.metrics[metric]
    gradient = result.gradient_normalised if normalised else result.gradient
    st.plotly_chart(for_screen(importance_heatmap(result.ablation[metric],
                                                  "Ablation: what removing the head alone costs",
                                                  DROP_NAMES[name], diverging=True)),
                    config=CHART, key="why.importance.ablation_map")
    st.plotly_chart(for_screen(importance_heatmap(gradient, "Gradient: Michel et al.'s importance",
                                                  "normalised |∂L/∂ξ|" if normalised else "mean |∂L/∂ξ|")),
                    config=CHART, key="why.importance.gradient_map")
    rho = result.correlation(metric, normalised)
    st.plotly_chart(for_screen(rank_scatter(result.ablation[metric], gradient, "ablation", "gradient", rho)),
                    config=CHART, key="why.importance.scatter")
    st.caption("Red cells: removing that head alone makes the model worse; blue: it does slightly better "
               f"without it. Spearman's ρ = {'undefined' if np.isnan(rho) else f'{rho:.2f}'} between the two "
               "rankings: 1 = the same order, 0 = unrelated. The gradient is a first-order guess at the "
               "ablation's effect, so they need not agree.")


def _pruning(result: HeadImportance, metric: int) -> None:
    name = result.metrics[metric]
    heads = result.gradient.size
    curves = {ranking: curve[:, metric] for ranking, curve in result.curves.items()}
    st.plotly_chart(for_screen(pruning_lines(result.removed, curves, float(result.plain[metric]), METRIC_NAMES[name],
                                             heads,
                                             "Pruning heads least important first")),
                    config=CHART, key="why.importance.pruning")
    st.caption("Each point removes that many heads together (Michel et al.'s curve). The rankings were made on "
               "these same examples, so the curves flatter them a little; the random order is the baseline.")
