"""jkern.data's UD attachment task (issue 21) and jkern.pa.write_sparse."""

from __future__ import annotations

import numpy as np
import pytest
from data_paths import SHARED_DATA, require

from jkern import SparseRows
from jkern.data import attachment_examples, load_ud_attachment
from jkern.errors import InputError
from jkern.pa import SparseExamples, frequency_order, read_sparse, write_sparse
from jkern.trees import read_conllu

SENTENCE = """\
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t4\tnsubj\t_\t_
3\t,\t,\tPUNCT\t,\t_\t4\tpunct\t_\t_
4\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\t_

"""


def test_candidates_labels_and_features(tmp_path):
    path = tmp_path / "s.conllu"
    path.write_text(SENTENCE, encoding="utf-8")
    sentences = read_conllu(path)
    vocab: dict[str, int] = {}
    s = attachment_examples(sentences, vocab, window=2)
    # dependents 1..4, candidates within distance 2: 2 + 3 + 3 + 2 pairs, left to right
    assert len(s.examples.labels) == 10 and s.tokens == 4
    # gold heads: The->dog, dog->barks (distance 2), ","->barks; the root has none
    assert s.examples.labels.tolist() == [1, -1, -1, -1, 1, -1, -1, 1, -1, -1]
    assert s.gold_in_window == 3
    names = {v: k for k, v in vocab.items()}
    X = s.examples.features
    first = {names[i] for i in np.asarray(X.indices)[0]}
    assert {"d.form=The", "h.lemma=dog", "dist=1", "dir=R", "d-1.upos=<s>",
            "punct=no"} <= first
    # dog -> barks: a comma between
    pair = {names[i] for i in np.asarray(X.indices)[4]}
    assert {"h.form=barks", "dist=2", "punct=yes", "h+1.upos=</s>"} <= pair
    assert np.all(np.asarray(X.values)[np.asarray(X.values) != 0] == 1)
    # a test pass never grows the vocabulary: unseen features are counted
    before = dict(vocab)
    t = attachment_examples(sentences, vocab, window=3, grow=False)
    assert vocab == before and t.dropped > 0  # dist=3 is new
    with pytest.raises(InputError, match="window"):
        attachment_examples(sentences, vocab, window=0)


def test_write_sparse_round_trip(tmp_path):
    X = SparseRows.from_rows([{0: 1.0, 5: 1.0}, {}, {2: 0.25, 1: 3.0}], n_features=6)
    data = SparseExamples(X, np.array([1, -1, -1], np.int32))
    path = tmp_path / "out.svm"
    assert write_sparse(path, data) == 3
    assert path.read_text().splitlines() == ["+1 1:1 6:1", "-1", "-1 2:3 3:0.25"]
    back = read_sparse(path)
    assert back.labels.tolist() == [1, -1, -1]
    np.testing.assert_array_equal(np.asarray(back.features.todense())[:, 1:],
                                  np.asarray(X.todense()))


def test_ud_english_ewt_counts(tmp_path):
    require(SHARED_DATA / "ud-english-ewt")
    data = load_ud_attachment(SHARED_DATA)
    tr, te = data.train, data.test
    # the recorded opal set: 196,058 / 194,428 examples, 10.4% positive, 80.8% in window
    assert len(tr.examples.labels) == 196_058 and len(te.examples.labels) == 194_428
    assert round(float(np.mean(tr.examples.labels == 1)), 3) == 0.104
    assert round(tr.gold_in_window / tr.tokens, 3) == 0.808
    assert tr.examples.features.n_features == te.examples.features.n_features == len(data.vocab)
    assert tr.examples.features.indices.shape[1] == 15  # every pair has the 15 features
    # the LIBSVM file of the first sentences reads back with the same frequency order
    head = SparseExamples(tr.examples.features.rows(np.arange(300)), tr.examples.labels[:300])
    write_sparse(tmp_path / "ud.svm", head)
    back = read_sparse(tmp_path / "ud.svm")
    a, _ = frequency_order(head.features).apply(head.features)
    b, _ = frequency_order(back.features).apply(back.features)
    np.testing.assert_array_equal(np.asarray(a.indices), np.asarray(b.indices))
