"""The Open Inference Protocol (KServe v2) over HTTP, as Triton's own Python client sees it:
tritonclient.http, unmodified, against a real `kerasgl serve` on a loopback port. Health,
server and model metadata, inference equal to Keras for one- and two-input models and for
int32, bool and text inputs, with JSON tensors and with the binary tensor data extension,
outputs selected by name, and errors in the protocol's shape ({"error": ...}) with its status
codes. The gRPC transport is in test_open_inference_grpc.py; deadlines in
test_serving_faults.py."""
import json
import struct

import numpy as np
import pytest
from extras import require

httpx = require("httpx")
require("uvicorn")
require("starlette")
triton = require("tritonclient.http")

from tritonclient.utils import InferenceServerException  # noqa: E402

from serving_helpers import Server, build_models  # noqa: E402

SERVED = ("mlp", "two", "words", "flagged", "tokens")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return build_models(tmp_path_factory.mktemp("open_inference"))


@pytest.fixture(scope="module")
def keras_models(models):
    import keras
    return {name: keras.saving.load_model(models[name]) for name in ("mlp", "two", "words")}


@pytest.fixture(scope="module")
def server(models):
    running = Server({name: models[name] for name in SERVED}, "--max-batch-size", "8",
                     "--allowed-batch-sizes", "1,8", "--batch-timeout-ms", "2")
    yield running
    running.stop()
    assert "GL objects left on the GPU: {'buffer': 0, 'texture': 0, 'program': 0}" in running.output()


@pytest.fixture
def client(server):
    with_client = triton.InferenceServerClient(f"127.0.0.1:{server.port}")
    yield with_client
    with_client.close()


def tensor(name, array, datatype, binary=True):
    made = triton.InferInput(name, list(array.shape), datatype)
    made.set_data_from_numpy(array, binary_data=binary)
    return made


