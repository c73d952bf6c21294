"""SimpleRNN, LSTM, GRU and RNN(cells) against live Keras 3 (.keras and .h5), the Keras.js
recurrent cases (stateless strictly, stateful by their protocol), and stateful state handling."""
import json
import os

import numpy as np
import pytest

import kerasgl as kg
from keras_ref import as_list, assert_close, assert_matches_keras, keras, randomize_weights

L = keras.layers
DATA = os.path.join(os.path.dirname(__file__), "data", "kerasjs")


def _seq_model(layer, steps=6, features=3):
    inputs = keras.Input((steps, features))
    return keras.Model(inputs, layer(inputs))


LAYERS = {
    "simple": lambda **kw: L.SimpleRNN(5, **kw),
    "lstm": lambda **kw: L.LSTM(5, **kw),
    "gru": lambda **kw: L.GRU(5, **kw),
    "gru_reset_before": lambda **kw: L.GRU(5, reset_after=False, **kw),
}
OPTIONS = [
    {},
    {"return_sequences": True},
    {"go_backwards": True, "return_state": True},
    {"return_sequences": True, "go_backwards": True, "unroll": True, "use_bias": False},
]


@pytest.mark.parametrize("kind", list(LAYERS))
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(sorted(o)) or "default")
def test_recurrent_layer_grid(tmp_path, kind, options):
    assert_matches_keras(_seq_model(LAYERS[kind](**options)), tmp_path)


@pytest.mark.parametrize("layer", [
    L.SimpleRNN(9, activation="relu"),
    L.LSTM(4, activation="elu", recurrent_activation="hard_sigmoid"),
    L.GRU(6, activation="softsign", recurrent_activation="hard_sigmoid", return_sequences=True),
    L.LSTM(130, return_sequences=True),       # units past one work group's 64 lanes of 4
], ids=["simple-relu", "lstm-elu-hard-sigmoid", "gru-softsign", "lstm-130-units"])
def test_activations_and_sizes(tmp_path, layer):
    assert_matches_keras(_seq_model(layer), tmp_path, formats=(".keras",))


@pytest.mark.parametrize("kind", list(LAYERS))
def test_batch_above_one_work_group(tmp_path, kind):
    """19 sequences: work groups of 4 sharing each recurrent-kernel load, the last one partial."""
    model = _seq_model(LAYERS[kind](return_sequences=True, go_backwards=True))
    inputs = [np.random.default_rng(3).uniform(-1, 1, (19, 6, 3)).astype("float32")]
    assert_matches_keras(model, tmp_path, inputs=inputs, formats=(".keras",))


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "SimpleRNN"])
def test_initial_states_as_inputs(tmp_path, cls):
    units = 4
    seq = keras.Input((5, 3))
    states = [keras.Input((units,)) for _ in range(2 if cls == "LSTM" else 1)]
    layer = getattr(L, cls)(units, return_sequences=True, return_state=True)
    outputs = layer(seq, initial_state=states)
    model = keras.Model([seq] + states, list(outputs))
    assert_matches_keras(model, tmp_path)


def _flat(value):
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def test_rnn_wrapper_with_cells(tmp_path):
    for cell in (L.SimpleRNNCell(3), L.LSTMCell(4), L.GRUCell(5), L.GRUCell(5, reset_after=False)):
        assert_matches_keras(_seq_model(L.RNN(cell, return_sequences=True)), tmp_path)


@pytest.mark.parametrize("go_backwards", [False, True])
def test_stacked_cells_with_states(tmp_path, go_backwards):
    layer = L.RNN(L.StackedRNNCells([L.LSTMCell(4), L.GRUCell(3), L.SimpleRNNCell(2)]),
                  return_sequences=True, return_state=True, go_backwards=go_backwards)
    model = _seq_model(layer)
    randomize_weights(model)
    x = np.random.default_rng(1).uniform(-1, 1, (2, 6, 3)).astype("float32")
    expected = _flat(model.predict(x, verbose=0))
    for fmt in (".keras", ".h5"):
        path = os.path.join(tmp_path, f"stacked{fmt}")
        model.save(path)
        with kg.load_model(path) as loaded:
            actual = _flat(loaded.predict(x, verbose=0))
        assert len(actual) == len(expected) == 5
        for a, e in zip(actual, expected):
            assert_close(a, e, what=f"stacked {fmt}")


def test_rnn_with_a_list_of_cells(tmp_path):
    assert_matches_keras(_seq_model(L.RNN([L.GRUCell(4), L.LSTMCell(3)])), tmp_path)


# -- Keras.js -------------------------------------------------------------------------------------
def _cases():
    with open(os.path.join(DATA, "cases.jsonl")) as handle:
        cases = [json.loads(line) for line in handle]
    return [c for c in cases if c["layer_group"].startswith(("recurrent.", "wrappers."))]


def _arrays(entries):
    return [np.asarray(e["data"], dtype="float32").reshape(e["shape"]) for e in entries]


CASES = _cases()


@pytest.mark.parametrize("case", [c for c in CASES if not c.get("stateful")], ids=lambda c: c["id"])
def test_kerasjs_stateless_case_runs_and_matches(case):
    expected = _arrays(case["expected"] if case["keras_js_expected_matches_keras3"]
                       else case["keras3_output"])
    inputs = _arrays(case["inputs"])
    with kg.load_model(os.path.join(DATA, case["h5"])) as model:
        actual = as_list(model.predict(inputs[0], verbose=0))
    for a, e in zip(actual, expected):
        assert_close(a, e, what=case["id"])


