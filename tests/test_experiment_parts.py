"""experiments/qc_acl17.py resumes a stopped run: each finished (kernel, source) part is kept
in the cache folder under a digest of the settings, read back as checked JSON data."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@pytest.fixture
def acl17(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    for name in ("_common", "qc_acl17"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module("qc_acl17")


def _args(**changes) -> argparse.Namespace:
    base = {"landmarks": "100,200", "samplings": 5, "gammas": "1,3,10", "epochs": 500,
            "patience": 20, "grid_samplings": None, "learn_steps": 60, "learn_batch": 96,
            "max_train": None, "max_test": None, "permute_test_labels": False,
            "data_dir": "/data"}
    return argparse.Namespace(**{**base, **changes})


def test_a_finished_part_is_read_back_not_recomputed(acl17, tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"rows": [{"model": "KSVM", "accuracy": 0.5}], "selection": {"C": 10},
                "timings": {"s": 1.0}}

    path = tmp_path / "part.json"
    first = acl17.resumable(path, compute)
    second = acl17.resumable(path, compute)
    assert calls == [1]
    assert first == second and first["rows"] == [{"model": "KSVM", "accuracy": 0.5}]
    assert {"date", "commit"} <= first["computed"].keys()
    assert not list(tmp_path.glob("*.tmp"))  # written whole, then renamed


def test_a_foreign_part_file_is_refused(acl17, tmp_path):
    path = tmp_path / "part.json"
    path.write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="not a part of this script's format"):
        acl17.resumable(path, lambda: pytest.fail("must not compute over a foreign file"))


def test_every_setting_that_shapes_the_rows_changes_the_digest(acl17):
    base = acl17.settings_digest(_args())
    for change in ({"samplings": 3}, {"landmarks": "100"}, {"gammas": "3"}, {"epochs": 50},
                   {"patience": 5}, {"grid_samplings": 1}, {"learn_steps": 1},
                   {"learn_batch": 8}, {"max_train": 300}, {"max_test": 100},
                   {"permute_test_labels": True}, {"data_dir": "/other"}):
        assert acl17.settings_digest(_args(**change)) != base, change
    assert acl17.settings_digest(_args()) == base


def test_learned_parameters_keep_their_cache_tag_through_json(acl17, tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    params = {"lam": 0.4123456789, "mu": 0.3, "gamma": 2.718281828,
              "A": rng.normal(size=(3, 3)), "B": rng.normal(size=(3, 3))}
    path = tmp_path / "learning.json"
    acl17.resumable(path, lambda: {"rows": [], "selection": {}, "timings": {},
                                   "params": acl17.params_to_json(params)})
    again = acl17.resumable(path, lambda: pytest.fail("a kept learning is not recomputed"))
    back = acl17.params_from_json(again["params"])
    assert isinstance(back["lam"], float) and back["A"].dtype == np.float64
    assert acl17.params_tag(back) == acl17.params_tag(params)
    assert acl17.params_from_json(None) is None
