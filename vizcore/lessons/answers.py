"""A question's right answer, computed from the step's view (``vizcore.lessons.view.View``), never written in the
lesson file. Each function takes the view and the question's parameters and returns the choices offered, the
right one and the reason, a sentence with the model's number in it.

* ``largest`` / ``smallest`` (``series``): the entry of a series with the largest (smallest) value; the choices
  are it, the next two and the opposite end.
* ``closest`` (``number``, ``options``): the option nearest a number (d_k, a measured share).
* ``below`` (``number``, ``limit``, ``yes``, ``no``): ``yes`` when the number is below the limit, else ``no``.
* ``concept`` (``choices``, ``right``, ``why``): a conceptual choice that no number of the model decides (why
  sinusoids, why 15 %); the only kind whose answer is written in the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from vizcore.errors import VizError
from vizcore.lessons.view import View


@dataclass(frozen=True)
class Answer:
    choices: list[str]
    right: str
    reason: str

    def verdict(self, chosen: str) -> bool:
        return chosen == self.right


def _series(view: View, params: Mapping):
    name = params["series"]
    if name not in view.series:
        raise VizError(f"This step's view has no series '{name}' to ask about.")
    return view.series[name]


def _number(view: View, params: Mapping):
    name = params["number"]
    if name not in view.numbers:
        raise VizError(f"This step's view has no number '{name}' to ask about.")
    return view.numbers[name]


def _ranked(view: View, params: Mapping, order: np.ndarray) -> Answer:
    series = _series(view, params)
    picks = [int(order[0])] + [int(i) for i in order[1:3]] + ([int(order[-1])] if len(order) > 3 else [])
    picks = list(dict.fromkeys(picks))
    choices = sorted((series.labels[i] for i in picks), key=series.labels.index)  # in the series' order
    return Answer(choices=choices, right=series.labels[picks[0]], reason=series.about(picks[0]))


def largest(view: View, params: Mapping) -> Answer:
    values = np.asarray(_series(view, params).values, dtype=np.float64)
    return _ranked(view, params, np.argsort(-values, kind="stable"))


def smallest(view: View, params: Mapping) -> Answer:
    values = np.asarray(_series(view, params).values, dtype=np.float64)
    return _ranked(view, params, np.argsort(values, kind="stable"))


def closest(view: View, params: Mapping) -> Answer:
    number = _number(view, params)
    options = [float(o) for o in params["options"]]
    best = min(range(len(options)), key=lambda i: abs(options[i] - number.value))
    choices = [f"{o:g}" for o in options]
    return Answer(choices=choices, right=choices[best], reason=number.about())


def below(view: View, params: Mapping) -> Answer:
    number = _number(view, params)
    right = params["yes"] if number.value < float(params["limit"]) else params["no"]
    return Answer(choices=[params["yes"], params["no"]], right=right, reason=number.about())


def concept(view: View, params: Mapping) -> Answer:
    return Answer(choices=list(params["choices"]), right=params["right"], reason=params["why"])


ANSWERS: dict[str, Callable[[View, Mapping], Answer]] = {
    "largest": largest, "smallest": smallest, "closest": closest, "below": below, "concept": concept}
# What a question using each function must set in the lesson file (besides ``text`` and ``answer``).
REQUIRED: dict[str, tuple[str, ...]] = {
    "largest": ("series",), "smallest": ("series",), "closest": ("number", "options"),
    "below": ("number", "limit", "yes", "no"), "concept": ("choices", "right", "why")}
