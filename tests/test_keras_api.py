"""keras.Model's inference API on kerasgl.Model, against the same Keras model: model(x),
predict_on_batch, layers, get_layer, layer.get_weights() / get_config() / count_params(),
model.get_weights(), input_shape / output_shape, count_params(), get_config().

Each model is saved in each format and loaded by kerasgl with its load-time fusions on, so that
get_weights() is checked to give the file's arrays, not the packed and folded ones on the GPU."""
import json
import os

import numpy as np
import pytest
from keras_ref import FORMATS, as_list, assert_close, keras, random_inputs, randomize_weights

import kerasgl as kg

layers = keras.layers


def cnn():
    """Conv + BatchNormalization + ReLU + pooling: all fused at load into one convolution."""
    return keras.Sequential([
        keras.Input((10, 10, 3), name="image"),
        layers.Conv2D(6, 3, name="conv"),
        layers.BatchNormalization(name="bn"),
        layers.ReLU(name="relu"),
        layers.MaxPooling2D(name="pool"),
        layers.Flatten(name="flat"),
        layers.Dense(5, activation="softmax", name="probs"),
    ], name="cnn")


def nested_shared():
    """Two inputs through one shared Dense, a nested Sequential (with its own BatchNormalization)
    called twice, an op node, and two outputs."""
    inner = keras.Sequential([keras.Input((4,)), layers.Dense(3, name="inner_dense"),
                              layers.BatchNormalization(name="inner_bn")], name="inner")
    x = keras.Input((4,), name="x")
    y = keras.Input((4,), name="y")
    shared = layers.Dense(4, activation="tanh", name="shared")
    a, b = inner(shared(x)), inner(shared(y))
    total = layers.Add(name="add")([a, b])
    return keras.Model([x, y], [total, a * 2.0], name="nested_shared")


def sequence():
    """Embedding, Bidirectional(LSTM) and MultiHeadAttention: layers whose weights come from
    sub-layers, in an order the file does not record directly."""
    tokens = keras.Input((6,), dtype="int32", name="tokens")
    h = layers.Embedding(12, 8, name="embed")(tokens)
    h = layers.Bidirectional(layers.LSTM(4, return_sequences=True), name="bilstm")(h)
    h = layers.MultiHeadAttention(2, 4, name="mha")(h, h)
    h = layers.LayerNormalization(name="norm")(h)
    h = layers.GlobalAveragePooling1D(name="gap")(h)
    return keras.Model(tokens, layers.Dense(3, name="out")(h), name="sequence")


BUILDERS = {"cnn": cnn, "nested_shared": nested_shared, "sequence": sequence}


@pytest.fixture(scope="module", params=[(b, f) for b in BUILDERS for f in FORMATS],
                ids=lambda p: f"{p[0]}{p[1]}")
def pair(request, tmp_path_factory):
    """(Keras model, path of its saved file) with random weights."""
    name, fmt = request.param
    keras.utils.set_random_seed(0)
    model = BUILDERS[name]()
    randomize_weights(model, seed=3)
    path = os.path.join(str(tmp_path_factory.mktemp("keras_api")), name + fmt)
    model.save(path)
    return model, path


@pytest.fixture
def loaded(pair):
    reference, path = pair
    with kg.load_model(path) as model:
        yield reference, model


def _plain(value):
    """A Keras config as the file holds it (JSON: tuples are lists), with every dtype policy
    given as its name, as kerasgl normalises it (saving/config.py)."""
    value = json.loads(json.dumps(value))

    def walk(v):
        if isinstance(v, dict):
            if v.get("class_name") == "DTypePolicy" and isinstance(v.get("config"), dict):
                return v["config"]["name"]
            return {k: walk(item) for k, item in v.items()}
        if isinstance(v, list):
            return [walk(item) for item in v]
        return v
    return walk(value)


def test_layers_are_listed_as_keras_lists_them(loaded):
    reference, model = loaded
    assert [l.name for l in model.layers] == [l.name for l in reference.layers]
    assert [l.class_name for l in model.layers] == [type(l).__name__ if type(l).__name__ != "Sequential"
                                                    else "Sequential" for l in reference.layers]
    for layer in model.layers:
        assert model.get_layer(layer.name) is layer
    with pytest.raises(ValueError, match="No such layer"):
        model.get_layer("not_a_layer")


def test_get_weights_are_the_file_arrays_in_keras_order(loaded):
    reference, model = loaded
    for ours, theirs in zip(model.layers, reference.layers):
        got, want = ours.get_weights(), theirs.get_weights()
        assert [w.shape for w in got] == [w.shape for w in want], ours.name
        for g, w in zip(got, want):
            assert isinstance(g, np.ndarray) and g.dtype == w.dtype
            assert np.array_equal(g, w), f"{ours.name}: not the file's array"   # exact: no folding
        assert ours.count_params() == theirs.count_params(), ours.name
    got, want = model.get_weights(), reference.get_weights()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    assert model.count_params() == reference.count_params()