def test_health_and_metadata(client, server):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
    assert not client.is_model_ready("nope") and not client.is_model_ready("mlp", "2")
    meta = client.get_server_metadata()
    assert meta["name"] == "kerasgl" and "binary_tensor_data" in meta["extensions"]
    two = client.get_model_metadata("two")
    assert two == {"name": "two", "versions": ["1"], "platform": "kerasgl",
                   "inputs": [{"name": "a", "datatype": "FP32", "shape": [-1, 4]},
                              {"name": "b", "datatype": "FP32", "shape": [-1, 3, 2]}],
                   "outputs": [{"name": "left", "datatype": "FP32", "shape": [-1, 2]},
                               {"name": "right", "datatype": "FP32", "shape": [-1, 3]}]}
    assert client.get_model_metadata("two", "1") == two
    assert httpx.get(server.url + "/v2/models/two/versions/1", timeout=10).json() == two
    kinds = {name: client.get_model_metadata(name)["inputs"][0]["datatype"]
             for name in ("words", "flagged", "tokens")}
    assert kinds == {"words": "INT32", "flagged": "BOOL", "tokens": "BYTES"}
    with pytest.raises(InferenceServerException) as unknown:
        client.get_model_metadata("nope")
    assert unknown.value.status() == "404" and "nope" in unknown.value.message()


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_infer_answers_as_keras(client, keras_models, binary):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(5, 6)).astype(np.float32)
    outputs = [triton.InferRequestedOutput("scores", binary_data=binary)]
    result = client.infer("mlp", [tensor("features", x, "FP32", binary)], outputs=outputs,
                          request_id="r-1")
    np.testing.assert_allclose(result.as_numpy("scores"), keras_models["mlp"].predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    answer = result.get_response()
    assert answer["id"] == "r-1" and answer["model_name"] == "mlp" and answer["model_version"] == "1"
    assert ("data" in answer["outputs"][0]) is not binary
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(3, 3, 2)).astype(np.float32)
    left, right = keras_models["two"].predict([a, b], verbose=0)
    inputs = [tensor("a", a, "FP32", binary), tensor("b", b, "FP32", binary)]
    both = client.infer("two", inputs)                  # no outputs named: all, in binary
    np.testing.assert_allclose(both.as_numpy("left"), left, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(both.as_numpy("right"), right, rtol=1e-5, atol=1e-6)
    only = client.infer("two", inputs, outputs=[triton.InferRequestedOutput("right", binary)])
    assert [o["name"] for o in only.get_response()["outputs"]] == ["right"]
    assert only.as_numpy("left") is None
    np.testing.assert_allclose(only.as_numpy("right"), right, rtol=1e-5, atol=1e-6)


def test_int32_bool_and_text_inputs(client, keras_models, models):
    ids = np.array([[1, 2, 3, 4, 5], [9, 0, 0, 7, 1]], np.int32)
    words = client.infer("words", [tensor("ids", ids, "INT32")])
    np.testing.assert_allclose(words.as_numpy("vote"), keras_models["words"].predict(ids, verbose=0),
                               rtol=1e-5, atol=1e-6)
    flags = np.array([[True, False, True], [False, False, True]])
    for binary in (True, False):
        flipped = client.infer("flagged", [tensor("flags", flags, "BOOL", binary)])
        name = flipped.get_response()["outputs"][0]["name"]
        np.testing.assert_array_equal(flipped.as_numpy(name), ~flags)
    data = np.load(models["tokens"].replace(".keras", ".npz"))
    text = data["input_0"].astype(object)
    for binary in (True, False):
        heads = client.infer("tokens", [tensor("tokens", text, "BYTES", binary)])
        np.testing.assert_allclose(heads.as_numpy("head"), data["output_0"], atol=1e-6)


def test_bad_requests_in_the_protocols_shape(client, server):
    x = np.zeros((1, 6), np.float32)
    for inputs, status, words in (
            ([tensor("features", x.astype(np.float64), "FP64")], "400", "takes FP32"),
            ([tensor("features", np.zeros((1, 5), np.float32), "FP32")], "400", "[-1, 6]"),
            ([tensor("nope", x, "FP32")], "400", "names ['nope']"),
            ([tensor("features", x, "FP32"), tensor("features", x, "FP32")], "400", "twice")):
        with pytest.raises(InferenceServerException) as refused:
            client.infer("mlp", inputs)
        assert refused.value.status() == status and words in refused.value.message(), \
            refused.value.message()
    with pytest.raises(InferenceServerException) as unknown:
        client.infer("mlp", [tensor("features", x, "FP32")],
                     outputs=[triton.InferRequestedOutput("nope")])
    assert unknown.value.status() == "400" and "no output(s) ['nope']" in unknown.value.message()
    with pytest.raises(InferenceServerException) as gpu_side:   # checked on the GPU, alone
        client.infer("words", [tensor("ids", np.array([[1, 2, 99, 4, 5]], np.int32), "INT32")])
    assert gpu_side.value.status() == "400"
    assert "Input 'ids' of model 'words'" in gpu_side.value.message() and "99" in \
        gpu_side.value.message()
    with pytest.raises(InferenceServerException) as missing:
        client.infer("nope", [tensor("features", x, "FP32")])
    assert missing.value.status() == "404"

    def raw(body: bytes, **headers):
        return httpx.post(server.url + "/v2/models/mlp/infer", content=body, headers=headers,
                          timeout=10)
    header = json.dumps({"inputs": [{"name": "features", "datatype": "FP32", "shape": [1, 6],
                                     "parameters": {"binary_data_size": 24}}]}).encode()
    for reply, words in (
            (raw(b"{not json"), "JSON Parse error"),
            (raw(b'{"inputs": []}'), "non-empty list"),
            (raw(header + b"\0" * 20, **{"Inference-Header-Content-Length": str(len(header))}),
             "passes the end"),
            (raw(header + b"\0" * 28, **{"Inference-Header-Content-Length": str(len(header))}),
             "its inputs take 24"),
            (raw(header, **{"Inference-Header-Content-Length": "x"}), "is not a length")):
        assert reply.status_code == 400 and words in reply.json()["error"], reply.text
    good = raw(header + struct.pack("<6f", *range(6)),
               **{"Inference-Header-Content-Length": str(len(header))})
    assert good.status_code == 200 and len(good.json()["outputs"][0]["data"]) == 3
    assert httpx.get(server.url + "/v2/models/mlp/infer", timeout=10).status_code == 405
    assert httpx.get(server.url + "/v2/nothing", timeout=10).json()["error"]


def test_json_tensors_nested_or_flat(server, keras_models):
    """The protocol's "data" may be flat (row-major) or nested as the shape; answers are flat."""
    x = np.arange(12, dtype=np.float32).reshape(2, 6) / 10
    expected = keras_models["mlp"].predict(x, verbose=0)
    for data in (x.ravel().tolist(), x.tolist()):
        body = {"id": "7", "inputs": [{"name": "features", "datatype": "FP32", "shape": [2, 6],
                                       "data": data}],
                "outputs": [{"name": "scores"}]}
        answer = httpx.post(server.url + "/v2/models/mlp/versions/1/infer", json=body, timeout=10)
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        out = answer.json()
        assert out["id"] == "7" and out["outputs"][0]["shape"] == [2, 3]
        np.testing.assert_allclose(np.reshape(out["outputs"][0]["data"], (2, 3)), expected,
                                   rtol=1e-5, atol=1e-6)
