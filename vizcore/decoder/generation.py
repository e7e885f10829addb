"""Generate one token at a time: each step the model's next-token distribution, shaped, then a choice.

``generate`` records every step: the token chosen and the distribution it was drawn from (after the
never-drawn tokens are removed, ``vizcore.decoder.vocabulary``, then temperature / top-k / top-p,
``vizcore.decoder.sampling``), best first. With a seed, sampling is
reproducible; temperature 0 is greedy. Each step reruns the model on the whole sequence (no key/value
cache): prompts here are short, and every step's record comes from the same one forward core.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vizcore.decoder.ranges import SEED
from vizcore.decoder.sampling import Settings, draw, shape
from vizcore.decoder.vocabulary import banned_tokens, stop_ids
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel
from vizcore.model.run import check_text, model_inputs
from vizcore.model.run import forward as core_forward

MAX_NEW_TOKENS = 200
DEFAULT_SETTINGS = Settings()  # temperature 1, no top-k, no top-p: the model's own distribution


@dataclass(frozen=True)
class Step:
    token_id: int
    token: str  # decoded, as it reads in the text
    # (token, id, probability), best first, of the distribution the token came from: the shaped one; when
    # greedy, the model's own (the arg-max of a one-hot would tell nothing)
    top: list[tuple[str, int, float]]

    def to_dict(self) -> dict:
        return {"token": self.token, "token_id": self.token_id,
                "top": [{"token": t, "score": p} for t, _, p in self.top]}


@dataclass(frozen=True)
class Generation:
    model: str
    prompt_tokens: list[str]
    steps: list[Step]
    text: str  # the prompt and the generated tokens, decoded

    def to_dict(self) -> dict:
        return {"model": self.model, "prompt_tokens": list(self.prompt_tokens),
                "steps": [s.to_dict() for s in self.steps], "text": self.text}


def prompt_ids(loaded: LoadedModel, prompt: str) -> torch.Tensor:
    """The prompt's token ids (1, T) as the model reads a text's start: with the tokenizer's leading
    special tokens (BERT's [CLS], which the causal-tuned MiniLM was trained to start from; GPT-2 adds
    none) but no closing one ([SEP], end of sequence). VizError when empty or too long."""
    check_text(prompt, "prompt")
    encoding = loaded.tokenizer(prompt, return_special_tokens_mask=True, verbose=False)
    ids, special = list(encoding["input_ids"]), list(encoding["special_tokens_mask"])
    while ids and special[-1]:
        ids.pop()
        special.pop()
    if not any(not s for s in special):
        raise VizError("The prompt produced no tokens for this model: type a few words.")
    if len(ids) >= loaded.max_length:
        raise VizError(f"The prompt has {len(ids):,} tokens; this model reads at most {loaded.max_length:,}, "
                       "and generation needs room for new ones. Shorten it.")
    return torch.tensor([ids])


MAX_SEED = int(SEED.high)


def check_seed(seed: int) -> int:
    if not 0 <= seed <= MAX_SEED:
        raise VizError(f"The seed must be a whole number from 0 to {MAX_SEED:,}, not {seed}.")
    return seed


def check_new_tokens(count: int) -> int:
    if not 1 <= count <= MAX_NEW_TOKENS:
        raise VizError(f"The number of new tokens must be between 1 and {MAX_NEW_TOKENS}, not {count}.")
    return count


def next_token_logits(loaded: LoadedModel, ids: torch.Tensor) -> torch.Tensor:
    """Logits [V] for the token after ``ids`` (1, T)."""
    encoding = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    output = core_forward(loaded, model_inputs(loaded, encoding), hidden=False, attention=False)
    if getattr(output, "logits", None) is None:
        raise VizError(f"'{loaded.name}' gives no next-token logits: load it with its causal-LM head.")
    return output.logits[0, -1]


def generate(loaded: LoadedModel, prompt: str, max_new_tokens: int = 20, settings: Settings = DEFAULT_SETTINGS,
             seed: int = 0, top: int = 5) -> Generation:
    """Up to ``max_new_tokens`` tokens after ``prompt`` (stopping at the end-of-sequence token)."""
    check_new_tokens(max_new_tokens)
    settings.check()
    ids = prompt_ids(loaded, prompt)
    room = loaded.max_length - ids.shape[1]
    generator = torch.Generator().manual_seed(check_seed(seed))
    stop = stop_ids(loaded.tokenizer)
    banned = banned_tokens(loaded).mask(settings.whole_words)
    which = "plain" if settings.greedy else "shaped"
    steps = []
    for _ in range(min(max_new_tokens, room)):
        shaped = shape(next_token_logits(loaded, ids), settings, banned)
        token_id = draw(shaped, generator)
        steps.append(Step(token_id=token_id, token=loaded.tokenizer.decode([token_id]),
                          top=[(loaded.tokenizer.decode([i]), i, p) for i, p in shaped.top(top, which) if p > 0]))
        ids = torch.cat([ids, torch.tensor([[token_id]], device=ids.device)], dim=1)
        if token_id in stop:
            break
    prompt_length = int(ids.shape[1]) - len(steps)
    return Generation(model=loaded.name,
                      prompt_tokens=loaded.tokenizer.convert_ids_to_tokens(ids[0, :prompt_length].tolist()),
                      steps=steps, text=loaded.tokenizer.decode(ids[0].tolist(), skip_special_tokens=True))
