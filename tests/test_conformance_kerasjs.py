"""The Keras.js layer test suite (tests/data/kerasjs, see its README for provenance and licence).

Each case is a Keras 3 legacy .h5 model with inputs and the outputs Keras 2 computed for Keras.js.
kerasgl covers every layer group of the suite, so every case must load and match: the Keras.js
expectation where Keras 3 reproduces it, else (hard_sigmoid: the files are Keras 3 files) Keras 3's
output. A refusal at load (UnsupportedLayerError) fails the case like a wrong answer would.
Stateful recurrent cases are checked by their protocol in tests/test_layers_recurrent.py.
"""
import json
import os

import numpy as np
import pytest

import kerasgl as kg

DATA = os.path.join(os.path.dirname(__file__), "data", "kerasjs")
ATOL = RTOL = 1e-4


def load_cases():
    with open(os.path.join(DATA, "cases.jsonl")) as handle:
        return [json.loads(line) for line in handle]


CASES = load_cases()


def arrays(entries):
    return [np.asarray(e["data"], dtype="float32").reshape(e["shape"]) for e in entries]


def reference(case):
    """What kerasgl must reproduce: Keras.js's expectation where Keras 3 reproduces it, else
    Keras 3's own output (hard_sigmoid changed formula between Keras 2 and Keras 3)."""
    if case["keras_js_expected_matches_keras3"]:
        return arrays(case["expected"])
    return arrays(case["keras3_output"])


def run_case(case):
    path = os.path.join(DATA, case["h5"])  # "h5/<id>.h5"
    inputs = arrays(case["inputs"])
    with kg.load_model(path) as model:
        outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    return outputs if isinstance(outputs, list) else [outputs]


STATELESS = [c for c in CASES if not c.get("stateful")]


@pytest.mark.parametrize("case", STATELESS, ids=lambda c: c["id"])
def test_kerasjs_case(case):
    expected = reference(case)
    actual = run_case(case)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape, f"{case['id']}: shape {a.shape} != expected {e.shape}"
        np.testing.assert_allclose(a, e, atol=ATOL, rtol=RTOL, err_msg=case["id"])


def test_case_counts_match_the_readme():
    assert len(CASES) == 334
    assert sum(c["keras_js_expected_matches_keras3"] for c in CASES) == 312
    assert sum(bool(c.get("stateful")) for c in CASES) == 12
    assert len(STATELESS) == 322    # every one of them is a test_kerasjs_case that must match
