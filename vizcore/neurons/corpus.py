"""Each feed-forward neuron's top-k activating tokens over a corpus: the corpus job's shard files, their merge
into ``DIR/neurons.parquet``, and what the page and the CLI ask of it.

As in Geva et al. (2021), who read a neuron as a key that fires on patterns of its input, and Neuronpedia,
which shows a neuron's top-activating examples: per neuron, the k tokens of the corpus with the largest
activation, each with its sentence and a window of ``CONTEXT`` tokens either side. Special tokens are not
candidates (``vizcore.neurons.topk``). ``neurons.parquet`` has one row per neuron and rank (0-based
``layer``, ``neuron``, ``rank``) with ``sentence_id``, ``position``, ``token``, ``activation``, ``context``
(the window's text) and ``start``, ``end`` (where the token is in it, in characters).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from vizcore.errors import VizError
from vizcore.neurons.topk import rank_in_unit, top_k_rows

CONTEXT = 8  # tokens either side of a hit
UNIT = 1 << 16  # unit = layer * UNIT + neuron: d_ff < 65,536


def _unit(table: pa.Table) -> np.ndarray:
    return table.column("layer").to_numpy().astype(np.int64) * UNIT + table.column("neuron").to_numpy()


def shard_neurons(records: pa.Table, k: int) -> dict[str, pa.Table]:
    """A shard's per-sentence records (``vizcore.corpus.measures``) -> ``hits`` (its top ``k`` per neuron:
    ``layer``, ``neuron``, ``sentence_id``, ``position``, ``activation``) and ``tokens`` (``sentence_id``,
    ``tokens`` of the sentences in them, special tokens blank)."""
    counts = pc.list_value_length(records.column("neuron")).to_numpy()

    def flat(name: str) -> np.ndarray:
        return np.asarray(records.column(name).combine_chunks().flatten())
    hits = pa.table({"layer": flat("neuron_layer"), "neuron": flat("neuron"),
                     "sentence_id": np.repeat(records.column("sentence_id").to_numpy(), counts),
                     "position": flat("neuron_position"), "activation": flat("neuron_activation")})
    hits = merge_hits([hits], k)
    used = pc.is_in(records.column("sentence_id"), pa.array(np.unique(hits.column("sentence_id"))))
    return {"hits": hits, "tokens": records.filter(used).select(["sentence_id", "tokens"])}


def merge_hits(tables: list[pa.Table], k: int) -> pa.Table:
    """Candidate hits (tables as ``shard_neurons``'s ``hits``) -> each neuron's ``k`` largest, sorted by layer,
    neuron and rank."""
    table = pa.concat_tables(tables)
    keep = top_k_rows(_unit(table), table.column("activation").to_numpy(), table.column("sentence_id").to_numpy(),
                      table.column("position").to_numpy(), k)
    return table.take(pa.array(keep))


def write_neuron_results(out: Path, shard_names: list[str], k: int, write: Callable[[pa.Table, Path], None]) -> None:
    """Every shard's hits merged (one shard at a time, so at most two shards' hits in memory) -> ``neurons.parquet``."""
    merged = None
    for name in shard_names:
        shard = pq.read_table(out / "neurons" / "hits" / name)
        merged = shard if merged is None else merge_hits([merged, shard], k)
    if merged is None:
        raise VizError(f"'{out}' has no neuron hits: rerun it with --neurons.")
    needed = pa.array(np.unique(merged.column("sentence_id")))
    tokens: dict[int, list[str]] = {}
    for name in shard_names:
        table = pq.read_table(out / "neurons" / "tokens" / name)
        table = table.filter(pc.is_in(table.column("sentence_id"), needed))
        tokens.update(zip(table.column("sentence_id").to_pylist(), table.column("tokens").to_pylist()))
    ids, positions = merged.column("sentence_id").to_pylist(), merged.column("position").to_pylist()
    # Many neurons share their top tokens (the demo's 184,320 hits are 2,419 tokens): each context made once.
    made = {(i, p): context(tokens[i], p) for i, p in set(zip(ids, positions))}
    around = [made[i, p] for i, p in zip(ids, positions)]  # (text, start, end)
    table = pa.table({
        "layer": merged.column("layer").cast(pa.int16()), "neuron": merged.column("neuron").cast(pa.int16()),
        "rank": pa.array(rank_in_unit(_unit(merged)), pa.int16()),
        "sentence_id": merged.column("sentence_id").cast(pa.int64()), "position": merged.column("position"),
        "token": pa.array([tokens[i][p] for i, p in zip(ids, positions)]),
        "activation": merged.column("activation").cast(pa.float32()),
        "context": pa.array([c[0] for c in around]), "start": pa.array([c[1] for c in around], pa.int16()),
        "end": pa.array([c[2] for c in around], pa.int16()),
    })
    write(table, out / "neurons.parquet")


def join_spans(tokens: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Word pieces as text, and each piece's (start, end) in it: WordPiece's ``##`` joins the previous piece; with
    byte-level BPE or SentencePiece (pieces marked 'Ġ' / '▁' where a word starts), unmarked pieces join. Blank
    (special) tokens are left out (an empty span)."""
    bpe = any(t[:1] in ("Ġ", "▁") for t in tokens if t)
    text, spans = "", []
    for token in tokens:
        if bpe:
            starts_word, piece = token[:1] in ("Ġ", "▁"), token.lstrip("Ġ▁")
        else:
            starts_word, piece = not token.startswith("##"), token.removeprefix("##")
        if token and starts_word and text:
            text += " "
        spans.append((len(text), len(text) + len(piece) if token else len(text)))
        text += piece if token else ""
    return text, spans


