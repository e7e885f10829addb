"""The Why? page's activation patching: copy one activation of a clean run into a corrupted run; below it,
attribution patching, the same patches to first order from one backward pass, and how well it ranks them.

Computation: vizcore/why/patching.py, vizcore/why/attribution_patching.py · figures: vizcore/why/figures.py ·
CLI: python -m vizcore patch | attribution-patching
"""

from __future__ import annotations

import json

import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_stop
from ui.layout import for_screen
from ui.state import get_model
from ui.why.page import WhyContext
from vizcore.colours import DIVERGING
from vizcore.why.attribution_patching import TOP_K, Estimate, agreement, attribution_patching
from vizcore.why.examples import PATCH_PAIRS, PatchPair
from vizcore.why.figures import layer_head_heatmap, patching_heatmap, rank_scatter
from vizcore.why.patching import PatchingResult, patch_sweep

KEYS = {"clean": "why.patching.clean", "corrupt": "why.patching.corrupt", "answer": "why.patching.answer",
        "contrast": "why.patching.contrast"}
URL_PARAMS = {name: (key, url_state.Text()) for name, key in KEYS.items()}


def use_pair(pair: PatchPair) -> None:
    for name, key in KEYS.items():
        st.session_state[key] = getattr(pair, name)


@st.cache_data(show_spinner="Patching every layer x position and every head…", max_entries=16)
def get_sweep(name: str, device: str, clean: str, corrupt: str, answer: str, contrast: str) -> PatchingResult:
    return patch_sweep(get_model(name, device, "mlm"), clean, corrupt, answer, contrast)


@st.cache_data(show_spinner="Estimating every patch from one backward pass…", max_entries=16)
def get_estimate(name: str, device: str, clean: str, corrupt: str, answer: str, contrast: str) -> Estimate:
    return attribution_patching(get_model(name, device, "mlm"), clean, corrupt, answer, contrast)


def inputs() -> dict[str, str]:
    for name, key in KEYS.items():
        st.session_state.setdefault(key, getattr(PATCH_PAIRS[0], name))
    with st.container(horizontal=True):
        for i, pair in enumerate(PATCH_PAIRS):
            st.button(pair.label, key=f"why.patching.example{i}", on_click=use_pair, args=(pair,),
                      help=f"{pair.clean} / {pair.corrupt}")
    left, right = st.columns(2)
    left.text_input("Clean sentence (the answer you want back)", key=KEYS["clean"])
    right.text_input("Corrupted sentence (same number of tokens)", key=KEYS["corrupt"])
    left.text_input("Answer (the clean sentence's word)", key=KEYS["answer"])
    right.text_input("Contrast (the corrupted sentence's word)", key=KEYS["contrast"])
    return {name: st.session_state[key] for name, key in KEYS.items()}


def show(ctx: WhyContext) -> dict:
    st.markdown(
        "Run the model on a **clean** and a **corrupted** sentence. The *logit difference* LD = logit(answer) − "
        "logit(contrast) at the mask is high on the clean run and low on the corrupted one. Copy **one** "
        "activation from the clean run into the corrupted run: the share of the difference that comes back, "
        "(LD patched − LD corrupted) / (LD clean − LD corrupted), says how much the answer needs that "
        "activation (Meng et al. 2022; Wang et al. 2022).")
    values = inputs()
    result = or_stop(get_sweep, ctx.model, ctx.device, values["clean"], values["corrupt"], values["answer"],
                     values["contrast"])
    columns = st.columns(3)
    columns[0].metric("LD clean", f"{result.ld_clean:.3f}", help=f"logit({result.answer}) − logit({result.contrast}) "
                      "on the clean sentence")
    columns[1].metric("LD corrupted", f"{result.ld_corrupt:.3f}")
    columns[2].metric("Difference to recover", f"{result.ld_clean - result.ld_corrupt:.3f}")
    states = patching_heatmap(result.recovered, result.clean_tokens, result.corrupt_tokens,
                              "Recovered share: one hidden state at one position patched from the clean run")
    st.plotly_chart(for_screen(states), key="why.patching.states", config=CHART)
    st.caption("Rows: the embedding output, then the output of each layer. 1 = the clean answer is back, 0 = "
               "nothing changed, negative = further away. The last layer at the mask is exactly 1 (it is what the "
               "masked-LM head reads) and 0 elsewhere; the embeddings recover only where the sentences differ.")
    st.plotly_chart(for_screen(layer_head_heatmap(result.head_recovered,
                                                  "Recovered share: each head patched from the clean "
                                                  "run", "recovered", scale=DIVERGING,
                                                  zrange=_symmetric(result.head_recovered))),
                    key="why.patching.heads", config=CHART)
    st.download_button("Download the numbers (JSON)", json.dumps(result.to_dict(), indent=1),
                       file_name="patching.json", mime="application/json", key="why.patching.download")
    _show_estimate(ctx, values, result)
    return dict(values)


