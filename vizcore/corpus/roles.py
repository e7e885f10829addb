"""One role per head from its behaviour over a corpus, as Dodrio (Wang et al. 2021) and Clark et al. sort heads.

Checked in this order; the first that holds names the head:

* ``syntactic``: for some relation (not ``all`` or ``punct``, at least ``MIN_ARCS`` arcs) the head's accuracy
  beats the best fixed-offset baseline by ``SYNTAX_MARGIN`` or more; the relation with the largest margin
  is its ``detail``;
* ``positional``: on average at least ``POSITION_SHARE`` of its weight goes to the previous token, the next
  one or the token itself;
* ``special-token``: at least ``SPECIAL_SHARE`` goes to [CLS] and [SEP];
* ``broad``: its entropy is at least ``BROAD_ENTROPY`` of the uniform distribution's (log n) on average;
* otherwise ``mixed``.

Thresholds are the page's choice, stated here and shown beside the map; the measures behind them
are in the hover.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vizcore.corpus.relations import ALL

ROLES = ("syntactic", "positional", "special-token", "broad", "mixed")
SYNTAX_MARGIN = 0.15
MIN_ARCS = 50
POSITION_SHARE = 0.5
SPECIAL_SHARE = 0.5
BROAD_ENTROPY = 0.7


def head_roles(heads: pd.DataFrame, sentences: pd.DataFrame, relations: pd.DataFrame | None) -> pd.DataFrame:
    """One row per head (0-based ``layer``, ``head``): ``role``, ``detail`` and the numbers behind it."""
    n = heads[["sentence_id"]].merge(sentences[["sentence_id", "num_tokens"]], on="sentence_id", how="left")
    uniform = np.log(np.maximum(n["num_tokens"].to_numpy(np.float64), 2.0))
    frame = heads.assign(relative_entropy=heads["entropy"].to_numpy() / uniform, special=heads["cls"] + heads["sep"])
    means = frame.groupby(["layer", "head"], as_index=False)[
        ["previous", "next", "self", "special", "relative_entropy"]].mean()
    syntax = _best_margins(relations)
    means = means.merge(syntax, on=["layer", "head"], how="left") if syntax is not None else means.assign(
        relation=None, direction=None, accuracy=np.nan, baseline_accuracy=np.nan, margin=np.nan)
    roles, details = zip(*(_role(row) for row in means.itertuples(index=False)))
    return means.assign(role=list(roles), detail=list(details))


def _best_margins(relations: pd.DataFrame | None) -> pd.DataFrame | None:
    if relations is None or relations.empty:
        return None
    kept = relations[(relations["relation"] != ALL) & (relations["relation"] != "punct")
                     & (relations["count"] >= MIN_ARCS)]
    kept = kept.assign(margin=kept["accuracy"] - kept["baseline_accuracy"])
    best = kept.sort_values(["layer", "head", "margin", "relation"], ascending=[True, True, False, True])
    return best.drop_duplicates(["layer", "head"])[
        ["layer", "head", "relation", "direction", "accuracy", "baseline_accuracy", "margin"]]


def _role(row) -> tuple[str, str]:
    if row.margin == row.margin and row.margin >= SYNTAX_MARGIN:  # not NaN
        return "syntactic", (f"{row.relation} ({row.direction}): {row.accuracy:.0%} vs "
                             f"{row.baseline_accuracy:.0%} for the best fixed offset")
    position = {"previous token": row.previous, "next token": row.next, "itself": row.self}
    where, share = max(position.items(), key=lambda item: item[1])
    if share >= POSITION_SHARE:
        return "positional", f"{share:.0%} of its weight on the {where}" if where != "itself" else \
            f"{share:.0%} of its weight on itself"
    if row.special >= SPECIAL_SHARE:
        return "special-token", f"{row.special:.0%} of its weight on [CLS] and [SEP]"
    if row.relative_entropy >= BROAD_ENTROPY:
        return "broad", f"entropy {row.relative_entropy:.0%} of the uniform distribution's"
    return "mixed", "none of the above"
