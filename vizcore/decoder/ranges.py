"""The values the Generate page and ``python -m vizcore generate`` accept: one definition for both.

The page draws its sliders from these (``step`` is the slider's), ``Settings.check`` and the CLI check
against them, and the tests take the page's temperatures from ``TEMPERATURE.values()``. No torch here:
the CLI's parser reads it for every command.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    """The values a control accepts, from ``low`` to ``high``; ``step`` is the page slider's step."""

    low: float
    high: float
    step: float

    def __contains__(self, value: float) -> bool:
        return self.low <= value <= self.high  # False for NaN

    def values(self) -> list[float]:
        """Every value the page's slider offers, ``low`` to ``high`` by ``step``."""
        count = round((self.high - self.low) / self.step)
        return [round(self.low + i * self.step, 10) for i in range(count + 1)]


TEMPERATURE = Range(0.0, 2.0, 0.1)  # 0 = greedy; above 2 the text is noise
TOP_K = Range(0, 100, 1)  # 0 = no limit
TOP_P = Range(0.05, 1.0, 0.05)  # 1 = no limit
SEED = Range(0, 1_000_000, 1)  # torch.Generator gives each seed its own draws
