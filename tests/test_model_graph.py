"""Graphs against live Keras: op nodes with scalar arguments, several inputs and outputs, shared
layers, nested models, inner-layer outputs, and what load refuses (unsupported layers, Lambda)."""
import os

import numpy as np
import pytest
from graph_helpers import Boom, Probe, Scale, gl_state, gl_test_layers  # noqa: F401
from keras_ref import as_list, assert_close, assert_matches_keras, keras, random_inputs, randomize_weights

import kerasgl as kg

ops = keras.ops
pytestmark = pytest.mark.usefixtures("gl_test_layers")


def test_op_nodes_with_scalars_several_inputs_and_outputs(tmp_path):
    a = keras.Input((6,), name="a")
    b = keras.Input((6,), name="b")
    s = a + 3.0                                   # ops.Add with a scalar second argument
    t = 2.0 - ops.multiply(s, b)                  # scalar first argument
    u = ops.maximum(t / 4.0, -0.5) ** 2.0
    m = ops.mean(u, axis=-1, keepdims=True)
    r = ops.transpose(ops.reshape(u, (-1, 2, 3)), (0, 2, 1))
    e = ops.sum(ops.exp(-ops.abs(t)), axis=1)
    model = keras.Model([a, b], [m, r, e, ops.minimum(a, b)], name="ops_graph")
    assert_matches_keras(model, tmp_path)


def test_more_op_nodes(tmp_path):
    x = keras.Input((2, 3, 4), name="x")
    squeezed = ops.squeeze(ops.expand_dims(x, 1), axis=1)
    joined = ops.concatenate([squeezed, ops.square(x)], axis=-1)
    soft = ops.softmax(joined, axis=1)
    act = ops.relu(joined) + ops.sigmoid(joined) + ops.tanh(joined)
    clipped = ops.clip(ops.negative(act), -1.5, 0.5)
    reduced = ops.max(ops.sqrt(ops.abs(joined)), axis=(1, 2)) - ops.min(ops.log(ops.abs(x) + 1.0), axis=2)[:, 0, :1]
    model = keras.Model(x, [soft, clipped, reduced], name="more_ops")
    # GetItem (x[:, 0, :1]) runs too (keras_ops/numpy/joining.py).
    assert_matches_keras(model, tmp_path)


def test_shared_layer_has_one_set_of_weights(tmp_path):
    a = keras.Input((5,), name="a")
    b = keras.Input((5,), name="b")
    shared = Scale(name="shared")
    y = shared(shared(a) + b)                     # three calls of one layer, one weight vector
    model = keras.Model([a, b], [y, shared(b)], name="shared_graph")
    assert_matches_keras(model, tmp_path)
    path = os.path.join(tmp_path, "shared_graph.keras")
    with kg.load_model(path) as loaded:
        assert loaded.count_params() == model.count_params() == 5
        assert kg.memory().num_tensors == 1       # the weight, uploaded once
        assert len(loaded._graph.nodes_of("shared")) == 3


def test_nested_models(tmp_path):
    """A Sequential inside a Functional inside a Sequential, each with weights."""
    inner = keras.Sequential([keras.Input((4,)), Scale(name="inner_scale")], name="inner_seq")
    x = keras.Input((4,), name="mid_in")
    h = inner(x) + 1.0
    mid = keras.Model(x, ops.multiply(h, inner(h)), name="mid_functional")   # inner called twice
    outer = keras.Sequential([keras.Input((4,)), Scale(name="first"), mid, Scale(name="last")],
                             name="outer_seq")
    expected = assert_matches_keras(outer, tmp_path)
    with kg.load_model(os.path.join(tmp_path, "outer_seq.keras")) as loaded:
        assert [l.name for l in loaded.layers] == ["first", "mid_functional", "last"]
        assert loaded.count_params() == outer.count_params() == 12
        assert loaded.get_layer("mid_functional").param_count == 4
        assert loaded.output_shape == (None, 4)
        assert_close(loaded.predict(random_inputs(outer)[0], verbose=0), expected[0])


def test_nested_functional_with_two_inputs_and_outputs(tmp_path):
    p = keras.Input((3,), name="p")
    q = keras.Input((3,), name="q")
    pair = keras.Model([p, q], [Scale(name="ps")(p) - q, ops.multiply(p, q)], name="pair")
    a = keras.Input((3,), name="a")
    b = keras.Input((3,), name="b")
    d, m = pair([a, b])
    model = keras.Model([a, b], [d + m, m], name="uses_pair")
    assert_matches_keras(model, tmp_path)