@pytest.mark.parametrize("case", [c for c in CASES if c.get("stateful")], ids=lambda c: c["id"])
def test_kerasjs_stateful_case(case):
    """stateful_protocol: two calls on the same input without resetting; the second is compared
    (with `expected` where Keras 3 reproduces Keras.js, else with Keras 3 run the same way)."""
    assert "twice" in case["stateful_protocol"]
    inputs = _arrays(case["inputs"])
    path = os.path.join(DATA, case["h5"])
    if case["keras_js_expected_matches_keras3"]:
        expected = _arrays(case["expected"])[0]
    else:   # hard_sigmoid: Keras 3's formula applies to these Keras 3 files
        reference = keras.saving.load_model(path)
        reference(inputs[0])
        expected = np.asarray(reference(inputs[0]))
    with kg.load_model(path) as model:
        first = model.predict(inputs[0], verbose=0)
        second = model.predict(inputs[0], verbose=0)
        assert_close(second, expected, what=case["id"])
        assert np.abs(second - first).max() > 1e-4      # the state was carried
        model.reset_states()
        assert_close(model.predict(inputs[0], verbose=0), first, what=f"{case['id']} after reset")


# -- softmax / log_softmax over the units of a step (a work-group reduction in the shader) ---------
NORMALIZED = {
    "simple": lambda units, act, rec, **kw: L.SimpleRNN(units, activation=act or "tanh", **kw),
    "lstm": lambda units, act, rec, **kw: L.LSTM(units, activation=act or "tanh",
                                                 recurrent_activation=rec or "sigmoid", **kw),
    "gru": lambda units, act, rec, **kw: L.GRU(units, activation=act or "tanh",
                                               recurrent_activation=rec or "sigmoid", **kw),
    "gru_reset_before": lambda units, act, rec, **kw: L.GRU(
        units, activation=act or "tanh", recurrent_activation=rec or "sigmoid", reset_after=False,
        **kw),
}


def _normalized_model(kind, units):
    """One model, several branches over one masked input: softmax / log_softmax as activation
    and as recurrent activation, with go_backwards, return_state, unroll and an RNN(cell)."""
    make = NORMALIZED[kind]
    inputs = keras.Input((6, 3))
    masked = L.Masking(0.0)(inputs)
    combos = [("softmax", None), ("log_softmax", None)]
    if kind != "simple":
        combos += [(None, "softmax"), (None, "log_softmax"), ("log_softmax", "softmax")]
    outputs = []
    for index, (act, rec) in enumerate(combos):
        options = [{"return_sequences": True},
                   {"go_backwards": True, "return_state": True},
                   {"return_sequences": True, "go_backwards": True, "unroll": True},
                   {"return_sequences": True, "return_state": True, "go_backwards": True},
                   {}][index]
        result = make(units, act, rec, **options)(masked)
        outputs += list(result) if isinstance(result, (list, tuple)) else [result]
    cell_class = {"simple": L.SimpleRNNCell, "lstm": L.LSTMCell, "gru": L.GRUCell,
                  "gru_reset_before": lambda u, **kw: L.GRUCell(u, reset_after=False, **kw)}[kind]
    outputs.append(L.RNN(cell_class(units, activation="softmax"), return_sequences=True)(masked))
    return keras.Model(inputs, outputs)


def _masked_inputs(batch, seed=1):
    x = np.random.default_rng(seed).uniform(-1, 1, (batch, 6, 3)).astype("float32")
    x[0, 2:4] = 0.0         # masked in the middle
    x[-1, :2] = 0.0         # masked at the start (unroll: zeros until the first kept step)
    return x


@pytest.mark.parametrize("kind", list(NORMALIZED))
def test_softmax_and_log_softmax_activations(tmp_path, kind):
    assert_matches_keras(_normalized_model(kind, 5), tmp_path, inputs=[_masked_inputs(3)])


@pytest.mark.parametrize("kind, act, rec", [
    ("simple", "log_softmax", None),
    ("lstm", "softmax", "softmax"),
    ("gru", None, "softmax"),
    ("gru_reset_before", "softmax", None),
])
def test_softmax_over_units_spread_across_lanes(tmp_path, kind, act, rec):
    """300 units: two quads per lane of 64; batch 9: two sequences per work group. (log_softmax
    gates this wide make LSTM/GRU states grow like log(units)^t: Keras itself then drifts from a
    float64 reference by more than the tolerance, so only bounded cases are compared here.)"""
    inputs = keras.Input((6, 3))
    layer = NORMALIZED[kind](300, act, rec, return_sequences=True, go_backwards=True)
    model = keras.Model(inputs, layer(L.Masking(0.0)(inputs)))
    assert_matches_keras(model, tmp_path, inputs=[_masked_inputs(9)], formats=(".keras",))


def test_unknown_activation_in_a_cell_is_refused(tmp_path):
    model = _seq_model(L.SimpleRNN(3, activation="sparsemax"))
    path = os.path.join(tmp_path, "sparsemax_rnn.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError, match="sparsemax"):
        kg.load_model(path)
