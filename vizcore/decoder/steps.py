"""What one generation step shows: the next-token distribution, where the newest token looks, the causal
mask, and the logit lens, all from one forward pass of the sequence so far (prompt + generated tokens).

The pass goes through the one forward core (``vizcore.model.run.forward``, as ``next_token_logits``
does) with attention and hidden states. ``run()`` itself reads text, and a generated sequence must be
read as the ids it is: decoding and re-tokenising can split words differently, and BERT's tokenizer
would close the text with [SEP], which would then be the "newest" token.

Shapes: T tokens so far, L layers, H heads, L1 = L + 1 hidden states (0 = embeddings), V vocabulary.
The logit lens reads each hidden state at the last position through the model's own head: for
``BertLMHeadModel`` ``model.cls`` (post-norm: every state is already normalised), for GPT-2 ``ln_f`` then
``lm_head`` (its last hidden state is already ``ln_f``'s output). Its last row is the model's own
logits, which the head must reproduce from the last hidden state (checked on every call, to float32
rounding): a model whose head cannot be separated gets no lens, and a note. The tokens generation never
draws (``vizcore.decoder.vocabulary``) get probability 0 in the distribution and in every row of the
lens, so the lens still ends exactly where the bars are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from vizcore.decoder.generation import DEFAULT_SETTINGS, prompt_ids
from vizcore.decoder.sampling import Settings, Shaped, allowed_logits, shape
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model.loading import LoadedModel
from vizcore.model.run import forward

LENS_TOLERANCE = 1e-4  # the lens's last row against the model's logits (float32 rounding of one matmul)


@dataclass(frozen=True)
class Lens:
    """The top ``k`` next tokens read off each hidden state at the last position."""

    token_ids: np.ndarray  # int [L1, k]
    tokens: list[list[str]]  # [L1][k], decoded
    probs: np.ndarray  # float32 [L1, k]
    final_token_probs: np.ndarray  # float32 [L1]: each layer's probability of the model's own top-1 token

    @property
    def num_rows(self) -> int:
        return int(self.probs.shape[0])


@dataclass(frozen=True)
class StepView:
    model: str
    token_ids: list[int]  # [T]: the prompt as the model reads it, then the generated tokens
    tokens: list[str]  # [T], the tokenizer's tokens
    prompt_length: int
    next: Shaped  # the next-token distribution, plain and shaped by ``settings``
    settings: Settings
    attention: np.ndarray  # float32 [L, H, T, T]; a causal LM's row q is zero at every key after q
    lens: Lens | None
    lens_note: str  # why there is no lens, when there is none

    @property
    def newest_attention(self) -> np.ndarray:
        """float32 [L, H, T]: the newest token's attention over the sequence so far (itself included)."""
        return self.attention[:, :, -1, :]


@dataclass(frozen=True)
class Candidates:
    """The ``N`` most probable next tokens by the model's own probability, best first: the order in which
    temperature keeps them and top-k / top-p cut them, so the kept ones come first."""

    token_ids: np.ndarray  # int [N]
    tokens: list[str]  # [N], decoded as they read in the text
    plain: np.ndarray  # float64 [N]: softmax of the logits
    shaped: np.ndarray  # float64 [N]: after temperature, top-k and top-p (0 = cut)
    kept: int  # tokens of the whole vocabulary that survive the cut; the cut-off falls after this many
    drawn: int | None  # the token chosen next (token id), when known
    drawn_rank: int | None  # its 0-based rank by plain probability (it may lie beyond the N shown)


def sequence_ids(loaded: LoadedModel, prompt: str, generated: Sequence[int] = ()) -> tuple[torch.Tensor, int]:
    """``(ids (1, T), prompt length)``: the prompt as ``generate`` reads it, then ``generated``."""
    ids = prompt_ids(loaded, prompt)
    length = int(ids.shape[1])
    if generated:
        ids = torch.cat([ids, torch.tensor([list(generated)], dtype=ids.dtype)], dim=1)
    if ids.shape[1] > loaded.max_length:
        raise VizError(f"The sequence has {ids.shape[1]:,} tokens; this model reads at most {loaded.max_length:,}.")
    return ids, length


