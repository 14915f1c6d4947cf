"""Issue 34 probe, kept as run: the host cost of placing random keys in a two-choice cuckoo
table (`_table._cuckoo_owners`) at the table sizes of UD and conj-2's d = 3 fits and models,
and of the two hashes, CPU seconds, one core (slots: ceil(D / 0.48), `_cuckoo_size`; at 263f8b8 the probe, as the tables, took powers
of two: 2^ceil(log2(D / 0.48))).

    taskset -c 1 python experiments/probes/pa_speed/cuckoo_build.py
"""
# ruff: noqa
import time, numpy as np
from jkern.pa import _table as T
rng = np.random.default_rng(0)
for D in (3_500_000, 4_500_000, 5_260_000):
    keys = np.unique(rng.integers(0, 2**40, D * 11 // 10))[:D]
    S = T._cuckoo_size(D, 0.48, True)
    t = time.process_time(); h = T._slot_of(keys, S); h2 = T._slot_of(keys, S, T._SEEDS[0]); th = time.process_time() - t
    t = time.process_time(); o = T._cuckoo_owners(keys, S, T._SEEDS[0]); tc = time.process_time() - t
    print(D, "slots", S, "load", round(D / S, 3), f"hash x2 {th:.3f}s owners {tc:.3f}s")
