"""BERT's two pre-training tasks on the command line, JSON on stdout.

* ``python -m vizcore fill-mask --text TEXT [--model M] [--top-k K] [--iterative] --format json`` prints
  ``{"model", "text", "tokens", "masks": [{"index", "predictions": [{"token", "score", ...}]}]}``; with
  ``--iterative`` also ``"iterative"``: the masks filled one at a time, most confident first. The
  default model is the offline masked-LM trained in this repo.
* ``python -m vizcore tuned-lens --text TEXT [--model M] [--top-k K] --format json`` prints ``{"model",
  "text", "tokens", "masks": [{"index", "logit": [row...], "tuned": [row...] | null}], "tuned_note"}``, a row
  per hidden state (0 = embeddings, the last = the model's output) ``{"layer", "top": [{"token", "token_id",
  "score"}], "final_token_prob", "kl_to_final"}``: the logit lens and the tuned lens (only for the offline
  masked-LM, the one model it was trained for; ``tuned_note`` says why it is null otherwise).
* ``python -m vizcore nsp --text A --pair B [--model M] --format json`` prints ``{"model", "is_next",
  "not_next", "logits", "tokens", "segments"}``: P(B follows A) from BERT's next-sentence head. The
  default model is the offline ``minilm-nsp-tuned``.
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.errors import VizError
from vizcore.model.catalog import BUILTIN_MODELS, NSP_MODEL, fill_mask_model
from vizcore.text import check_pair, check_text  # no torch: bad text is refused in a fraction of a second


def load_masked_lm(args: argparse.Namespace, *texts: str):
    """``--model`` as a masked-LM, after the checks of ``texts`` that need no model (a built-in's mask is
    [MASK]: say it is missing before spending seconds on loading). The Why? commands load theirs here too."""
    for text in texts:
        check_text(text)  # before importing torch
    from vizcore.mlm.fill_mask import LITERAL_MASK, TYPED_MASK
    from vizcore.model.loading import load_model

    for text in texts:
        if args.model in BUILTIN_MODELS and not TYPED_MASK.search(text):
            raise VizError(f"The text has no mask: type {LITERAL_MASK} where a word should be predicted.")
    return load_model(args.model, device=args.device, head="mlm")


def _fill_mask(args: argparse.Namespace) -> dict:
    loaded = load_masked_lm(args, args.text)  # checks the text before importing torch
    from vizcore.mlm.fill_mask import fill_iteratively, fill_mask

    result = fill_mask(loaded, args.text, top_k=args.top_k, lenses=False)  # its JSON has no lens
    payload = {**result.to_dict(), "device": str(loaded.device)}
    if args.iterative:
        payload["iterative"] = [
            {"index": s.index, "token": s.token, "score": s.score, "text": s.text}
            for s in fill_iteratively(loaded, args.text)
        ]
    return payload


def lens_rows(lens, mask: int) -> list[dict]:
    """One record per hidden state (0 = embeddings) of a ``LogitLens`` at mask number ``mask``."""
    return [{"layer": row,
             "top": [{"token": word, "token_id": int(token_id), "score": float(score)}
                     for word, token_id, score in zip(lens.tokens[row][mask], lens.token_ids[row, mask],
                                                      lens.probs[row, mask])],
             "final_token_prob": float(lens.final_token_probs[row, mask]),
             "kl_to_final": float(lens.kl_to_final[row, mask])} for row in range(lens.num_rows)]


def _tuned_lens(args: argparse.Namespace) -> dict:
    loaded = load_masked_lm(args, args.text)
    from vizcore.mlm.fill_mask import fill_mask

    result = fill_mask(loaded, args.text, top_k=1, lens_top_k=args.top_k)
    if result.lens is None:
        raise VizError(result.lens_note)
    tuned = result.tuned_lens
    return {"model": result.model, "text": result.text, "tokens": result.tokens,
            "masks": [{"index": index, "logit": lens_rows(result.lens, m),
                       "tuned": lens_rows(tuned, m) if tuned is not None else None}
                      for m, index in enumerate(result.mask_indices)],
            "tuned_note": result.tuned_note, "device": str(loaded.device)}


def _register_tuned_lens(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tuned-lens", help="layer by layer at each [MASK]: the logit lens and the tuned lens (top-k, KL to the output)")
    parser.add_argument("--text", required=True, help='a sentence with [MASK], e.g. "The capital of France is [MASK]."')
    parser.add_argument("--top-k", type=int, default=5, help="words per layer (default: %(default)s)")
    add_model_options(parser, default=fill_mask_model())
    add_format_option(parser)
    parser.set_defaults(handler=_tuned_lens)


def _next_sentence(args: argparse.Namespace) -> dict:
    check_pair(args.text, args.pair)  # before spending seconds on importing torch and loading the model
    from vizcore.mlm.nsp import next_sentence
    from vizcore.model.loading import load_model

    loaded = load_model(args.model, device=args.device, head="nsp")
    return {**next_sentence(loaded, args.text, args.pair).to_dict(), "device": str(loaded.device)}


def _register_nsp(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "nsp", help="next sentence prediction: the probability that --pair follows --text (IsNext)")
    parser.add_argument("--text", required=True, help='sentence A, e.g. "The man went to the store."')
    parser.add_argument("--pair", default=None, help='sentence B, e.g. "He bought a gallon of milk."')
    add_model_options(parser, default=NSP_MODEL)
    add_format_option(parser)
    parser.set_defaults(handler=_next_sentence)


def _register_fill_mask(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fill-mask", help="predict the [MASK] words of a sentence with a masked-LM (top-k with probabilities)")
    parser.add_argument("--text", required=True, help='a sentence with [MASK], e.g. "The capital of France is [MASK]."')
    parser.add_argument("--top-k", type=int, default=5, help="predictions per mask (default: %(default)s)")
    parser.add_argument("--iterative", action="store_true",
                        help="also fill the masks one at a time, most confident first")
    add_model_options(parser, default=fill_mask_model())
    add_format_option(parser)
    parser.set_defaults(handler=_fill_mask)


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_fill_mask(subparsers)
    _register_tuned_lens(subparsers)
    _register_nsp(subparsers)
