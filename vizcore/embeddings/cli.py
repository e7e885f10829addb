"""Sentence embeddings on the command line; JSON on stdout, progress on stderr.

* ``python -m vizcore similarity --text A --pair B [--pooling mean|cls|max] [--layer N|last4] [--model M]
  --format json`` prints ``{"model", "cosine", "pooling", "layer", "layers", ...}``: the cosine of the two
  texts' sentence vectors.
* ``python -m vizcore embed --input FILE --out FILE.parquet [--pooling ...] [--layer ...] [--batch-size B]``
  writes one vector per text of FILE (one text per line; blank lines are skipped, each row keeps its line
  number; a ``.csv`` file gives one text per row of ``--column``) to a Parquet file with columns
  ``line``, ``text`` and ``vector``, in file order; prints a JSON summary.

``--layer`` is 1-based (1..L) or ``last4``; in the JSON, ``layer`` is the code value (0-based, ``"last"`` or
``"last4"``) and ``layers`` the 0-based encoder layers pooled.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.embeddings import LAYER_CHOICES, MAX_BATCH, POOLINGS
from vizcore.errors import VizError
from vizcore.text import check_text  # no torch: bad text is refused in a fraction of a second


def _add_vector_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pooling", default="mean", choices=POOLINGS,
                        help="mean of the tokens (default, as sentence-transformers), [CLS] token, or max")
    parser.add_argument("--layer", default="last", help=f"{LAYER_CHOICES} (default: last)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="tokens read per text (default: the model's sentence-transformers setting, "
                             "256 for the embedded model, else the model's maximum)")
    add_model_options(parser)
    add_format_option(parser)


def _settings(loaded, args: argparse.Namespace) -> tuple[object, dict]:
    """The parsed layer and the JSON fields that say how the vectors were made."""
    from vizcore.embeddings.vectors import hidden_indices, parse_layer, sequence_limit

    layer = parse_layer(args.layer, loaded.num_layers)
    return layer, {"pooling": args.pooling, "layer": layer,
                   "layers": [i - 1 for i in hidden_indices(layer, loaded.num_layers)],
                   "max_length": sequence_limit(loaded, args.max_length)}


def _similarity(args: argparse.Namespace) -> dict:
    check_text(args.text)
    check_text(args.pair, "pair")  # before spending seconds on importing torch and loading the model
    from vizcore.embeddings.vectors import cosine_matrix, sentence_vectors
    from vizcore.model.loading import load_model

    loaded = load_model(args.model, device=args.device)
    layer, settings = _settings(loaded, args)
    vectors = sentence_vectors(loaded, [args.text, args.pair], args.pooling, layer, max_length=args.max_length)
    lengths = [len(ids) for ids in loaded.tokenizer([args.text, args.pair], verbose=False)["input_ids"]]
    return {"model": loaded.name, "device": str(loaded.device), "text": args.text, "pair": args.pair,
            "cosine": float(cosine_matrix(vectors)[0, 1]), **settings, "dimension": int(vectors.shape[1]),
            "num_input_tokens": lengths, "truncated": [n > settings["max_length"] for n in lengths]}


def check_out_path(out: str, source: Path) -> Path:
    """Where the Parquet file goes: refused before any work if it could not be written there."""
    path = Path(out).expanduser()
    if path.suffix.lower() != ".parquet":
        raise VizError(f"The output '{out}' must be a .parquet file name, e.g. vectors.parquet.")
    if path.is_dir():
        raise VizError(f"The output '{out}' is a folder: give a file name, e.g. {path / 'vectors.parquet'}.")
    folder = path.parent
    if not folder.is_dir():
        raise VizError(f"The output folder '{folder}' does not exist (or is not a folder): create it first.")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise VizError(f"Cannot write '{out}': no permission. Choose another place for the output.")
    if path.exists() and path.resolve() == source.resolve():
        raise VizError("The output is the input file: give another file name for the vectors.")
    return path


def write_parquet(path: Path, lines, texts, vectors, metadata: dict) -> None:
    """Columns ``line`` (int64), ``text`` (string), ``vector`` (fixed-size list of float32); ``metadata`` as
    JSON under the schema key ``vizcore``. Written to a temporary file and renamed: never half a file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1])
    table = pa.table({"line": pa.array(lines, pa.int64()), "text": pa.array(texts, pa.string()), "vector": column})
    table = table.replace_schema_metadata({"vizcore": json.dumps(metadata)})
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        pq.write_table(table, partial)
        os.replace(partial, path)
    except OSError as error:
        raise VizError(f"Could not write '{path}': {error.strerror or error}.") from error
    finally:
        partial.unlink(missing_ok=True)


