"""``python -m vizcore generate --prompt TEXT [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P]
[--seed S] [--whole-words] [--samples K] [--model M] --format json``: a causal LM's continuation, one token
at a time.

Prints ``{"model", "prompt_tokens", "steps": [{"token", "token_id", "top": [{"token", "score"}, ...]}, ...],
"text", "settings"}``. A step's ``top`` is the distribution its token was drawn from, after temperature,
top-k and top-p, best first; temperature 0 is greedy (the arg-max), and then ``top`` is the model's own
next-token distribution, so ``--max-new-tokens 1 --temperature 0`` gives the prompt's next-token
distribution. Tokens the model was never trained to produce (``[unusedN]``, ``[PAD]``, ``[CLS]``,
``[MASK]``, ``[UNK]``) are never drawn and have score 0. ``--samples K`` prints K continuations instead,
seeds S to S+K-1, drawn as one batch: ``{"model", "prompt_tokens", "samples": [{"seed", "token_ids",
"text"}, ...], "settings"}``. The options accept the Generate page's ranges (``vizcore.decoder.ranges``).
The default model is the offline causal LM trained in this repo.
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.decoder.ranges import SEED, TEMPERATURE, TOP_K, TOP_P
from vizcore.model.catalog import CAUSAL_MODEL
from vizcore.text import check_text  # no torch: bad text is refused in a fraction of a second

MAX_SAMPLES = 100


def _generate(args: argparse.Namespace) -> dict:
    check_text(args.prompt, "prompt")  # before spending seconds on importing torch
    from vizcore.decoder.generation import MAX_NEW_TOKENS, check_seed, generate
    from vizcore.decoder.sampling import Settings
    from vizcore.errors import VizError
    from vizcore.model.loading import load_model

    # Everything that needs no model is checked before spending seconds on loading one.
    settings = Settings(args.temperature, args.top_k, args.top_p, args.whole_words).check()
    check_seed(args.seed)
    if not 1 <= args.max_new_tokens <= MAX_NEW_TOKENS:
        raise VizError(f"--max-new-tokens must be between 1 and {MAX_NEW_TOKENS}, not {args.max_new_tokens}.")
    if not 1 <= args.top <= 100:
        raise VizError(f"--top must be between 1 and 100, not {args.top}.")
    if args.samples is not None:
        if not 1 <= args.samples <= MAX_SAMPLES:
            raise VizError(f"--samples must be between 1 and {MAX_SAMPLES}, not {args.samples}.")
        check_seed(args.seed + args.samples - 1)
    loaded = load_model(args.model, device=args.device, head="causal-lm")
    used = {"temperature": settings.temperature, "top_k": settings.top_k, "top_p": settings.top_p,
            "whole_words": settings.whole_words, "seed": args.seed, "max_new_tokens": args.max_new_tokens}
    if args.samples is not None:
        return {**_samples(loaded, args, settings), "device": str(loaded.device), "settings": used}
    result = generate(loaded, args.prompt, args.max_new_tokens, settings, seed=args.seed, top=args.top)
    return {**result.to_dict(), "device": str(loaded.device), "settings": used}


def _samples(loaded, args: argparse.Namespace, settings) -> dict:
    from vizcore.decoder.generation import prompt_ids
    from vizcore.decoder.samples import sample_rows

    rows = [(settings, args.seed + i) for i in range(args.samples)]
    samples = sample_rows(loaded, args.prompt, rows, args.max_new_tokens)
    return {"model": loaded.name,
            "prompt_tokens": loaded.tokenizer.convert_ids_to_tokens(prompt_ids(loaded, args.prompt)[0].tolist()),
            "samples": [s.to_dict() for s in samples]}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate", help="continue a prompt with a causal LM, one token at a time (each step's top tokens)")
    parser.add_argument("--prompt", required=True, help='the start of a text, e.g. "She opened the"')
    parser.add_argument("--max-new-tokens", type=int, default=20, help="at most this many new tokens "
                        "(default: %(default)s; generation stops earlier at the end-of-text token)")
    parser.add_argument("--temperature", type=float, default=1.0,
                        help=f"{TEMPERATURE.low:g} to {TEMPERATURE.high:g}: below 1 sharpens the distribution, "
                        "above 1 flattens it, 0 = greedy (default: %(default)s)")
    parser.add_argument("--top-k", type=int, default=0, help=f"keep only the k most probable tokens, {TOP_K.low:g} "
                        f"to {TOP_K.high:g} (0 = all; default: %(default)s)")
    parser.add_argument("--top-p", type=float, default=1.0, help="keep the most probable tokens whose probabilities "
                        f"first add up to p, {TOP_P.low:g} to {TOP_P.high:g} (1 = all; default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help=f"seed of the draws, {SEED.low:g} to {SEED.high:,.0f}: "
                        "the same seed, the same text (default: %(default)s)")
    parser.add_argument("--whole-words", action="store_true",
                        help="never draw a word piece that would glue onto the previous word (##ing, or a GPT-2 "
                        "token without its leading space)")
    parser.add_argument("--samples", type=int, default=None,
                        help=f"print this many continuations (1 to {MAX_SAMPLES}; seeds SEED, SEED+1, ...), their "
                        "text and token ids only, instead of one continuation step by step")
    parser.add_argument("--top", type=int, default=5, help="tokens listed per step (default: %(default)s)")
    add_model_options(parser, default=CAUSAL_MODEL)
    add_format_option(parser)
    parser.set_defaults(handler=_generate)
