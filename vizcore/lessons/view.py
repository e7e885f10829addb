"""What a step kind computes for one step: its figures and the numbers a question can be asked about."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Series:
    """A labelled vector (one value per token, head, component ...). ``says``: a sentence about one entry, with
    ``{label}`` and ``{value}`` (e.g. "'{label}' gets {value:.2f} of the query's attention")."""

    labels: list[str]
    values: np.ndarray  # float [n]
    says: str

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.values) or len(set(self.labels)) != len(self.labels):
            raise ValueError("a series needs one unique label per value")

    def about(self, index: int) -> str:
        return self.says.format(label=self.labels[index], value=float(self.values[index]))


@dataclass(frozen=True)
class Number:
    """One number and a sentence about it, with ``{value}``."""

    value: float
    says: str

    def about(self) -> str:
        return self.says.format(value=self.value)


@dataclass(frozen=True)
class View:
    """One step's live view: figures (plotly or altair objects, or ``vizcore.plot.HtmlFigure``, not displayed here),
    a caption in markdown, and
    the named series and numbers its question may read."""

    figures: list[Any]
    caption: str = ""
    series: dict[str, Series] = field(default_factory=dict)
    numbers: dict[str, Number] = field(default_factory=dict)