def _progress_printer(total: int):
    """Progress on stderr, at most about once a second, and always the last step."""
    last = [0.0]

    def report(done: int, _total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= 1.0:
            print(f"embedded {done:,}/{total:,} texts ({100 * done // total} %)", file=sys.stderr, flush=True)
            last[0] = now

    return report


def _embed(args: argparse.Namespace) -> dict:
    from vizcore.embeddings.search import read_text_file
    from vizcore.embeddings.vectors import POOLING_NAMES, layer_label, sentence_vectors
    from vizcore.model.loading import load_model

    if not 1 <= args.batch_size <= MAX_BATCH:
        raise VizError(f"The batch size must be between 1 and {MAX_BATCH}; got {args.batch_size}.")
    texts = read_text_file(args.input, args.column)  # both files checked before loading the model
    out = check_out_path(args.out, Path(args.input))
    loaded = load_model(args.model, device=args.device)
    layer, settings = _settings(loaded, args)
    print(f"embedding {len(texts):,} texts from '{texts.source}' with {loaded.name} on {loaded.device} "
          f"({POOLING_NAMES[args.pooling]}, layer {layer_label(layer)})", file=sys.stderr, flush=True)
    start = time.perf_counter()
    vectors = sentence_vectors(loaded, texts.texts, args.pooling, layer, args.batch_size, args.max_length,
                               _progress_printer(len(texts)), normalize=not args.no_normalize)
    seconds = time.perf_counter() - start
    lengths = [len(ids) for ids in loaded.tokenizer(list(texts.texts), verbose=False)["input_ids"]]
    summary = {"model": loaded.name, "device": str(loaded.device), **settings,
               "normalized": not args.no_normalize, "dimension": int(vectors.shape[1])}
    write_parquet(out, texts.lines, texts.texts, vectors, summary)
    return {**summary, "input": str(args.input), "column": texts.column, "out": str(out), "texts": len(texts),
            "skipped_blank_lines": texts.skipped_blank,
            "truncated_texts": sum(n > settings["max_length"] for n in lengths),
            "batch_size": args.batch_size, "seconds": round(seconds, 3),
            "texts_per_second": round(len(texts) / seconds, 1) if seconds > 0 else None}


def _register_similarity(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("similarity", help="cosine similarity of two sentences' vectors")
    parser.add_argument("--text", required=True, help='the first sentence, e.g. "A man is playing a guitar."')
    parser.add_argument("--pair", required=True, help='the second sentence, e.g. "Someone plays an instrument."')
    _add_vector_options(parser)
    parser.set_defaults(handler=_similarity)


def _register_embed(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "embed", help="a sentence vector for each line of a text file, written to a Parquet file")
    parser.add_argument("--input", required=True,
                        help="a UTF-8 text file, one text per line (blank lines are skipped), or a .csv file")
    parser.add_argument("--column", default=None,
                        help="the CSV column that holds the texts (default: the only column, or the one named text)")
    parser.add_argument("--out", required=True, help="the Parquet file to write: columns line, text, vector")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per forward pass (default: %(default)s)")
    parser.add_argument("--no-normalize", action="store_true",
                        help="keep the pooled vectors' own length (default: length 1, as sentence-transformers "
                             "gives for the embedded model)")
    _add_vector_options(parser)
    parser.set_defaults(handler=_embed)


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_similarity(subparsers)
    _register_embed(subparsers)