def _history_only(value):
    """Keras's call arguments with each `__keras_tensor__` reduced to its keras_history."""
    if isinstance(value, dict):
        if value.get("class_name") == "__keras_tensor__":
            return {"class_name": "__keras_tensor__",
                    "config": {"keras_history": value["config"]["keras_history"]}}
        return {k: _history_only(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_history_only(v) for v in value]
    return value


def test_get_weights_are_copies(loaded):
    _, model = loaded
    layer = next(l for l in model.layers if l.get_weights())
    first = layer.get_weights()
    first[0][...] = 12345.0
    assert not np.any(layer.get_weights()[0] == 12345.0)


def test_shapes_and_configs_match_keras(loaded):
    reference, model = loaded
    assert model.input_shape == reference.input_shape
    assert model.output_shape == reference.output_shape
    for ours, theirs in zip(model.layers, reference.layers):
        if isinstance(theirs, keras.Model):
            assert [l["name"] for l in ours.get_config()["layers"]] == \
                   [l["config"]["name"] for l in theirs.get_config()["layers"]]
            continue
        assert ours.get_config() == _plain(theirs.get_config()), ours.name
    ours, theirs = model.get_config(), reference.get_config()
    assert ours["name"] == theirs["name"]
    assert [(l["class_name"], l["config"].get("name", l["name"])) for l in ours["layers"]] == \
           [(l["class_name"], l["config"]["name"]) for l in theirs["layers"]]
    for mine, keras_layer in zip(ours["layers"], theirs["layers"]):
        # The call graph, tensor for tensor (kerasgl leaves out each tensor's shape and dtype).
        assert ("inbound_nodes" in mine) == ("inbound_nodes" in keras_layer), mine["name"]
        if "inbound_nodes" in keras_layer:
            assert mine["inbound_nodes"] == _history_only(_plain(keras_layer["inbound_nodes"])), \
                mine["name"]
    for key in ("input_layers", "output_layers"):
        assert (key in ours) == (key in theirs)
        if key in theirs:
            want = _plain(theirs[key])
            if want and isinstance(want[0], str):
                want = [want]                     # Keras's lone triple: a model on one tensor
            assert ours[key] == want
    config = model.get_config()
    config["layers"].clear()                      # a copy: the model's own is untouched
    assert model.get_config()["layers"]


def test_call_returns_tensors_owned_by_the_scope(loaded):
    reference, model = loaded
    inputs = random_inputs(reference, batch=3, seed=5)
    feed = inputs if len(inputs) > 1 else inputs[0]
    expected = as_list(reference(feed))
    before = kg.memory().num_tensors
    with kg.tidy():
        result = model(feed)
        outputs = as_list(result)
        assert all(isinstance(t, kg.Tensor) for t in outputs)
        for got, want in zip(outputs, expected):
            assert_close(got.numpy(), np.asarray(want))
        # The uploaded numpy inputs are gone already: only the results are new.
        assert kg.memory().num_tensors == before + len(outputs)
    assert kg.memory().num_tensors == before
    # Outside any scope the caller owns them; Tensor inputs are taken as they are.
    tensors = [kg.tensor(a, dtype="int32" if a.dtype.kind == "i" else "float32") for a in inputs]
    kept = as_list(model(tensors if len(tensors) > 1 else tensors[0]))
    assert not any(t.is_disposed for t in tensors + kept)
    assert kg.memory().num_tensors == before + len(tensors) + len(kept)
    for got, want in zip(kept, expected):
        assert_close(got.numpy(), np.asarray(want))
    kg.dispose([tensors, kept])


def test_predict_on_batch_is_numpy(loaded):
    reference, model = loaded
    inputs = random_inputs(reference, batch=4, seed=6)
    feed = inputs if len(inputs) > 1 else inputs[0]
    expected = as_list(reference.predict_on_batch(feed))
    got = as_list(model.predict_on_batch(feed))
    assert all(isinstance(g, np.ndarray) for g in got)
    for g, e in zip(got, expected):
        assert_close(g, e)
    with kg.tidy():
        tensors = [kg.tensor(a, dtype="int32" if a.dtype.kind == "i" else "float32") for a in inputs]
        from_tensors = as_list(model.predict_on_batch(tensors if len(tensors) > 1 else tensors[0]))
    assert all(isinstance(g, np.ndarray) for g in from_tensors)
    for g, e in zip(from_tensors, expected):
        assert_close(g, e)


def test_call_refuses_training_and_masks(loaded):
    reference, model = loaded
    inputs = random_inputs(reference, batch=1)
    feed = inputs if len(inputs) > 1 else inputs[0]
    with pytest.raises(kg.KerasGLError, match="inference only"):
        model(feed, training=True)
    with pytest.raises(kg.KerasGLError, match="mask"):
        model(feed, mask=np.ones((1,), bool))
    with kg.tidy():
        model(feed, training=False)               # Keras's inference call is accepted



@pytest.mark.parametrize("name", ["batchnorm_variants", "bidirectional_wrappers", "cnn_functional",
                                  "nested_sequential"])
def test_keras2_files_give_tf_keras_get_weights(name):
    """Keras 2 (tf.keras) files against tf.keras's own layer.get_weights(), stored with the
    fixture by scripts/make_keras2_fixtures.py: BatchNormalization(renorm=True) gives all seven
    arrays, although inference reads four."""
    from saving_helpers import keras2_path, npz_weights
    data = np.load(keras2_path(f"{name}.npz"))
    with kg.load_model(keras2_path(f"{name}.h5")) as model:
        checked = 0
        for layer in model.layers:
            if isinstance(layer.get_config().get("layers"), list):
                # A nested model: its layers' arrays in turn (Keras 3's order, which the test
                # above checks against live Keras; tf.keras put non-trainable ones last).
                inner = [w for sub in layer.get_config()["layers"]
                         for w in npz_weights(data, f"{layer.name}/{sub['name']}")]
                expected = inner
            else:
                expected = npz_weights(data, layer.name)
            got = layer.get_weights()
            assert len(got) == len(expected), layer.name
            for g, e in zip(got, expected):
                assert np.array_equal(g, e), layer.name
            checked += bool(expected)
        assert checked
        if name == "batchnorm_variants":
            assert len(model.get_layer("bn_renorm").get_weights()) == 7
