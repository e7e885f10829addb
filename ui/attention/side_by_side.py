"""Model sizes side by side, an expander of the Explorer: counted and timed on a button press, then shown from a
server-wide cache with the date of the measurement (never measured on a rerun); each model's grid at the same sentence.

Computation: vizcore/sizes/sizes.py (the counting rule) · CLI: python -m vizcore sizes
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.attention_component import attention_view
from ui.feedback import or_none
from ui.layout import lazy_tabs
from ui.state import Selection, get_model, get_run
from vizcore.errors import VizError
from vizcore.model.catalog import BASE_MODEL, BUILTIN_MODELS, DEFAULT_MODEL
from vizcore.sizes import COMPONENTS, LENGTHS, TINY_NAME

PART = "attention.sizes"
RUNS = 3
COMPONENT_LABELS = {"embeddings": "embeddings", "attention_q": "attention W_Q", "attention_k": "attention W_K",
                    "attention_v": "attention W_V", "attention_o": "attention W_O", "feed_forward": "feed-forward",
                    "layernorm": "LayerNorm", "heads": "heads (pooler, LM head, output)"}


def compared_models(selected: str) -> tuple[str, ...]:
    """The embedded model, the base-size one, the tiny Transformer, and the sidebar's model when it is another."""
    names = [DEFAULT_MODEL, BASE_MODEL, TINY_NAME]
    return tuple(names + ([selected] if selected and selected not in names else []))


@st.cache_resource(show_spinner=False)
def _measurements() -> dict[tuple[str, ...], list[dict]]:
    """Server-wide: the models compared -> their last measured rows (a few small dicts)."""
    return {}


def measure(names: tuple[str, ...], device: str) -> list[dict]:
    """Count and time every model (seconds: a forward pass at 512 tokens on one thread for each)."""
    from vizcore.sizes.sizes import loaded_sizes, tiny_sizes

    rows = []
    for name in names:
        builtin = BUILTIN_MODELS.get(name)
        if builtin is not None and not builtin.installed():
            rows.append({"model": name, "installed": False, "install": builtin.install_hint()})
        elif name == TINY_NAME:
            rows.append({**tiny_sizes(LENGTHS, RUNS).to_json(), "installed": True})
        else:
            try:
                rows.append({**loaded_sizes(get_model(name, device), LENGTHS, RUNS).to_json(), "installed": True})
            except VizError as error:
                rows.append({"model": name, "installed": False, "install": str(error)})
    return rows


def _count(n: int) -> str:
    return f"{n:,}"


def size_table(rows: list[dict]) -> pd.DataFrame:
    """Quantities down, models across (strings: each row has its own unit)."""
    table = {}
    for row in rows:
        if not row["installed"]:
            table[row["model"]] = {"layers": row["install"]}
            continue
        column = {"layers": str(row["layers"]), "heads": str(row["heads"]), "hidden d": str(row["hidden"]),
                  "d_k = d / heads": str(row["d_k"])}
        column |= {COMPONENT_LABELS[c]: _count(row["parameters"][c]) for c in COMPONENTS}
        column["total parameters"] = _count(row["total"])
        column["memory (parameters)"] = f"{row['memory_bytes'] / 2**20:,.1f} MiB"
        for n, ms in row["forward_ms"].items():
            column[f"forward, {n} tokens"] = "—" if ms is None else f"{ms:,.1f} ms"
        table[row["model"]] = column
    return pd.DataFrame(table).fillna("")


def show_sizes(sel: Selection) -> None:
    names = compared_models(sel.model)
    stored = _measurements()
    rows = stored.get(names)
    label = "Measure again" if rows else "Count and time the models"
    if st.button(label, key=f"{PART}.measure",
                 help="Counts every model's parameters from its tensors and times a forward pass at "
                      f"{', '.join(map(str, LENGTHS))} tokens on this machine: seconds, once (the base-size model "
                      "is 438 MB to load), then kept with its date."):
        with st.spinner("Counting parameters and timing forward passes on one thread…"):
            rows = stored[names] = measure(names, sel.device)
    if not rows:
        return
    dates = sorted({row["measured_at"] for row in rows if row.get("measured_at")})
    st.dataframe(size_table(rows), key=f"{PART}.table")
    st.caption(f"Measured {dates[-1].replace('T', ' ')[:16]} UTC on this machine: median of {RUNS} forward passes "
               "on one thread, without returning attention weights. Parameters are counted once each (a tied "
               "LM head shares the token table); W_Q, W_K, W_V, W_O each include their bias; MPNet's relative "
               "position bias table counts with the embeddings. — = longer than the model reads "
               "(the tiny Transformer's table holds 64 positions).")
    show_grids(sel, [row["model"] for row in rows if row["installed"] and row["model"] != TINY_NAME])


def show_grids(sel: Selection, names: list[str]) -> None:
    """Each model's every head at the sidebar's sentence, in the renderer's grid view (one tab drawn at a time)."""
    if not names:
        return
    st.markdown("**Every head at the same sentence** (rows: layers, columns: heads; the tiny Transformer reads "
                "digits, not words: see the Fine-tuning lab)")
    for tab, name in zip(lazy_tabs(names, f"{PART}.grid_tab"), names):
        if tab.open:
            with tab:
                result = or_none(get_run, name, sel.device, sel.text, sel.pair)
                if result is not None:
                    attention_view(result, key=f"{PART}.grid", keys={"layer": f"{PART}.layer", "head": f"{PART}.head"},
                                   layer=1, head=1, view="grid")
