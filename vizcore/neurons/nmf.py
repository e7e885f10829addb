"""Non-negative factors of a sentence's feed-forward activations, as Ecco draws them (Alammar 2021), after Olah et
al. (2018)'s "The Building Blocks of Interpretability".

The matrix is tokens x neurons (one layer's d_ff, or every layer's side by side), clipped at 0 as Ecco does:
GELU's outputs go down to about -0.17 and NMF needs non-negative input. It is factorised as A ~ W H with W
``[T, F]`` (each factor's strength at each token: what is drawn) and H ``[F, neurons]`` (which neurons make
up each factor), by Lee & Seung (2001)'s multiplicative updates for the Frobenius norm, from a seeded random
start: the error never increases from one update to the next, and the same seed gives the same factors.
Ecco calls scikit-learn's NMF (coordinate descent, random init, seed 0, 500 iterations); the updates here are
the textbook ones, in numpy, from another start, so the factors resemble Ecco's without being equal to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vizcore.errors import VizError

MAX_FACTORS = 20
ITERATIONS = 500
TINY = 1e-12  # keeps the updates' denominators away from 0


@dataclass(frozen=True)
class Factorisation:
    strengths: np.ndarray  # float64 [T, F]: W
    components: np.ndarray  # float64 [F, N]: H
    errors: np.ndarray  # float64 [iterations + 1]: ||A - W H||_F before the first update and after each


def nmf(matrix: np.ndarray, factors: int, iterations: int = ITERATIONS, seed: int = 0) -> Factorisation:
    """``matrix`` ``[T, N]`` non-negative ~ W ``[T, F]`` H ``[F, N]`` (Lee & Seung's multiplicative updates)."""
    a = np.asarray(matrix, dtype=np.float64)
    if a.ndim != 2 or a.size == 0:
        raise VizError(f"NMF needs a non-empty matrix (tokens x neurons), not shape {a.shape}.")
    if (a < 0).any():
        raise VizError("NMF needs non-negative values: clip the activations at 0 first.")
    if not 1 <= factors <= min(MAX_FACTORS, *a.shape):
        raise VizError(f"The number of factors must be from 1 to {min(MAX_FACTORS, *a.shape)} (at most the number "
                       f"of tokens), not {factors}.")
    rng = np.random.default_rng(seed)
    scale = np.sqrt(a.mean() / factors)  # the scale of scikit-learn's random init
    w = scale * rng.random((a.shape[0], factors))
    h = scale * rng.random((factors, a.shape[1]))
    errors = [np.linalg.norm(a - w @ h)]
    for _ in range(iterations):
        h *= (w.T @ a) / (w.T @ w @ h + TINY)
        w *= (a @ h.T) / (w @ (h @ h.T) + TINY)
        errors.append(np.linalg.norm(a - w @ h))
    return Factorisation(w, h, np.asarray(errors))
