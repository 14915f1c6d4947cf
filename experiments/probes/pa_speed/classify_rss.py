"""Issue 34 probe, kept as run: the peak RSS of classifying UD's test set with the d = 3
expanded model (the models `classify.py` keeps in /tmp/pke), after the expansion and after
the classification.

    python experiments/probes/pa_speed/classify_rss.py
"""
# ruff: noqa
import resource, sys
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from jkern._sparse import SparseRows
from jkern.pa._pke import expand_support_vectors
t = np.load("/tmp/pke/test_ud.npz")
X = SparseRows(jnp.asarray(t["indices"]), jnp.asarray(t["values"]), int(t["n_features"]))
s = np.load("/tmp/pke/sv_ud_d3.npz")
em = expand_support_vectors(s["indices"], s["values"], s["alpha"], 3, int(s["n_features"]))
print("after expand", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "MB")
m = np.asarray(em.decision_function(X))
print("after classify", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "MB")
