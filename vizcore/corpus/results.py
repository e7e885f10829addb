"""A finished corpus run read back: the tables of ``DIR`` (see ``vizcore.corpus.engine``), and what the page asks of
them (per-head means and quantiles, the sentences where a head follows a relation most, Explorer links).

Layers and heads are 0-based in these tables; ``explorer_link`` writes them 1-based, as URLs count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from vizcore.corpus.measures import MEASURES
from vizcore.errors import VizError

DEMO_DIR = Path(__file__).resolve().parents[1] / "data" / "corpus-demo"
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True)
class CorpusResults:
    folder: str
    summary: dict
    heads: pd.DataFrame  # sentence_id, layer, head, measures...
    sentences: pd.DataFrame  # sentence_id, text, num_tokens, truncated (, arcs, unaligned_arcs)
    relations: pd.DataFrame | None  # None without --syntax
    examples: pd.DataFrame | None

    @property
    def num_layers(self) -> int:
        return int(self.heads["layer"].max()) + 1

    @property
    def num_heads(self) -> int:
        return int(self.heads["head"].max()) + 1


def load_results(folder: str | Path) -> CorpusResults:
    """Read a finished run; a folder that is not one gets a message saying what is missing."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise VizError(f"'{folder}' is not a folder: give the --out folder of a finished corpus run.")
    summary_path = path / "summary.json"
    if not summary_path.is_file() or not (path / "heads.parquet").exists():
        raise VizError(f"'{folder}' holds no corpus results (summary.json and heads.parquet): run python -m vizcore "
                       "corpus --input FILE --out FOLDER first.")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        heads = pq.read_table(path / "heads.parquet").to_pandas()
        sentences = pq.read_table(path / "sentences").to_pandas()
        relations = _optional(path / "relations.parquet")
        examples = _optional(path / "examples.parquet")
    except (OSError, ValueError, pa.ArrowException) as error:
        raise VizError(f"The results in '{folder}' could not be read: {str(error).splitlines()[0]}") from error
    if not summary.get("complete", True):
        raise VizError(f"The run in '{folder}' did not finish: rerun the same command to complete it.")
    return CorpusResults(str(path), summary, heads, sentences, relations, examples)


def _optional(path: Path) -> pd.DataFrame | None:
    return pq.read_table(path).to_pandas() if path.exists() else None


def head_means(heads: pd.DataFrame) -> pd.DataFrame:
    """One row per head (0-based layer, head): each measure's mean over the sentences."""
    return heads.groupby(["layer", "head"], as_index=False)[list(MEASURES)].mean()


def head_quantiles(heads: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Per head, the ``QUANTILES`` of one measure over the sentences: columns ``layer``, ``head``, ``q05`` ...
    ``q95`` (what a box plot draws, without sending every sentence to the browser)."""
    if measure not in MEASURES:
        raise VizError(f"Unknown measure '{measure}': choose one of {', '.join(MEASURES)}.")
    grouped = heads.groupby(["layer", "head"])[measure]
    table = pd.DataFrame({f"q{round(q * 100):02d}": grouped.quantile(q) for q in QUANTILES}).reset_index()
    return table.assign(mean=grouped.mean().to_numpy())


def explorer_link(text: str, layer: int, head: int, model: str | None = None) -> str:
    """The Attention Explorer on this sentence and head (``layer``, ``head`` 0-based; the URL is 1-based)."""
    params = {"text": text, "layer": layer + 1, "head": head + 1, "view": "heatmap"}
    if model:
        params["model"] = model
    return "/attention?" + urlencode(params)


def top_sentences(results: CorpusResults, relation: str, direction: str, layer: int, head: int) -> pd.DataFrame:
    """The sentences where head (``layer``, ``head``, 0-based) puts the most word-level attention on ``relation``
    in ``direction`` (the mean over the sentence's arcs), best first, with a link to the Explorer."""
    if results.examples is None:
        raise VizError("This run has no syntax results: rerun it with --syntax.")
    e = results.examples
    chosen = e[(e["relation"] == relation) & (e["direction"] == direction) & (e["layer"] == layer)
               & (e["head"] == head)].sort_values(["weight", "sentence_id"], ascending=[False, True])
    table = chosen.merge(results.sentences[["sentence_id", "text"]], on="sentence_id", how="left")
    model = results.summary.get("model")
    return pd.DataFrame({
        "sentence_id": table["sentence_id"].to_numpy(), "weight": table["weight"].to_numpy(np.float64),
        "text": table["text"].to_numpy(),
        "explorer": [explorer_link(t, layer, head, model) for t in table["text"]],
    })
