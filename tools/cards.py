"""What the model cards share (``tools/mlm_card.py``, ``tools/decoder_cards.py``): writing a card and its
curve from an export's metrics file, the bounded curve table, the probes and settings
tables, and the learning curve as a plain SVG (no plotting package; it reads on any Git host)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools.command import read_json

MAX_CURVE_ROWS = 40
GOAL_COLOUR = "#d55e00"


def write_card_files(metrics_path: Path, hint: str, out_dir: Path, names: tuple[str, str],
               card: Callable[[dict, int | None], str], curve: Callable[[list[dict]], str]) -> dict:
    """``card(metrics, weights bytes or None)`` and ``curve(metrics["curve"])`` into ``out_dir`` under
    ``names`` (card, SVG), from the metrics file ``metrics_path`` (its weights beside it); returns the metrics."""
    metrics = read_json(metrics_path, hint)
    weights = metrics_path.with_suffix(".safetensors")
    text = card(metrics, weights.stat().st_size if weights.is_file() else None)
    (out_dir / names[0]).write_text(text, encoding="utf-8")
    (out_dir / names[1]).write_text(curve(metrics.get("curve", [])), encoding="utf-8")
    return metrics


def curve_rows(curve: list[dict]) -> list[dict]:
    """At most about ``MAX_CURVE_ROWS`` evaluations, evenly spaced, the last always among them."""
    if len(curve) <= MAX_CURVE_ROWS:
        return curve
    step = -(-len(curve) // MAX_CURVE_ROWS)
    return curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else [])


def probes_section(probes: list[dict]) -> list[str]:
    lines = ["| | sentence | top 5 |", "|---|---|---|"]
    for probe in probes:
        words = ", ".join(probe["top5"]).replace("|", "\\|")
        lines.append(f"| {'✓' if probe['hit'] else '✗'} | {probe['text']} | {words} |")
    return lines


def file_size(size: int | None) -> str:
    return f"{size / 1e6:.1f} MB" if size else "see the file"


def settings_table(config: dict) -> list[str]:
    return ["| setting | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in config.items()]]


@dataclass(frozen=True)
class Line:
    """One line of a learning curve: (step, value) points, a colour, an SVG dash pattern ("": solid)."""

    points: list[tuple[float, float]]
    colour: str
    dash: str = ""


def curve_svg(lines: list[Line], legend: list[tuple[str, str]], goal: tuple[float, str], low: float = 0.0,
              note: str = "", width: int = 640, height: int = 320) -> str:
    """Values in [low, 1] against training steps as a self-contained SVG (16 px text): a polyline per line
    (a one-point line also gets a dot, else it would not show), a legend of (label, colour), a dashed
    goal line at ``goal[0]`` labelled ``goal[1]``, and an optional ``note`` at the lower right."""
    left, right, top, bottom = 60, 30, 40, 56
    steps = [step for line in lines for step, _ in line.points] or [0]
    span = max(1, max(steps) - min(steps))

    def x(step: float) -> float:
        return left + (step - min(steps)) / span * (width - left - right)

    def y(value: float) -> float:
        return top + (1 - (value - low) / (1 - low)) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             f'font-size="16"><rect width="100%" height="100%" fill="white"/>']
    for i in range(6):
        tick = low + (1 - low) * i / 5
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 8}" y="{y(tick) + 5:.1f}" text-anchor="end">{tick:.0%}</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(goal[0]):.1f}" y2="{y(goal[0]):.1f}" '
                 f'stroke="{GOAL_COLOUR}" stroke-dasharray="6 4"/>')
    for line in lines:
        points = " ".join(f"{x(step):.1f},{y(value):.1f}" for step, value in line.points)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{line.colour}" stroke-width="2.5"'
                     + (f' stroke-dasharray="{line.dash}"' if line.dash else "") + "/>")
        if len(line.points) == 1:
            parts.append(f'<circle cx="{x(line.points[0][0]):.1f}" cy="{y(line.points[0][1]):.1f}" r="4" '
                         f'fill="{line.colour}"/>')
    position = left
    for mark, label, colour in [*(("—", label, colour) for label, colour in legend), ("- -", goal[1], GOAL_COLOUR)]:
        parts.append(f'<text x="{position}" y="24" fill="{colour}">{mark} {label}</text>')
        position += 16 + 9 * len(label)
    if note:
        parts.append(f'<text x="{width - right}" y="{height - bottom - 8}" text-anchor="end" font-size="14">'
                     f'{note}</text>')
    for i in range(5):
        step = min(steps) + span * i / 4
        parts.append(f'<text x="{x(step):.1f}" y="{height - bottom + 22}" text-anchor="middle">{step:,.0f}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 6}" text-anchor="middle">training step'
                 "</text></svg>")
    return "\n".join(parts)
