"""Issue 34 probe, kept as run: where the memory of loading the explicit fit's stored epochs
program goes (the executables over 0.5 MB of one UD or conj-2 fit at degree d): how much each
kind of mapping of /proc/self/smaps grew (kB, after the freed pages are handed back), the new
mappings by size, and XLA's own accounting of the program (MB). Markers on stderr around each
such load, so that a system-call trace can be cut to it:

    taskset -c 1 python experiments/probes/pa_speed/program_load_maps.py ud 2
    strace -f -e trace=mmap,write -o /tmp/strace.log python experiments/probes/pa_speed/program_load_maps.py ud 2
"""
# ruff: noqa
import sys, os, re, collections
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
import jkern._executable_file as EF
from jkern._memory import release_freed_memory
def smaps():
    out = {}; cur = None
    for line in open("/proc/self/smaps"):
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split(); cur = (parts[0], parts[5] if len(parts) > 5 else "[anon]"); out[cur] = 0
        elif line.startswith("Rss:") and cur is not None:
            out[cur] = int(line.split()[1])
    return out
orig = EF.decode
def dec(data, key, *a, **k):
    if len(data) <= 500_000:
        return orig(data, key, *a, **k)
    release_freed_memory(); before = smaps()
    os.write(2, b"=== LOAD START\n")
    out = orig(data, key, *a, **k)
    os.write(2, b"=== LOAD END\n")
    release_freed_memory(); after = smaps()
    grew = collections.Counter(); new = []
    for m, rss in after.items():
        d = rss - before.get(m, 0)
        if d > 0:
            lo, hi = [int(x, 16) for x in m[0].split("-")]
            if m not in before: new.append((hi - lo) // 1024)
            grew[m[1].split("/")[-1]] += d
    print(f"load of a {len(data) / 1e6:.2f} MB executable: resident growth by mapping (kB): {dict(grew.most_common(4))}")
    print(f"  new mappings, size kB (count): {sorted(collections.Counter(new).items(), key=lambda kv: -kv[0] * kv[1])[:5]}")
    return out
EF.decode = dec
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
import jkern.pa._fit as F
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features)
sol = fit(X, tr.labels, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
for comp in F._run_conjunctions._loaded.values():
    ma = comp.memory_analysis()
    print("the epochs program (XLA, MB):", {a.replace("_size_in_bytes", ""): round(getattr(ma, a) / 2**20, 1) for a in
          ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes")})
