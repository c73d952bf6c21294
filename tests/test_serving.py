"""`kerasgl serve` as a client sees it: TF Serving's REST API on a real server process on a
loopback port, answers compared with Keras (and with kerasgl's own predict), bad requests refused
alone with TF Serving's status codes, and a bounded load test (batching at work, nothing leaked).
Faults that need a server of their own (full queue, disconnects, SIGTERM) are in
test_serving_faults.py."""
import asyncio
import json
import time

import numpy as np
import pytest
from extras import require

httpx = require("httpx")
require("uvicorn")
require("starlette")

import kerasgl as kg  # noqa: E402
from serving_helpers import Server, as_float32, build_models, metric, rss_bytes  # noqa: E402

MAX_BATCH = 16


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return build_models(tmp_path_factory.mktemp("served"))


@pytest.fixture(scope="module")
def keras_models(models):
    import keras
    # The text model's StringLookup needs TensorFlow in Keras: its answers are the fixture's.
    return {name: keras.saving.load_model(path) for name, path in models.items() if name != "tokens"}


@pytest.fixture(scope="module")
def server(models):
    # Three batch sizes: fewer plans to warm up before the server listens (4 models).
    running = Server(models, "--max-batch-size", str(MAX_BATCH), "--batch-timeout-ms", "5",
                     "--max-body-bytes", "200000", "--allowed-batch-sizes", f"1,4,{MAX_BATCH}")
    yield running
    running.stop()
    assert "GL objects left on the GPU: {'buffer': 0, 'texture': 0, 'program': 0}" in running.output()


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=30) as session:
        yield session


def predict(client, name, body, version=None):
    where = f"/v1/models/{name}" + (f"/versions/{version}" if version else "") + ":predict"
    return client.post(where, content=json.dumps(body) if not isinstance(body, bytes) else body)


def test_bool_and_string_inputs(client, models):
    """A bool input takes JSON true / false and answers them; a text model takes raw strings
    (its StringLookup runs on the host) and answers as Keras did (the fixture's outputs);
    metadata names the dtypes as TF Serving does; the wrong JSON kind is a 400 naming it."""
    flags = [[True, False, True], [False, False, True]]
    answer = predict(client, "flagged", {"instances": flags})
    assert answer.status_code == 200, answer.text
    assert answer.json()["predictions"] == [[not v for v in row] for row in flags]
    data = np.load(models["tokens"].replace(".keras", ".npz"))
    answer = predict(client, "tokens", {"instances": data["input_0"].tolist()})
    assert answer.status_code == 200, answer.text
    np.testing.assert_allclose(answer.json()["predictions"], data["output_0"], atol=1e-6)
    signature = client.get("/v1/models/tokens/metadata").json()["metadata"]["signature_def"]
    inputs = signature["signature_def"]["serving_default"]["inputs"]
    assert [spec["dtype"] for spec in inputs.values()] == ["DT_STRING"]
    for name, body, says in (("flagged", [[1, 0, 1]], "takes true / false"),
                             ("tokens", [[1, 2, 3, 4]], "takes strings"),
                             ("mlp", [[True] * 6], "takes numbers")):
        refused = predict(client, name, {"instances": body})
        assert refused.status_code == 400 and says in refused.json()["error"], refused.text


