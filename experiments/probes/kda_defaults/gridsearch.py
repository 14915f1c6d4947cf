"""The issue's KDAClassifier scenario: GridSearchCV over the kernel's λ on 240 TREC trees
(40 of each coarse class), other defaults; training accuracy of the refit model, and test
accuracy on the 500 TREC test questions. 'old' = the previous defaults passed explicitly
(dev_fraction=0.1, epochs=500, patience=20)."""
import os
import pathlib
import sys

import numpy as np
from sklearn.model_selection import GridSearchCV

from jkern.data import load_trec
from jkern.sklearn import KDAClassifier, NystromSVC

DATA = pathlib.Path(__file__).resolve().parents[4] / "shared" / "data"
D = str(DATA)
train, test = load_trec(D, "train"), load_trec(D, "test")
idx = [i for c in sorted(set(train.coarse)) for i in
       [j for j, k in enumerate(train.coarse) if k == c][:40]]
x = [train.trees[i] for i in idx]; y = np.array([train.coarse[i] for i in idx])
xt, yt = test.trees, np.array(test.coarse)
which = sys.argv[1:]
for tag, est in (("old", KDAClassifier(dev_fraction=0.1, epochs=500, patience=20)),
                 ("new", KDAClassifier()), ("NystromSVC", NystromSVC())):
    if tag not in which:
        continue
    search = GridSearchCV(est, {"lam": [0.2, 0.4]}, cv=3).fit(x, y)
    best = search.best_estimator_
    print(f"{tag}: best {search.best_params_}, cv {search.best_score_:.3f}, "
          f"train acc {best.score(x, y):.3f}, test acc {best.score(xt, yt):.3f}", flush=True)
