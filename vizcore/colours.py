"""Every continuous colour scale of the app, one per quantity, and the rule that sets its range.

The plotly figures, the client-side renderer (``static/attention_view.js``, which receives
``Scale.to_payload()`` in its payload) and the HTML fragments all read their colours from here, so a
quantity looks the same on screen, in Compare and in every export.

More is darker everywhere: each sequential scale runs from a light colour at its low end to a dark
one, as attention heatmaps on a white page always have. The scales:

* ``ATTENTION``: attention weights (one head, head means, rollout, [CLS] shares, causal heads). Reversed
  cividis: perceptually uniform and made to look the same to readers with red-green colour blindness
  (Nuñez et al. 2018), light yellow at 0, dark blue at 1. The range is fixed at 0..1, so one colour is
  one weight on every head, page and export and two heads side by side can be compared; the colour
  follows the square root of the weight (``power`` 0.5, the payload's 8-bit code) so a diffuse head at
  512 tokens (weights near 1/512) still shows its pattern instead of fading into the 0 colour. The
  colour bar shows that mapping: its ticks are the weights, its gradient is compressed at the bottom.
* ``ATTENTION_BLOCKS``: the layers x heads overview's block means; the same colours, scaled to the
  largest block mean of all heads (block means of a long input are far below 1).
* ``DIVERGING``: any signed number (differences, Q, K, scores, attributions, recovered shares,
  correlations): ColorBrewer RdBu reversed, red positive, white 0, blue negative; colour-blind safe.
  Centred on 0, ``±`` the largest magnitude unless a figure fixes a natural range (correlation ±1).
* ``PROBABILITY``: probabilities, accuracies and other scores in 0..1: reversed viridis, fixed 0..1.
* ``SEQUENTIAL``: any other unsigned magnitude (head statistics, similarity, counts, positions):
  reversed viridis, from the smallest to the largest value shown.
* ``CHANGE``: how far something moved, or how much a head matters (fine-tuning change, ablation,
  importance): reversed magma, 0 (unchanged) near white, scaled to the largest value.

Categorical colours (segments, entity types, head roles, masking kinds) live with their figures and
always come with a text label or a legend; ``text_colour`` picks readable text for any background.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
from plotly.colors import get_colorscale, sequential

Rule = Literal["fixed", "max", "symmetric", "data"]


def _hex(colour: str) -> str:
    """``#rrggbb`` from ``#rrggbb`` or ``rgb(r, g, b)``."""
    if colour.startswith("#"):
        return colour.lower()
    r, g, b = (int(float(part)) for part in colour[colour.index("(") + 1:colour.index(")")].split(","))
    return f"#{r:02x}{g:02x}{b:02x}"


@dataclass(frozen=True)
class Scale:
    """A colour scale: ``colours`` evenly spaced along its ramp, low to high. A value's fraction ``f`` of the
    range is drawn at ramp position ``f ** power``; ``rule`` sets the range: ``fixed`` (``fixed``), ``max``
    (0 to the largest value), ``symmetric`` (± the largest magnitude), ``data`` (smallest to largest)."""

    quantity: str
    colours: tuple[str, ...]
    rule: Rule
    fixed: tuple[float, float] = (0.0, 1.0)
    power: float = 1.0

    @property
    def colorscale(self) -> list[list]:
        """Plotly's ``[[value fraction, colour], ...]``: stop i at ``(i / (k - 1)) ** (1 / power)``."""
        last = len(self.colours) - 1
        return [[round((i / last) ** (1 / self.power), 8), colour] for i, colour in enumerate(self.colours)]

    def zrange(self, values: np.ndarray | None = None) -> tuple[float, float]:
        """The range this scale's rule gives ``values`` (never empty: a constant gets width 1)."""
        if self.rule == "fixed" or values is None:
            return self.fixed
        finite = np.asarray(values, dtype=np.float64)
        finite = finite[np.isfinite(finite)]
        if finite.size == 0:
            return self.fixed
        if self.rule == "symmetric":
            bound = float(np.abs(finite).max()) or 1.0
            return -bound, bound
        high = float(finite.max())
        low = 0.0 if self.rule == "max" else float(finite.min())
        return low, high if high > low else low + 1.0

    def colour_at(self, value: float, zrange: tuple[float, float]) -> str:
        """The ``#rrggbb`` plotly draws for ``value`` on ``zrange``."""
        return colour_at(self.colorscale, value, zrange)

    def to_payload(self, zrange: tuple[float, float] | None = None) -> dict:
        """What the client-side renderer needs to draw this scale and its legend."""
        low, high = zrange or self.fixed
        return {"quantity": self.quantity, "stops": self.colorscale, "power": self.power, "range": [low, high]}