def _show_estimate(ctx: WhyContext, values: dict[str, str], exact: PatchingResult) -> None:
    st.subheader("Attribution patching: every patch to first order, from one backward pass")
    st.markdown(
        "Instead of one run per patch: one clean run, one corrupted run and **one** backward pass give the "
        "gradient of LD with respect to every activation; (clean − corrupted activation) · gradient estimates "
        "each patch to first order (Nanda 2023; Syed et al. 2023). It is exact where LD changes linearly, and "
        "misses what saturates (a softmax that flips, a LayerNorm that rescales).")
    estimate = or_stop(get_estimate, ctx.model, ctx.device, values["clean"], values["corrupt"], values["answer"],
                       values["contrast"])
    together = agreement(exact, estimate)
    first, second = st.columns(3), st.columns(3)
    first[0].metric("Spearman ρ, states × positions", _number(together.spearman_states),
                    help="Rank correlation of the estimate with the exact sweep over every state × position")
    first[1].metric("Spearman ρ, heads", _number(together.spearman_heads))
    top = (f"The share of the exact sweep's {TOP_K} largest effects (by size) that are among the estimate's "
           f"{TOP_K} largest")
    second[0].metric(f"Top-{TOP_K} overlap, states", f"{together.overlap_states:.0%}", help=top)
    second[1].metric(f"Top-{TOP_K} overlap, heads", f"{together.overlap_heads:.0%}", help=top)
    timing = ("Measured when it was computed (the page keeps results, so a second look is free; the first "
              "computation after the server starts includes warming up)")
    first[2].metric("Time, exact sweep", f"{exact.seconds:.2f} s", help=timing)
    second[2].metric("Time, estimate", f"{estimate.seconds:.2f} s", help=timing)
    st.plotly_chart(for_screen(patching_heatmap(estimate.recovered, estimate.clean_tokens, estimate.corrupt_tokens,
                                                "Estimated recovered share (first order): state × position")),
                    key="why.patching.estimate_states", config=CHART)
    st.plotly_chart(for_screen(layer_head_heatmap(estimate.head_recovered, "Estimated recovered share (first "
                                                  "order): each head", "recovered", scale=DIVERGING,
                                                  zrange=_symmetric(estimate.head_recovered))),
                    key="why.patching.estimate_heads", config=CHART)
    st.plotly_chart(for_screen(rank_scatter(exact.head_recovered, estimate.head_recovered, "exact patching",
                                            "attribution patching", together.spearman_heads)),
                    key="why.patching.ranks", config=CHART)
    st.caption("Each head's rank by the exact sweep against its rank by the estimate (1 = the largest recovered "
               "share); on the diagonal they agree.")
    st.download_button("Download the estimate (JSON)", json.dumps({**estimate.to_dict(), **together.to_dict()},
                                                                  indent=1),
                       file_name="attribution-patching.json", mime="application/json",
                       key="why.patching.estimate_download")


def _number(value: float) -> str:
    return "n/a" if value != value else f"{value:.2f}"


def _symmetric(values) -> tuple[float, float]:
    bound = max(0.1, float(abs(values).max()))
    return -bound, bound
