"""A plain-Python PA-I with opal's semantics: the reference every jkern.pa mode is tested against.

Examples are dicts `{feature: value}`, labels ±1, visited in file order every epoch.

- margin: kernel mode m = Σ_s α_s (1 + s·x)^d over the support vectors in the order they were
  added; linear mode m = Σ_f w_f x_f (no bias).
- update iff y·m <= 1 + TIE_EPS (opal: y·m <= 1; the ε keeps summation order from flipping
  a tie between modes).
- step τ = min(C, max(0, 1 − y·m) / |x|), |x| = Σ_f x_f² (the number of active features for
  binary vectors; opal's rule, in kernel mode too); `step="textbook"` divides by K(x, x)
  = (1 + |x|)^d instead (linear mode: |x|). An empty vector steps by C when 1 − y·m > 0.
- the update adds y·τ to the weight of the support vector equal to x (identical vectors share
  one support vector; a new one is appended), or y·τ·x to w in linear mode.

`exact=True` (binary vectors): weights are Python ints counting 2^-32, margins exact integer
sums, the rule y·m <= 1 + ε evaluated exactly (y·m <= 2^32 + floor(ε·2^32) counts),
Δα = y·round(τ·2^32) with τ computed in floats from the exact margin — jkern's exact mode,
which every mode must match bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

TIE_EPS = 1e-9
SCALE = 2**32


@dataclass
class ReferenceRun:
    support: list[tuple[tuple[int, float], ...]] = field(default_factory=list)
    alpha: list[float] = field(default_factory=list)  # floats (exact: ints / SCALE)
    w: dict[int, float] = field(default_factory=dict)
    margins: list[float] = field(default_factory=list)  # one per visit
    updated: list[bool] = field(default_factory=list)  # one per visit


def pa_reference(X: Sequence[Mapping[int, float]], y: Sequence[int], *, degree: int = 2,
                 C: float = 1.0, epochs: int = 10, mode: str = "kernel",
                 step: str = "opal", exact: bool = False,
                 orders: Sequence[Sequence[int]] | None = None,
                 average: bool = False) -> ReferenceRun:
    """`orders[e]`: the examples visited in epoch e (default file order); `average`: the
    returned weights are the mean of the weights after every visit (summed naively)."""
    assert mode in ("kernel", "linear") and step in ("opal", "textbook")
    if exact:
        assert all(v == 1 for x in X for v in x.values()), "exact mode needs binary vectors"
    run = ReferenceRun()
    slot: dict[tuple[tuple[int, float], ...], int] = {}
    alpha_q: list[int] = []
    w_q: dict[int, int] = {}
    sum_alpha: list[float] = []
    sum_w: dict[int, float] = {}
    visits = 0
    for epoch in range(epochs):
        order = range(len(X)) if orders is None else orders[epoch]
        for i in order:
            x, yt = X[i], y[i]
            if average and visits:  # the model after the previous visit
                current = [a / SCALE for a in alpha_q] if exact else run.alpha
                sum_alpha += [0.0] * (len(current) - len(sum_alpha))
                for k, a in enumerate(current):
                    sum_alpha[k] += a
                for f, v in (w_q.items() if exact else run.w.items()):
                    sum_w[f] = sum_w.get(f, 0.0) + (v / SCALE if exact else v)
            visits += 1
            if exact:
                if mode == "kernel":
                    m_q = sum(a * (1 + sum(1 for f, _ in s if f in x)) ** degree
                              for s, a in zip(run.support, alpha_q))
                else:
                    m_q = sum(w_q.get(f, 0) for f in x)
                m = m_q / SCALE
                update = yt * m_q <= SCALE + int(TIE_EPS * SCALE)
                loss = float(SCALE - yt * m_q) / SCALE
            else:
                if mode == "kernel":
                    m = 0.0
                    for s, a in zip(run.support, run.alpha):
                        dot = sum(v * x.get(f, 0.0) for f, v in s)
                        m += a * (1.0 + dot) ** degree
                else:
                    m = sum(run.w.get(f, 0.0) * v for f, v in x.items())
                update = yt * m <= 1.0 + TIE_EPS
                loss = 1.0 - yt * m
            run.margins.append(m)
            run.updated.append(update)
            if not update:
                continue
            sq = sum(v * v for v in x.values())
            norm = (1.0 + sq) ** degree if (step == "textbook" and mode == "kernel") else sq
            if norm > 0:
                tau = min(C, max(0.0, loss) / norm)
            else:
                tau = C if loss > 0 else 0.0
            step_q = yt * round(tau * SCALE)
            if mode == "kernel":
                key = tuple(sorted((f, v) for f, v in x.items() if v != 0))
                if key not in slot:
                    slot[key] = len(run.support)
                    run.support.append(key)
                    run.alpha.append(0.0)
                    alpha_q.append(0)
                run.alpha[slot[key]] += yt * tau
                alpha_q[slot[key]] += step_q
            else:
                for f, v in x.items():
                    run.w[f] = run.w.get(f, 0.0) + yt * tau * v
                    w_q[f] = w_q.get(f, 0) + step_q
    if exact:
        run.alpha = [a / SCALE for a in alpha_q]
        run.w = {f: v / SCALE for f, v in w_q.items()}
    if average:  # add the final model, then divide by the number of visits
        sum_alpha += [0.0] * (len(run.alpha) - len(sum_alpha))
        run.alpha = [(t + a) / visits for t, a in zip(sum_alpha, run.alpha)]
        for f, v in run.w.items():
            sum_w[f] = sum_w.get(f, 0.0) + v
        run.w = {f: v / visits for f, v in sum_w.items()}
    return run
