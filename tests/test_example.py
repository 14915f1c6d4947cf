"""The README's main example (examples/classify_trees.py) runs end to end at small size:
three learners, the table, the saved model reloaded with the same predictions, a plot."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_main_example_at_small_size(tmp_path, capsys):
    path = Path(__file__).resolve().parents[1] / "examples" / "classify_trees.py"
    spec = importlib.util.spec_from_file_location("classify_trees", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    code = example.main(["--kernel", "sst", "--n-train", "90", "--n-test", "30",
                         "--landmarks", "20", "--epochs", "5", "--quiet",
                         "--out-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    for learner in ("KSVM", "Nystrom+DCD", "KDA"):
        assert any(line.startswith(learner) for line in out.splitlines())
    assert "gives the same predictions on the 30 test trees: yes" in out
    assert (tmp_path / "nystrom_dcd.npz").is_file()
    assert "'a coroutine'" in out