def _rgb(colour: str) -> tuple[int, int, int]:
    colour = _hex(colour)
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def colour_at(colorscale: Sequence[Sequence], value: float, zrange: tuple[float, float]) -> str:
    """The ``#rrggbb`` of ``value`` on any plotly ``colorscale`` spanning ``zrange``: linear RGB between its
    stops, as plotly (and the renderer) draw it."""
    low, high = zrange
    fraction = float(np.clip((value - low) / (high - low), 0.0, 1.0)) if high > low else 0.0
    for (left, a), (right, b) in zip(colorscale, colorscale[1:]):
        if fraction <= right:
            t = (fraction - left) / (right - left) if right > left else 0.0
            mixed = [round(x + (y - x) * t) for x, y in zip(_rgb(a), _rgb(b))]
            return "#" + "".join(f"{c:02x}" for c in mixed)
    return _hex(colorscale[-1][1])


def _ramp(colours: Sequence[str], count: int) -> tuple[str, ...]:
    """``count`` colours evenly along the ramp through ``colours`` (linear RGB between them)."""
    evenly = [[i / (len(colours) - 1), _hex(c)] for i, c in enumerate(colours)]
    return tuple(colour_at(evenly, i / (count - 1), (0.0, 1.0)) for i in range(count))


# 33 stops: under the square root the first ones sit at weights 1/1024, 1/256, ...; with cividis's own 10 the
# first would be at 1/81, and plotly's straight lines between stops would wash out weights near 1/512.
_CIVIDIS_R = _ramp(list(reversed(sequential.Cividis)), 33)
_VIRIDIS_R = tuple(_hex(c) for c in reversed(sequential.Viridis))
_MAGMA_R = tuple(_hex(c) for c in reversed(sequential.Magma))
_RDBU_R = tuple(_hex(c) for _, c in get_colorscale("RdBu_r"))

ATTENTION = Scale("attention weight", _CIVIDIS_R, "fixed", (0.0, 1.0), power=0.5)
ATTENTION_BLOCKS = Scale("mean weight", _CIVIDIS_R, "max", power=0.5)
DIVERGING = Scale("value", _RDBU_R, "symmetric", (-1.0, 1.0))
PROBABILITY = Scale("probability", _VIRIDIS_R, "fixed", (0.0, 1.0))
SEQUENTIAL = Scale("value", _VIRIDIS_R, "data")
CHANGE = Scale("change", _MAGMA_R, "max")

SCALES = {"attention": ATTENTION, "attention blocks": ATTENTION_BLOCKS, "diverging": DIVERGING,
          "probability": PROBABILITY, "sequential": SEQUENTIAL, "change": CHANGE}


# ---- readable text on a coloured background (WCAG 2.x contrast) -------------------------------------

DARK_TEXT, LIGHT_TEXT = "#000000", "#ffffff"  # one of the two reaches 4.58:1 on any colour


def relative_luminance(colour: str) -> float:
    """WCAG relative luminance of a colour (``#rrggbb`` or ``rgb(...)``)."""
    channels = [c / 255 for c in _rgb(colour)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: str, second: str) -> float:
    """WCAG contrast ratio, 1 (none) to 21 (black on white)."""
    a, b = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def text_colour(background: str) -> str:
    """Black or white, whichever reads better on ``background`` (at least 4.58:1, WCAG AA for text)."""
    dark, light = contrast_ratio(background, DARK_TEXT), contrast_ratio(background, LIGHT_TEXT)
    return DARK_TEXT if dark >= light else LIGHT_TEXT