def step_view(loaded: LoadedModel, prompt: str, generated: Sequence[int] = (), settings: Settings = DEFAULT_SETTINGS,
              lens_top: int = 5) -> StepView:
    """One forward pass of ``prompt`` + ``generated``: everything a generation step shows."""
    ids, prompt_length = sequence_ids(loaded, prompt, generated)
    inputs = {"input_ids": ids.to(loaded.device), "attention_mask": torch.ones_like(ids).to(loaded.device)}
    output = forward(loaded, inputs, hidden=True, attention=True)
    logits = getattr(output, "logits", None)
    if logits is None:
        raise VizError(f"'{loaded.name}' gives no next-token logits: load it with its causal-LM head.")
    banned = banned_tokens(loaded).mask(settings.whole_words)
    lens, note = logit_lens(loaded, output.hidden_states, logits[0, -1], lens_top, banned)
    token_ids = ids[0].tolist()
    return StepView(
        model=loaded.name, token_ids=token_ids, tokens=loaded.tokenizer.convert_ids_to_tokens(token_ids),
        prompt_length=prompt_length, next=shape(logits[0, -1], settings, banned), settings=settings,
        attention=torch.stack([a[0] for a in output.attentions]).float().cpu().numpy(), lens=lens, lens_note=note)


def lens_parts(loaded: LoadedModel) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.nn.Module | None] | None:
    """(the vocabulary head, the final norm of a pre-norm model or None), or None when not known."""
    model = loaded.model
    head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
    try:
        final_norm = archs.arch_of(model).final_norm
    except VizError:
        return None
    if head is None:
        return None
    return head, archs.get(model.base_model, final_norm) if final_norm else None


def logit_lens(loaded: LoadedModel, hidden_states: Sequence[torch.Tensor], logits: torch.Tensor,
               top: int, banned: torch.Tensor | None = None) -> tuple[Lens | None, str]:
    """Each hidden state (L1 of (1, T, d)) at the last position through the model's head; ``logits`` [V];
    ``banned`` (bool [V]): tokens given probability 0 in every row, as in the next-token distribution."""
    parts = lens_parts(loaded)
    no_lens = (f"The layer-by-layer view needs the vocabulary head of {type(loaded.model).__name__} to reproduce "
               "its logits from the last hidden state; it does not here, so the view is not shown.")
    if parts is None or not hidden_states:
        return None, no_lens
    head, final_norm = parts
    with torch.inference_mode():
        states = torch.stack([h[0, -1] for h in hidden_states])  # (L1, d)
        if final_norm is not None:  # the last state is the norm's output already
            states = torch.cat([final_norm(states[:-1]), states[-1:]])
        lens_logits = head(states).float()  # (L1, V)
    if not torch.allclose(lens_logits[-1], logits.float(), atol=LENS_TOLERANCE, rtol=0):
        return None, no_lens
    # The last row is the model's output itself: the head on one position rounds differently (~1e-6)
    # from the head on the whole sequence, and the lens must end exactly where the bars are.
    probs = allowed_logits(torch.cat([lens_logits[:-1], logits.float()[None]]), banned).float().softmax(-1)
    values, ids = probs.topk(min(top, probs.shape[-1]), dim=-1)  # (L1, k)
    decode = loaded.tokenizer.decode
    return Lens(token_ids=ids.cpu().numpy(), tokens=[[decode([i]) for i in row] for row in ids.tolist()],
                probs=values.cpu().numpy(), final_token_probs=probs[:, int(ids[-1, 0])].cpu().numpy()), ""


def candidates(loaded: LoadedModel, view: StepView, count: int = 20, drawn: int | None = None) -> Candidates:
    """The ``count`` most probable next tokens of ``view``, plain and shaped."""
    plain = view.next.plain
    order = np.argsort(-plain, kind="stable")[:count]
    rank = None if drawn is None else int((plain > plain[drawn]).sum())
    return Candidates(token_ids=order.astype(np.int64),
                      tokens=[loaded.tokenizer.decode([int(i)]) for i in order],
                      plain=plain[order], shaped=view.next.shaped[order],
                      kept=int(view.next.kept.sum()), drawn=drawn, drawn_rank=rank)
