"""Dependency counts per shard, and the relation table of a finished run (Clark et al.'s head accuracy).

Per shard (``shard_counts``), from the per-sentence records of ``measures.measure_batch``:

* ``hits``: ``relation``, ``direction``, ``layer``, ``head``, ``hits``, ``count``;
* ``offsets``: ``relation``, ``direction``, ``offset``, ``count`` (how often the right answer lies at each
  word offset: the fixed-offset baseline);
* ``examples``: the ``TOP_EXAMPLES`` sentences where each head puts the most word-level attention on a
  relation (the mean over the sentence's arcs of that relation, from the one word to the other).

``relation_table`` sums the shards: ``relation``, ``direction``, ``layer``, ``head``, ``accuracy``, ``count``,
``baseline_offset``, ``baseline_accuracy``; the relation ``all`` pools every arc, as the paper's first row.
Layers and heads are 0-based.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from vizcore.corpus.syntax import DIRECTIONS

TOP_EXAMPLES = 10
ALL = "all"


def shard_counts(records: pa.Table, layers: int, heads: int) -> dict[str, pa.Table]:
    """The three count tables of one shard (see the module docstring)."""
    hits: dict[str, np.ndarray] = defaultdict(lambda: np.zeros((2, layers, heads), dtype=np.int64))
    counts: dict[str, int] = defaultdict(int)
    offsets: dict[tuple[str, int, int], int] = defaultdict(int)
    means: dict[str, list[tuple[int, np.ndarray]]] = defaultdict(list)
    columns = [records.column(c).to_pylist() for c in ("sentence_id", "arc_relation", "arc_offset")]
    hit_lists, weight_lists = records.column("hits"), records.column("weights")
    for row, (sentence_id, relations, arc_offsets) in enumerate(zip(*columns)):
        if not relations:
            continue
        arcs = len(relations)
        sentence_hits = np.asarray(hit_lists[row].values, dtype=bool).reshape(arcs, 2, layers, heads)
        weights = np.asarray(weight_lists[row].values, dtype=np.float32).reshape(arcs, 2, layers, heads)
        arc_offsets = np.asarray(arc_offsets).reshape(arcs, 2)
        names = np.array(relations)
        for relation in sorted(set(relations)):
            mine = names == relation
            hits[relation] += sentence_hits[mine].sum(0)
            counts[relation] += int(mine.sum())
            means[relation].append((sentence_id, weights[mine].mean(0)))
        for relation, pair in zip(relations, arc_offsets):
            for d in range(2):
                offsets[(relation, d, int(pair[d]))] += 1
    return {"hits": _hits_table(hits, counts), "offsets": _offsets_table(offsets), "examples": _examples(means)}


def _hits_table(hits: dict[str, np.ndarray], counts: dict[str, int]) -> pa.Table:
    rows = []
    for relation, array in hits.items():
        for (d, layer, head), value in np.ndenumerate(array):
            rows.append((relation, DIRECTIONS[d], layer, head, int(value), counts[relation]))
    frame = pd.DataFrame(rows, columns=["relation", "direction", "layer", "head", "hits", "count"])
    return pa.Table.from_pandas(frame, preserve_index=False)


def _offsets_table(offsets: dict[tuple[str, int, int], int]) -> pa.Table:
    rows = [(r, DIRECTIONS[d], o, n) for (r, d, o), n in offsets.items()]
    frame = pd.DataFrame(rows, columns=["relation", "direction", "offset", "count"])
    return pa.Table.from_pandas(frame.astype({"offset": "int64", "count": "int64"}), preserve_index=False)


def _examples(means: dict[str, list[tuple[int, np.ndarray]]]) -> pa.Table:
    frames = []
    for relation, items in means.items():
        ids = np.array([i for i, _ in items], dtype=np.int64)
        stacked = np.stack([m for _, m in items])  # (S, 2, L, H)
        frames.append(_top(relation, ids, stacked))
    columns = ["relation", "direction", "layer", "head", "sentence_id", "weight"]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return pa.Table.from_pandas(frame.astype({"sentence_id": "int64", "weight": "float32"}), preserve_index=False)


def _top(relation: str, ids: np.ndarray, weights: np.ndarray) -> pd.DataFrame:
    """The ``TOP_EXAMPLES`` sentences with the largest weight, per direction and head (ties: smaller id)."""
    _, directions, layers, heads = weights.shape
    order = np.lexsort((np.broadcast_to(ids[:, None, None, None], weights.shape), -weights), axis=0)
    order = order[:TOP_EXAMPLES]  # (k, 2, L, H)
    k = order.shape[0]
    d, layer, head = np.meshgrid(np.arange(directions), np.arange(layers), np.arange(heads), indexing="ij")
    return pd.DataFrame({
        "relation": relation,
        "direction": np.array(DIRECTIONS)[np.broadcast_to(d, order.shape).ravel()],
        "layer": np.broadcast_to(layer, order.shape).ravel(),
        "head": np.broadcast_to(head, order.shape).ravel(),
        "sentence_id": ids[order].ravel(),
        "weight": np.take_along_axis(weights, order, axis=0).ravel(),
    }).assign(rank=np.repeat(np.arange(k), directions * layers * heads)).sort_values(
        ["direction", "layer", "head", "rank"]).drop(columns="rank")


def relation_table(hits: pd.DataFrame, offsets: pd.DataFrame) -> pd.DataFrame:
    """Summed shard counts -> accuracy per relation, direction and head, with the best fixed offset."""
    per_head = hits.groupby(["relation", "direction", "layer", "head"], as_index=False)[["hits", "count"]].sum()
    pooled = per_head.groupby(["direction", "layer", "head"], as_index=False)[["hits", "count"]].sum()
    per_head = pd.concat([per_head, pooled.assign(relation=ALL)], ignore_index=True)
    per_offset = offsets.groupby(["relation", "direction", "offset"], as_index=False)["count"].sum()
    pooled_offsets = per_offset.groupby(["direction", "offset"], as_index=False)["count"].sum().assign(relation=ALL)
    per_offset = pd.concat([per_offset, pooled_offsets], ignore_index=True)
    totals = per_offset.groupby(["relation", "direction"])["count"].transform("sum")
    per_offset = per_offset.assign(share=per_offset["count"] / totals)
    best = (per_offset.sort_values(["relation", "direction", "share", "offset"], ascending=[True, True, False, True])
            .drop_duplicates(["relation", "direction"])
            .rename(columns={"offset": "baseline_offset", "share": "baseline_accuracy"})
            [["relation", "direction", "baseline_offset", "baseline_accuracy"]])
    table = per_head.merge(best, on=["relation", "direction"], how="left")
    table["accuracy"] = table["hits"] / table["count"]
    return table[["relation", "direction", "layer", "head", "accuracy", "count", "hits", "baseline_offset",
                  "baseline_accuracy"]].sort_values(["relation", "direction", "layer", "head"], ignore_index=True)


def best_heads(table: pd.DataFrame, min_count: int = 1) -> pd.DataFrame:
    """Per relation and direction, the most accurate head (ties: the first), beside the baseline."""
    kept = table[table["count"] >= min_count]
    order = kept.sort_values(["relation", "direction", "accuracy", "layer", "head"],
                             ascending=[True, True, False, True, True])
    return order.drop_duplicates(["relation", "direction"]).reset_index(drop=True)


def write_results(out: Path, shard_names: list[str], write: Callable[[pa.Table, Path], None]) -> None:
    """``relations.parquet`` and ``examples.parquet`` from every shard's counts, one shard at a time: the
    counts are summed and the examples cut to the top ``TOP_EXAMPLES`` as each shard comes in, so memory
    stays that of one shard, however many there are."""
    keys = ["relation", "direction", "layer", "head"]
    hits = offsets = examples = None
    for name in shard_names:
        part = {kind: pq.read_table(out / "syntax" / kind / name).to_pandas()
                for kind in ("hits", "offsets", "examples")}
        hits = _summed(hits, part["hits"], keys, ["hits", "count"])
        offsets = _summed(offsets, part["offsets"], ["relation", "direction", "offset"], ["count"])
        both = part["examples"] if examples is None else pd.concat([examples, part["examples"]], ignore_index=True)
        examples = (both.sort_values(keys + ["weight", "sentence_id"], ascending=[True] * 4 + [False, True])
                    .groupby(keys).head(TOP_EXAMPLES).reset_index(drop=True))
    table = relation_table(hits, offsets)
    write(pa.Table.from_pandas(table, preserve_index=False), out / "relations.parquet")
    write(pa.Table.from_pandas(examples, preserve_index=False), out / "examples.parquet")


def _summed(total: pd.DataFrame | None, part: pd.DataFrame, keys: list[str], values: list[str]) -> pd.DataFrame:
    both = part if total is None else pd.concat([total, part], ignore_index=True)
    return both.groupby(keys, as_index=False)[values].sum()