def context(tokens: list[str], position: int, width: int = CONTEXT) -> tuple[str, int, int]:
    """The text of the ``width`` tokens either side of ``position`` and the token's (start, end) in it."""
    start = max(0, position - width)
    text, spans = join_spans(tokens[start:position + 1 + width])
    return (text, *spans[position - start])


# ---- reading ----------------------------------------------------------------------------------------

def load_neurons(folder: str | Path) -> pd.DataFrame:
    """``DIR/neurons.parquet`` of a finished run, or a VizError saying how to make one."""
    path = Path(folder).expanduser() / "neurons.parquet"
    if not path.is_file():
        raise VizError(f"'{folder}' holds no neuron results (neurons.parquet): run python -m vizcore corpus --input "
                       "FILE --out FOLDER --neurons 20 (or use the built-in demo).")
    try:
        return pq.read_table(path).to_pandas()
    except (OSError, ValueError, pa.ArrowException) as error:
        raise VizError(f"'{path}' could not be read: {str(error).splitlines()[0]}") from error


def shape_of(table: pd.DataFrame) -> tuple[int, int, int]:
    """(layers, neurons per layer, k) of a results table."""
    return int(table["layer"].max()) + 1, int(table["neuron"].max()) + 1, int(table["rank"].max()) + 1


def neuron_top(table: pd.DataFrame, layer: int, neuron: int, top: int | None = None) -> list[dict]:
    """Neuron ``neuron`` of layer ``layer`` (0-based): its top examples, largest first, as records ``{"sentence_id",
    "token", "position", "activation", "context", "token_start", "token_end"}`` (where the token is in the
    context, in characters)."""
    layers, width, k = shape_of(table)
    if not 0 <= layer < layers:
        raise VizError(f"Layer {layer + 1} does not exist: these results have {layers} layers (counted from 1).")
    if not 0 <= neuron < width:
        raise VizError(f"Neuron {neuron + 1} does not exist: these results have {width} neurons per layer "
                       "(counted from 1).")
    rows = table[(table["layer"] == layer) & (table["neuron"] == neuron)].sort_values("rank").head(top or k)
    return [{"sentence_id": int(r.sentence_id), "token": r.token, "position": int(r.position),
             "activation": float(r.activation), "context": r.context, "token_start": int(r.start),
             "token_end": int(r.end)}
            for r in rows.itertuples()]


def piece_text(token: str) -> str:
    """A word piece without its marks (``##``, 'Ġ', '▁'), lower case: what a search compares."""
    return token.removeprefix("##").lstrip("Ġ▁").lower()


def search_token(table: pd.DataFrame, token: str, top: int = 20) -> pd.DataFrame:
    """The neurons whose top examples are ``token`` (a word piece, compared without ``##`` and case) most often:
    ``layer``, ``neuron`` (0-based), ``hits`` (how many of its k examples), ``share`` (hits / k), ``max_activation``
    and ``mean_activation`` over those hits; most hits first, then the largest activation."""
    query = piece_text(token.strip())
    if not query or any(c.isspace() for c in query):
        raise VizError(f"Search for one token (a word or a word piece such as 'ing'), not '{token}'.")
    k = shape_of(table)[2]
    tokens = table["token"]
    found = table[tokens.isin([t for t in tokens.unique() if piece_text(t) == query])]  # ~10,000 distinct
    grouped = found.groupby(["layer", "neuron"], as_index=False).agg(
        hits=("activation", "size"), max_activation=("activation", "max"), mean_activation=("activation", "mean"))
    grouped["share"] = grouped["hits"] / k
    grouped = grouped.sort_values(["hits", "max_activation", "layer", "neuron"],
                                  ascending=[False, False, True, True]).head(top)
    return grouped[["layer", "neuron", "hits", "share", "max_activation", "mean_activation"]].reset_index(drop=True)
