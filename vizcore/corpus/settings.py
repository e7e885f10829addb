"""What a corpus job is asked to do: the command line's settings, checked. No torch here, so the CLI starts fast
and refuses a bad setting or input at once."""

from __future__ import annotations

from dataclasses import dataclass

from vizcore.errors import VizError

ENGINES = ("local", "ray")
DEFAULT_SHARD = 1024
MAX_BATCH = 256
MAX_NEURON_TOP = 100


@dataclass(frozen=True)
class Settings:
    input: str
    out: str
    engine: str = "local"
    model: str = "all-MiniLM-L6-v2"
    device: str = "auto"
    syntax: bool = False
    batch_size: int = 32
    shard_size: int = DEFAULT_SHARD
    text_column: str | None = None
    ray_address: str | None = None
    workers: int = 2  # Ray actors (one model each)
    neurons: int = 0  # the top-k activations kept per feed-forward neuron (0: none)

    def validate(self) -> Settings:
        if self.engine not in ENGINES:
            raise VizError(f"Unknown engine '{self.engine}': choose {' or '.join(ENGINES)}.")
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise VizError(f"The batch size must be between 1 and {MAX_BATCH}; got {self.batch_size}.")
        if self.shard_size < 1 or self.workers < 1:
            raise VizError("The shard size and the number of Ray workers must be at least 1.")
        if not 0 <= self.neurons <= MAX_NEURON_TOP:
            raise VizError(f"--neurons (the examples kept per neuron) must be from 0 to {MAX_NEURON_TOP}; "
                           f"got {self.neurons}.")
        if self.ray_address and self.engine != "ray":
            raise VizError("--ray-address is for --engine ray: add --engine ray, or leave the address out.")
        return self