def test_row_and_columnar_formats_answer_as_keras_and_kerasgl(client, models, keras_models):
    x = np.random.default_rng(0).normal(size=(5, 6)).astype(np.float32)
    expected = keras_models["mlp"].predict(x, verbose=0)
    with kg.load_model(models["mlp"]) as local:
        ours = local.predict(x, verbose=0)
    row = predict(client, "mlp", {"instances": x.tolist()})
    assert row.status_code == 200 and row.headers["content-type"] == "application/json"
    assert list(row.json()) == ["predictions"]
    np.testing.assert_allclose(as_float32(row.json()["predictions"]), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(as_float32(row.json()["predictions"]), ours, rtol=1e-6, atol=1e-7)
    columnar = predict(client, "mlp", {"signature_name": "serving_default", "inputs": x.tolist()})
    assert list(columnar.json()) == ["outputs"]
    np.testing.assert_array_equal(as_float32(columnar.json()["outputs"]),
                                  as_float32(row.json()["predictions"]))
    # One-input models take row objects keyed by the input name, and a columnar object too.
    named = predict(client, "mlp", {"instances": [{"features": r} for r in x.tolist()]})
    np.testing.assert_array_equal(as_float32(named.json()["predictions"]),
                                  as_float32(row.json()["predictions"]))
    keyed = predict(client, "mlp", {"inputs": {"features": x.tolist()}}, version=1)
    np.testing.assert_array_equal(as_float32(keyed.json()["outputs"]),
                                  as_float32(row.json()["predictions"]))


def test_two_inputs_two_outputs_in_both_formats(client, keras_models):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(3, 3, 2)).astype(np.float32)
    left, right = keras_models["two"].predict([a, b], verbose=0)
    row = predict(client, "two", {"instances": [{"a": a[i].tolist(), "b": b[i].tolist()}
                                                for i in range(3)]}).json()["predictions"]
    assert [sorted(r) for r in row] == [["left", "right"]] * 3
    np.testing.assert_allclose(as_float32([r["left"] for r in row]), left, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(as_float32([r["right"] for r in row]), right, rtol=1e-5, atol=1e-6)
    columnar = predict(client, "two", {"inputs": {"a": a.tolist(), "b": b.tolist()}}).json()
    assert sorted(columnar["outputs"]) == ["left", "right"]
    np.testing.assert_allclose(as_float32(columnar["outputs"]["left"]), left, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(as_float32(columnar["outputs"]["right"]), right, rtol=1e-5, atol=1e-6)


def test_int32_input_model(client, keras_models):
    ids = np.array([[1, 2, 3, 4, 5], [9, 0, 0, 7, 1]], np.int32)
    expected = keras_models["words"].predict(ids, verbose=0)
    answer = predict(client, "words", {"instances": ids.tolist()})
    np.testing.assert_allclose(as_float32(answer.json()["predictions"]), expected, rtol=1e-5, atol=1e-6)
    floats = predict(client, "words", {"instances": [[1.5, 2, 3, 4, 5]]})
    assert floats.status_code == 400 and "int32" in floats.json()["error"]


def test_status_and_metadata_as_tf_serving(client, keras_models):
    status = client.get("/v1/models/two")
    assert status.status_code == 200
    assert status.json() == {"model_version_status": [{"version": "1", "state": "AVAILABLE",
                                                       "status": {"error_code": "OK",
                                                                  "error_message": ""}}]}
    assert client.get("/v1/models/two/versions/1").json() == status.json()
    meta = client.get("/v1/models/two/metadata").json()
    assert meta["model_spec"] == {"name": "two", "signature_name": "", "version": "1"}
    signature = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert signature["method_name"] == "tensorflow/serving/predict"
    keras_model = keras_models["two"]
    for tensor in keras_model.inputs:
        info = signature["inputs"][tensor.name]
        assert info["dtype"] == "DT_FLOAT" and info["tensor_shape"]["unknown_rank"] is False
        assert [int(d["size"]) for d in info["tensor_shape"]["dim"]] == \
            [-1 if d is None else d for d in tensor.shape]
    assert sorted(signature["outputs"]) == ["left", "right"]
    assert [d["size"] for d in signature["outputs"]["right"]["tensor_shape"]["dim"]] == ["-1", "3"]
    words = client.get("/v1/models/words/metadata").json()
    words_inputs = words["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"]
    assert words_inputs["ids"]["dtype"] == "DT_INT32"


@pytest.mark.parametrize("path, method, code, words", [
    ("/v1/models/nope:predict", "POST", 404, "Servable not found for request: Latest(nope)"),
    ("/v1/models/mlp/versions/2:predict", "POST", 404, "Specific(mlp, 2)"),
    ("/v1/models/nope", "GET", 404, "Latest(nope)"),
    ("/v1/models/mlp/versions/7/metadata", "GET", 404, "Specific(mlp, 7)"),
    ("/v1/models", "GET", 400, "Missing model name"),
    ("/v1/models/mlp/labels/stable", "GET", 400, "Malformed request"),
    ("/v1/models/mlp:classify", "POST", 501, ":predict only"),
])
def test_unknown_models_and_paths(client, path, method, code, words):
    answer = client.request(method, path, content=b'{"instances": [[0, 0, 0, 0, 0, 0]]}')
    assert answer.status_code == code and words in answer.json()["error"]


ROW = [0.5] * 6
BAD_REQUESTS = [
    (b"{not json", "JSON Parse error"),
    (b"[1, 2]", "must be a JSON object"),
    (json.dumps({"instances": [ROW], "inputs": [ROW]}), 'Not both of "instances" and "inputs"'),
    (json.dumps({"examples": [ROW]}), 'Missing "inputs" or "instances" key'),
    (json.dumps({"instances": []}), "non-empty list"),
    (json.dumps({"signature_name": "other", "instances": [ROW]}), 'signature name: "other"'),
    (json.dumps({"instances": [[0.5] * 5]}), "Input 'features' of model 'mlp' has shape [1, 5]; "
                                             "the model expects [-1, 6] float32"),
    (json.dumps({"instances": [ROW, [0.5] * 5]}), "not a regular array of numbers"),
    (json.dumps({"instances": [["a"] * 6]}), "holds strings"),
    (json.dumps({"instances": [[True] + ROW[1:]]}), "holds true/false"),
    (b'{"instances": [[NaN, 0, 0, 0, 0, 0]]}', "holds NaN or infinity (first at index [0, 0]"),
    (b'{"instances": [[0, 0, Infinity, 0, 0, 0]]}', "holds NaN or infinity (first at index [0, 2]"),
    (json.dumps({"instances": [[1e300] * 6]}), "too large for float32"),
    (json.dumps({"instances": [{"features": ROW, "extra": 1}]}), "names ['extra']"),
    (json.dumps({"instances": [ROW] * (MAX_BATCH + 1)}), f"at most {MAX_BATCH} per request"),
    # Deeper than Python's parser recurses: a 400, not a RecursionError (500).
    (b'{"instances": ' + b"[" * 20000 + b"]" * 20000 + b"}", "nests lists or objects too deeply"),
]


@pytest.mark.parametrize("body, words", BAD_REQUESTS)
def test_bad_requests_get_400_naming_the_fault(client, body, words):
    answer = predict(client, "mlp", body if isinstance(body, bytes) else body.encode())
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["error"]


def test_bad_requests_of_a_two_input_model(client):
    one = predict(client, "two", {"instances": [[0.0] * 4]})
    assert one.status_code == 400 and "['a', 'b']" in one.json()["error"]
    lacking = predict(client, "two", {"inputs": {"a": [[0.0] * 4]}})
    assert lacking.status_code == 400 and "lacks input(s) ['b']" in lacking.json()["error"]
    uneven = predict(client, "two", {"inputs": {"a": [[0.0] * 4] * 2, "b": [[[0.0] * 2] * 3]}})
    assert uneven.status_code == 400 and "same number of examples" in uneven.json()["error"]


def test_request_body_limit_413(client):
    big = json.dumps({"instances": [[0.123456789] * 6] * 4000}).encode()      # > 200000 bytes
    assert len(big) > 200000
    answer = predict(client, "mlp", big)
    assert answer.status_code == 413 and "200000 bytes" in answer.json()["error"]
    # Still serving after it.
    assert predict(client, "mlp", {"instances": [ROW]}).status_code == 200


def test_load_batches_and_leaks_nothing(server, keras_models):
    """2000 requests from 20 concurrent clients: no server error, every answer right, batches of
    more than one request on average, and the GPU memory the same before and after."""
    samples = np.random.default_rng(2).random((50, 8, 8, 1), dtype=np.float32)
    expected = keras_models["digits"].predict(samples, verbose=0)
    bodies = [json.dumps({"instances": samples[i:i + 1].tolist()}).encode() for i in range(50)]

    async def load():
        limits = httpx.Limits(max_connections=20, max_keepalive_connections=20)
        async with httpx.AsyncClient(base_url=server.url, timeout=30, limits=limits) as session:
            before = (await session.get("/monitoring/prometheus/metrics")).text
            rss_before = rss_bytes(server.process.pid)
            answers, latencies = [None] * 2000, []

            async def one_client(c):
                for i in range(c, 2000, 20):
                    sent = time.perf_counter()
                    reply = await session.post("/v1/models/digits:predict", content=bodies[i % 50])
                    latencies.append(time.perf_counter() - sent)
                    answers[i] = (reply.status_code, reply.json())
            started = time.perf_counter()
            await asyncio.gather(*(one_client(c) for c in range(20)))
            seconds = time.perf_counter() - started
            after = (await session.get("/monitoring/prometheus/metrics")).text
            return before, answers, after, seconds, sorted(latencies), rss_before

    before, answers, after, seconds, latencies, rss_before = asyncio.run(load())
    rss_after = rss_bytes(server.process.pid)
    assert seconds < 60
    assert {code for code, _ in answers} == {200}
    for i in range(0, 2000, 37):
        np.testing.assert_allclose(as_float32(answers[i][1]["predictions"])[0], expected[i % 50],
                                   rtol=1e-4, atol=1e-5)
    batches = (metric(after, "kerasgl_serving_batch_size_count", model="digits")
               - metric(before, "kerasgl_serving_batch_size_count", model="digits"))
    examples = (metric(after, "kerasgl_serving_batch_size_sum", model="digits")
                - metric(before, "kerasgl_serving_batch_size_sum", model="digits"))
    assert examples == 2000 and 0 < batches < 2000
    print(f"REST: 2000 requests from 20 clients in {seconds:.1f} s ({2000 / seconds:.0f}/s), p50 "
          f"{1000 * latencies[1000]:.1f} ms, p99 {1000 * latencies[1980]:.1f} ms, mean batch "
          f"{examples / batches:.1f}, GPU bytes {metric(before, 'kerasgl_serving_gpu_bytes'):.0f} "
          f"-> {metric(after, 'kerasgl_serving_gpu_bytes'):.0f}, server RSS "
          f"{rss_before / 2**20:.0f} -> {rss_after / 2**20:.0f} MiB")
    assert examples / batches > 1.0
    served = (metric(after, "kerasgl_serving_requests_total", model="digits", status="200")
              - metric(before, "kerasgl_serving_requests_total", model="digits", status="200"))
    assert served == 2000
    assert metric(after, "kerasgl_serving_requests_total", model="digits", status="500") == 0
    # Memory flat: the plans of every batch size were compiled by the warm-up before listening.
    assert metric(after, "kerasgl_serving_gpu_bytes") == metric(before, "kerasgl_serving_gpu_bytes") > 0
    for kind in ("buffer", "texture", "program"):
        assert metric(after, "kerasgl_serving_gpu_objects", kind=kind) == \
            metric(before, "kerasgl_serving_gpu_objects", kind=kind)
    assert metric(after, "kerasgl_serving_queue_depth", model="digits") == 0


def test_answers_do_not_wait_for_delayed_acks():
    """The listening socket says it is TCP, so asyncio sets TCP_NODELAY on every connection it
    accepts: without it an answer's second write (the body) waits for the client's delayed ACK,
    ~40 ms per request."""
    import socket
    from kerasgl.serving import server as serve_module

    async def accept_one():
        listening = serve_module._listen("127.0.0.1", 0)
        accepted = asyncio.get_running_loop().create_future()

        async def on_connection(reader, writer):
            sock = writer.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()
        tcp = await asyncio.start_server(on_connection, sock=listening)
        _, writer = await asyncio.open_connection(*listening.getsockname()[:2])
        nodelay = await asyncio.wait_for(accepted, 10)
        writer.close()
        tcp.close()
        await tcp.wait_closed()
        return nodelay
    assert asyncio.run(accept_one()) != 0


def test_storage_dtype_float16_serves_keras_with_half_rounded_weights(models):
    """`serve --storage-dtype float16` loads every model with load_model's storage_dtype: a
    REST predict answers as Keras with the Dense kernels rounded to halves (within 1e-4), which
    differs from the float32 weights' answer by more than that."""
    import keras
    from keras_ref import answers_with_half_weights
    reference = keras.saving.load_model(models["mlp"])
    x = (np.random.default_rng(7).normal(size=(4, 6)) * 3).astype(np.float32)
    float32_answer, expected = answers_with_half_weights(reference, x)
    assert np.abs(expected - float32_answer).max() > 1e-3
    running = Server({"mlp": models["mlp"]}, "--storage-dtype", "float16",
                     "--max-batch-size", "4", "--allowed-batch-sizes", "1,4")
    try:
        with httpx.Client(base_url=running.url, timeout=30) as session:
            answer = predict(session, "mlp", {"instances": x.tolist()})
        assert answer.status_code == 200, answer.text
        np.testing.assert_allclose(as_float32(answer.json()["predictions"]), expected, atol=1e-4)
    finally:
        running.stop()
    assert "GL objects left on the GPU: {'buffer': 0, 'texture': 0, 'program': 0}" in running.output()


def test_activation_dtype_float16_serves_every_layer_rounded_to_halves(models):
    """`serve --activation-dtype float16` loads every model with load_model's activation_dtype:
    a REST predict answers each layer's output rounded to a half (every value exactly a
    float16, unlike the float32 answer), as the numpy emulation does."""
    import keras
    from half_activation_ref import assert_half_activations, dense_answers_with_half_activations
    reference = keras.saving.load_model(models["mlp"])
    x = (np.random.default_rng(7).normal(size=(4, 6)) * 3).astype(np.float32)
    running = Server({"mlp": models["mlp"]}, "--activation-dtype", "float16",
                     "--max-batch-size", "4", "--allowed-batch-sizes", "1,4")
    try:
        with httpx.Client(base_url=running.url, timeout=30) as session:
            answer = predict(session, "mlp", {"instances": x.tolist()})
        assert answer.status_code == 200, answer.text
        assert_half_activations(as_float32(answer.json()["predictions"]),
                                *dense_answers_with_half_activations(reference, x))
    finally:
        running.stop()
    assert "GL objects left on the GPU: {'buffer': 0, 'texture': 0, 'program': 0}" in running.output()


def test_activation_dtype_option_is_checked_before_any_model_loads(capsys):
    """--activation-dtype takes float32 (the default) or float16, as --storage-dtype does."""
    import argparse
    from kerasgl.serving import options
    parser = argparse.ArgumentParser(prog="kerasgl serve")
    options.add_arguments(parser)
    assert options.config_from_args(parser.parse_args(["m.keras"])).activation_dtype == "float32"
    args = parser.parse_args(["m.keras", "--activation-dtype", "float16"])
    config = options.config_from_args(args)
    assert (config.activation_dtype, config.storage_dtype) == ("float16", "float32")
    with pytest.raises(SystemExit):
        parser.parse_args(["m.keras", "--activation-dtype", "bfloat16"])
    assert "invalid choice: 'bfloat16'" in capsys.readouterr().err
    with pytest.raises(options.ServeSetupError, match="--activation-dtype"):
        options.check(options.ServeConfig(models={}, activation_dtype="half"))


def test_storage_dtype_option_is_checked_before_any_model_loads(capsys):
    """--storage-dtype takes float32 (the default) or float16; argparse refuses anything else,
    and a ServeConfig made in Python with another value fails the checks made before loading."""
    import argparse
    from kerasgl.serving import options
    parser = argparse.ArgumentParser(prog="kerasgl serve")
    options.add_arguments(parser)
    assert options.config_from_args(parser.parse_args(["m.keras"])).storage_dtype == "float32"
    args = parser.parse_args(["m.keras", "--storage-dtype", "float16"])
    assert options.config_from_args(args).storage_dtype == "float16"
    with pytest.raises(SystemExit):
        parser.parse_args(["m.keras", "--storage-dtype", "bogus"])
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
    with pytest.raises(options.ServeSetupError, match="--storage-dtype"):
        options.check(options.ServeConfig(models={}, storage_dtype="float64"))