def test_inner_layer_outputs(tmp_path):
    x = keras.Input((4,), name="x")
    s1 = Scale(name="s1")(x)
    s2 = Scale(name="s2")(s1 + 1.0)
    model = keras.Model(x, s2 * 2.0, name="inspect")
    randomize_weights(model)
    model.save(os.path.join(tmp_path, "inspect.keras"))
    data = random_inputs(model, batch=3)[0]
    reference = keras.Model(x, [s1, s2]).predict(data, verbose=0)
    with kg.load_model(os.path.join(tmp_path, "inspect.keras")) as loaded:
        got = loaded.predict(data, outputs=["s1", "s2"], verbose=0)
        assert isinstance(got, list) and len(got) == 2
        for g, e in zip(got, reference):
            assert_close(g, e)
        assert_close(loaded.predict(data, outputs="s1", verbose=0), reference[0])
        assert_close(loaded.predict(data, outputs=("s2", 0, 0), verbose=0), reference[1])
        with pytest.raises(ValueError, match="No such layer"):
            loaded.predict(data, outputs=["nope"])


def test_inner_output_of_a_shared_layer_needs_the_call(tmp_path):
    x = keras.Input((4,), name="x")
    shared = Scale(name="sh")
    first = shared(x)
    second = shared(first)
    model = keras.Model(x, second, name="twice")
    randomize_weights(model)
    model.save(os.path.join(tmp_path, "twice.keras"))
    data = random_inputs(model)[0]
    expected_first = keras.Model(x, first).predict(data, verbose=0)
    with kg.load_model(os.path.join(tmp_path, "twice.keras")) as loaded:
        with pytest.raises(ValueError, match="called 2 times"):
            loaded.predict(data, outputs="sh")
        assert_close(loaded.predict(data, outputs=("sh", 0), verbose=0), expected_first)


def test_identity_layer_returning_its_input(tmp_path):
    """A layer may return its input object; the graph must not free it twice or too early."""
    x = keras.Input((3,), name="x")
    p = Probe(name="probe")(x)
    model = keras.Model(x, [p, Probe(name="probe2")(p) + 1.0, p * 2.0], name="identity")
    assert_matches_keras(model, tmp_path, formats=(".keras",))


def test_unsupported_layers_listed_together(tmp_path):
    x = keras.Input((4, 4), name="x")
    y = ops.pinv(x)                                      # ops kerasgl refuses
    y = keras.layers.Lambda(lambda t: t * 2.0, name="my_lambda")(y)
    y = ops.pinv(y)
    model = keras.Model(x, Scale(name="fine")(y), name="unsupported")
    path = os.path.join(tmp_path, "unsupported.keras")
    model.save(path)
    before = kg.memory()
    with pytest.raises(kg.UnsupportedLayerError) as info:
        kg.load_model(path)
    message = str(info.value)
    # Keras numbers auto-named operations per session (pinv, pinv_1...): read the names it gave.
    pinvs = [op.name for op in model.operations if type(op).__name__ == "Pinv"]
    assert len(pinvs) == 2
    for name, cls in ((pinvs[0], "Pinv"), ("my_lambda", "Lambda"), (pinvs[1], "Pinv")):
        assert f"'{name}' ({cls})" in message, message
    assert "never deserialises or runs" in message
    assert "fine" not in message
    assert kg.memory().num_tensors == before.num_tensors


def test_lambda_is_never_run(tmp_path):
    marker = os.path.join(tmp_path, "lambda_ran")

    def touch(t):
        open(marker, "w").close()          # a side effect anyone running the code would leave
        return t

    x = keras.Input((2,), name="x")
    model = keras.Model(x, keras.layers.Lambda(touch, name="side_effect")(x), name="lam")
    path = os.path.join(tmp_path, "lam.keras")
    model.save(path)
    os.remove(marker)                      # Keras ran it while building the model
    with pytest.raises(kg.UnsupportedLayerError, match="Lambda"):
        kg.load_model(path)
    assert not os.path.exists(marker)


def test_failed_load_leaves_nothing_on_the_gpu(tmp_path):
    from graph_helpers import gl_state
    x = keras.Input((3,), name="x")
    model = keras.Model(x, Boom(name="boom")(Scale(name="before")(x)), name="fails")
    path = os.path.join(tmp_path, "fails.keras")
    model.save(path)
    before = gl_state()
    with pytest.raises(kg.ShapeError, match="refuses to build"):
        kg.load_model(path)
    assert gl_state() == before


