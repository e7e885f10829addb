"""``python -m vizcore generate --prompt TEXT [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P]
[--seed S] [--model M] --format json``: a causal LM's continuation, one token at a time.

Prints ``{"model", "prompt_tokens", "steps": [{"token", "token_id", "top": [{"token", "score"}, ...]}, ...],
"text", "settings"}``. A step's ``top`` is the distribution its token was drawn from, after temperature,
top-k and top-p, best first; temperature 0 is greedy (the arg-max), and then ``top`` is the model's own
next-token distribution, so ``--max-new-tokens 1 --temperature 0`` gives the prompt's next-token
distribution. The default model is the offline causal LM trained in this repo.
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.model.catalog import CAUSAL_MODEL


def _generate(args: argparse.Namespace) -> dict:
    from vizcore.decoder.generation import MAX_NEW_TOKENS, check_seed, generate
    from vizcore.decoder.sampling import Settings
    from vizcore.errors import VizError
    from vizcore.model.loading import load_model
    from vizcore.model.run import check_text

    # Everything that needs no model is checked before spending seconds on loading one.
    check_text(args.prompt, "prompt")
    settings = Settings(args.temperature, args.top_k, args.top_p).check()
    check_seed(args.seed)
    if not 1 <= args.max_new_tokens <= MAX_NEW_TOKENS:
        raise VizError(f"--max-new-tokens must be between 1 and {MAX_NEW_TOKENS}, not {args.max_new_tokens}.")
    if not 1 <= args.top <= 100:
        raise VizError(f"--top must be between 1 and 100, not {args.top}.")
    loaded = load_model(args.model, device=args.device, head="causal-lm")
    result = generate(loaded, args.prompt, args.max_new_tokens, settings, seed=args.seed, top=args.top)
    return {**result.to_dict(), "device": str(loaded.device),
            "settings": {"temperature": settings.temperature, "top_k": settings.top_k, "top_p": settings.top_p,
                         "seed": args.seed, "max_new_tokens": args.max_new_tokens}}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate", help="continue a prompt with a causal LM, one token at a time (each step's top tokens)")
    parser.add_argument("--prompt", required=True, help='the start of a text, e.g. "She opened the"')
    parser.add_argument("--max-new-tokens", type=int, default=20, help="at most this many new tokens "
                        "(default: %(default)s; generation stops earlier at the end-of-text token)")
    parser.add_argument("--temperature", type=float, default=1.0,
                        help="below 1 sharpens the distribution, above 1 flattens it, 0 = greedy "
                        "(default: %(default)s)")
    parser.add_argument("--top-k", type=int, default=0, help="keep only the k most probable tokens (0 = all; "
                        "default: %(default)s)")
    parser.add_argument("--top-p", type=float, default=1.0, help="keep the most probable tokens whose probabilities "
                        "first add up to p (1 = all; default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws: the same seed, the same text "
                        "(default: %(default)s)")
    parser.add_argument("--top", type=int, default=5, help="tokens listed per step (default: %(default)s)")
    add_model_options(parser, default=CAUSAL_MODEL)
    add_format_option(parser)
    parser.set_defaults(handler=_generate)
