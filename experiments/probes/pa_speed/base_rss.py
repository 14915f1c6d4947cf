"""Issue 34 probe, kept as run: the resident memory (MB: total, anonymous, file-backed, and
the high-water mark) of a process at each step of starting what a PA-I worker starts: Python,
NumPy, JAX, jax.numpy, the CPU backend (a first array), `jkern.pa`.

    taskset -c 1 python experiments/probes/pa_speed/base_rss.py
"""
# ruff: noqa
def st(tag):
    d = {}
    for l in open('/proc/self/status'):
        k, _, v = l.partition(':')
        if k in ('VmRSS', 'RssAnon', 'RssFile', 'VmHWM'):
            d[k] = int(v.split()[0]) // 1024
    print(f"{tag:10s} {d}", flush=True)
st('python')
import numpy; st('numpy')
import jax; st('jax')
import jax.numpy as jnp; st('jnp')
jnp.zeros(3).block_until_ready(); st('backend')
import jkern.pa; st('jkern.pa')