def test_model_description(tmp_path):
    a = keras.Input((2, 3), name="a")
    b = keras.Input((3,), name="b", dtype="float32")
    y = Scale(name="sa")(a) + ops.expand_dims(b, 1)
    model = keras.Model([a, b], [y, ops.sum(y, axis=1)], name="described")
    model.save(os.path.join(tmp_path, "described.keras"))
    with kg.load_model(os.path.join(tmp_path, "described.keras")) as loaded:
        assert [(s.name, s.shape, s.dtype) for s in loaded.inputs] == [
            ("a", (None, 2, 3), "float32"), ("b", (None, 3), "float32")]
        assert [s.shape for s in loaded.outputs] == [tuple(t.shape) for t in model.outputs]
        assert loaded.get_layer("sa").class_name == "Scale"
        assert loaded.get_layer(index=0).name == model.layers[0].name
        assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
        with pytest.raises(ValueError, match="No such layer"):
            loaded.get_layer("missing")
        lines = []
        loaded.summary(print_fn=lines.append)
        text = "\n".join(lines)
        for layer in model.layers:
            assert layer.name in text
        assert f"Total params: {model.count_params():,}" in text
        assert "binary" in text                     # the shaders column
        assert "(None, 2, 3)" in text


def test_summary_param_total_matches_keras_for_nested(tmp_path):
    inner = keras.Sequential([keras.Input((4,)), Scale(name="i1"), Scale(name="i2")], name="inner2")
    outer = keras.Sequential([keras.Input((4,)), inner, Scale(name="o")], name="outer2")
    outer.save(os.path.join(tmp_path, "outer2.keras"))
    with kg.load_model(os.path.join(tmp_path, "outer2.keras")) as loaded:
        lines = []
        loaded.summary(print_fn=lines.append, expand_nested=True)
        text = "\n".join(lines)
    assert f"Total params: {outer.count_params():,}" in text
    assert "i1 (Scale)" in text and "inner2 (Sequential)" in text


def test_several_outputs_list_and_single_output_array(tmp_path):
    x = keras.Input((3,), name="x")
    two = keras.Model(x, [x + 1.0, x * 2.0], name="two_out")
    one = keras.Model(x, x - 1.0, name="one_out")
    for model in (two, one):
        model.save(os.path.join(tmp_path, f"{model.name}.keras"))
    data = np.ones((2, 3), "float32")
    with kg.load_model(os.path.join(tmp_path, "two_out.keras")) as m:
        out = m.predict(data, verbose=0)
        assert isinstance(out, list) and len(out) == 2
    with kg.load_model(os.path.join(tmp_path, "one_out.keras")) as m:
        out = m.predict(data, verbose=0)
        assert isinstance(out, np.ndarray)
        assert_close(out, as_list(one.predict(data, verbose=0))[0])


# -- with the built-in layers ---------------------------------------------------------------------
layers = keras.layers


def test_functional_with_shared_dense_merge_and_nested_sequential(tmp_path):
    a = keras.Input((6,), name="a")
    b = keras.Input((6,), name="b")
    shared = layers.Dense(5, activation="tanh", name="shared_dense")
    head = keras.Sequential([keras.Input((10,)), layers.Dense(4, activation="relu", name="h1"),
                             layers.Dense(3, name="h2")], name="head")
    joined = layers.Concatenate(name="join")([shared(a), shared(b)])
    out = head(joined)
    model = keras.Model([a, b], [out, layers.Add(name="sum")([shared(a), shared(b)])], name="dense_graph")
    assert_matches_keras(model, tmp_path)


def test_mask_that_changes_results_is_refused(tmp_path):
    tokens = keras.Input((5,), dtype="int32", name="tokens")
    embedded = layers.Embedding(10, 4, mask_zero=True, name="emb")(tokens)
    # The mask passes through Dense untouched (values unchanged): supported, matches Keras.
    ok = keras.Model(tokens, layers.Dense(3, name="d")(embedded), name="mask_ok")
    assert_matches_keras(ok, tmp_path, formats=(".keras",))
    # Softmax would use it: refused at load rather than answered differently.
    bad = keras.Model(tokens, layers.Softmax(name="sm")(layers.Dense(3, name="d2")(embedded)),
                      name="mask_bad")
    path = os.path.join(tmp_path, "mask_bad.keras")
    bad.save(path)
    before = kg.memory().num_tensors
    with pytest.raises(kg.UnsupportedLayerError, match=r"'sm' \(Softmax\): is called with a mask"):
        kg.load_model(path)
    assert kg.memory().num_tensors == before


def test_weights_that_do_not_fit_the_config_name_the_file_and_leave_nothing(tmp_path):
    """A layer's own weight check (Dense kernel vs units) still names the file, and the failed
    load leaves the GPU as it found it."""
    import h5py
    x = keras.Input((8,))
    model = keras.Model(x, keras.layers.Dense(4, name="head")(keras.layers.Dense(16, name="body")(x)))
    path = os.path.join(str(tmp_path), "mismatch.h5")
    model.save(path)
    with h5py.File(path, "r+") as f:
        names = []
        f["model_weights"].visit(names.append)
        kernel = next(n for n in names if "head" in n and n.endswith("kernel"))
        del f["model_weights"][kernel]
        f["model_weights"].create_dataset(kernel, data=np.zeros((16, 5), "float32"))
    before = gl_state()
    with pytest.raises(kg.ModelFileError, match=r"mismatch\.h5.*'head'.*\(16, 5\)"):
        kg.load_model(path)
    assert gl_state() == before


def _edited_config(src, dst, edit):
    import json
    import zipfile
    with zipfile.ZipFile(src) as z:
        members = {name: z.read(name) for name in z.namelist()}
    config = json.loads(members["config.json"])
    edit(config)
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return dst


@pytest.mark.parametrize("damage,words", [
    ("output_index", "reads output 5 of call #0 of layer 'd1', which that call does not have"),
    ("input_not_input_layer", "lists layer 'd1' (Dense) among its inputs"),
])
def test_graph_references_that_cannot_be_are_file_errors(tmp_path, damage, words):
    """A graph edge to an output index the layer does not have, or a model input that is not an
    InputLayer (hostile-file corpus): a ModelFileError naming the file, not a raw KeyError /
    TypeError, and nothing left on the GPU."""
    x = keras.Input((4,), name="x")
    model = keras.Model(x, keras.layers.Dense(2, name="d2")(keras.layers.Dense(3, name="d1")(x)))
    src = os.path.join(tmp_path, "ok.keras")
    model.save(src)

    def edit(config):
        layers = {entry["config"]["name"]: entry for entry in config["config"]["layers"]}
        if damage == "output_index":
            arg = layers["d2"]["inbound_nodes"][0]["args"][0]
            arg["config"]["keras_history"][2] = 5
        else:
            config["config"]["input_layers"] = [["d1", 0, 0]]
    path = _edited_config(src, os.path.join(tmp_path, f"{damage}.keras"), edit)
    before = kg.memory().num_tensors
    with pytest.raises(kg.ModelFileError) as info:
        kg.load_model(path).predict(np.ones((2, 4), "f4"), verbose=0)
    assert path in str(info.value) and words in str(info.value), str(info.value)
    assert kg.memory().num_tensors == before


@pytest.mark.parametrize("junk", [
    {"class_name": "__slice__", "config": [1, 2]},
    {"class_name": "__slice__", "config": {"start": "a", "stop": {}, "step": [1]}},
    {"class_name": "__slice__", "config": None},
    {"class_name": "__slice__", "config": {"start": {"class_name": "__slice__", "config": {}},
                                           "stop": 2, "step": None}},
])
def test_junk_slice_arguments_are_refused_at_load(tmp_path, junk):
    """A GetItem whose saved index holds junk __slice__ values (hostile-file corpus): a kerasgl
    error at load naming the file and the layer, never a raw TypeError at predict."""
    x = keras.Input((4, 5), name="x")
    src = os.path.join(tmp_path, "getitem.keras")
    keras.Model(x, x[:, 1:3], name="g").save(src)

    def edit(config):
        node = next(e for e in config["config"]["layers"] if e["class_name"] == "GetItem")
        args = node["inbound_nodes"][0]["args"]
        args[1] = [args[1][0], junk]
    path = _edited_config(src, os.path.join(tmp_path, "junk.keras"), edit)
    with pytest.raises(kg.KerasGLError) as info:
        kg.load_model(path)
    assert path in str(info.value) and "get_item" in str(info.value), str(info.value)
