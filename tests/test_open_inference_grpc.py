"""The Open Inference Protocol over gRPC (`kerasgl serve --grpc-port`), as Triton's own Python
client sees it: tritonclient.grpc, unmodified (its stubs call inference.GRPCInferenceService),
against a real server on a loopback port. Health, metadata, inference equal to Keras (raw
tensors as the client sends them, and the typed contents fields), outputs by name, errors as
gRPC status codes, the committed descriptor set equal to the .proto compiled afresh, and a
bounded load test: 2000 requests from 24 concurrent clients, no error, batches of more than one
request on average, GPU memory the same before and after."""
import asyncio
import statistics
import time

import numpy as np
import pytest
from extras import require

require("uvicorn")
require("starlette")
httpx = require("httpx")
grpc = require("grpc")
triton = require("tritonclient.grpc")

import tritonclient.grpc.aio as triton_aio  # noqa: E402
from tritonclient.grpc import service_pb2, service_pb2_grpc  # noqa: E402
from tritonclient.utils import InferenceServerException  # noqa: E402

from serving_helpers import Server, build_models, metric, rss_bytes  # noqa: E402

REQUESTS, CLIENTS = 2000, 24


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return build_models(tmp_path_factory.mktemp("open_inference_grpc"))


@pytest.fixture(scope="module")
def keras_models(models):
    import keras
    return {name: keras.saving.load_model(models[name]) for name in ("mlp", "two", "digits")}


@pytest.fixture(scope="module")
def server(models):
    running = Server({name: models[name] for name in ("mlp", "two", "tokens", "digits")},
                     "--grpc-port", "0", "--max-batch-size", "16", "--allowed-batch-sizes",
                     "1,4,16", "--batch-timeout-ms", "5")
    yield running
    running.stop()
    assert "GL objects left on the GPU: {'buffer': 0, 'texture': 0, 'program': 0}" in running.output()


@pytest.fixture
def client(server):
    with_client = triton.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    yield with_client
    with_client.close()


def tensor(name, array, datatype):
    made = triton.InferInput(name, list(array.shape), datatype)
    made.set_data_from_numpy(array)
    return made


def test_health_and_metadata(client):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
    meta = client.get_server_metadata(as_json=True)
    assert meta["name"] == "kerasgl" and meta["extensions"] == ["binary_tensor_data"]
    two = client.get_model_metadata("two", as_json=True)
    assert two["versions"] == ["1"] and two["platform"] == "kerasgl"
    assert [(t["name"], t["datatype"], t["shape"]) for t in two["inputs"]] == \
        [("a", "FP32", ["-1", "4"]), ("b", "FP32", ["-1", "3", "2"])]
    assert [t["name"] for t in two["outputs"]] == ["left", "right"]
    with pytest.raises(InferenceServerException) as unknown:
        client.is_model_ready("nope")
    assert unknown.value.status() == "StatusCode.NOT_FOUND"


def test_infer_answers_as_keras(client, keras_models, models):
    rng = np.random.default_rng(9)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    result = client.infer("mlp", [tensor("features", x, "FP32")], request_id="g-1")
    np.testing.assert_allclose(result.as_numpy("scores"), keras_models["mlp"].predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    assert result.get_response().id == "g-1"
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(3, 3, 2)).astype(np.float32)
    left, right = keras_models["two"].predict([a, b], verbose=0)
    both = client.infer("two", [tensor("a", a, "FP32"), tensor("b", b, "FP32")])
    np.testing.assert_allclose(both.as_numpy("left"), left, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(both.as_numpy("right"), right, rtol=1e-5, atol=1e-6)
    only = client.infer("two", [tensor("a", a, "FP32"), tensor("b", b, "FP32")],
                        outputs=[triton.InferRequestedOutput("right")])
    assert [o.name for o in only.get_response().outputs] == ["right"]
    np.testing.assert_allclose(only.as_numpy("right"), right, rtol=1e-5, atol=1e-6)
    data = np.load(models["tokens"].replace(".keras", ".npz"))
    heads = client.infer("tokens", [tensor("tokens", data["input_0"].astype(object), "BYTES")])
    np.testing.assert_allclose(heads.as_numpy("head"), data["output_0"], atol=1e-6)


def test_typed_contents_through_the_clients_own_stub(server, keras_models):
    """Inputs in the typed fields (fp32_contents) rather than raw bytes, sent with tritonclient's
    generated stub and messages (Triton's superset of the protocol's .proto)."""
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)
    request = service_pb2.ModelInferRequest(model_name="mlp")
    request.inputs.add(name="features", datatype="FP32", shape=[2, 6]).contents.fp32_contents \
        .extend(x.ravel().tolist())
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        answer = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
    assert [tuple(o.shape) for o in answer.outputs] == [(2, 3)]
    scores = np.frombuffer(answer.raw_output_contents[0], np.float32).reshape(2, 3)
    np.testing.assert_allclose(scores, keras_models["mlp"].predict(x, verbose=0), rtol=1e-5,
                               atol=1e-6)


def test_errors_are_grpc_status_codes(client):
    x = np.zeros((1, 6), np.float32)
    for model, inputs, outputs, code, words in (
            ("mlp", [tensor("features", np.zeros((1, 5), np.float32), "FP32")], None,
             "INVALID_ARGUMENT", "[-1, 6]"),
            ("mlp", [tensor("features", x.astype(np.float64), "FP64")], None,
             "INVALID_ARGUMENT", "takes FP32"),
            ("mlp", [tensor("features", x, "FP32")], [triton.InferRequestedOutput("nope")],
             "INVALID_ARGUMENT", "no output(s)"),
            ("nope", [tensor("features", x, "FP32")], None, "NOT_FOUND", "nope")):
        with pytest.raises(InferenceServerException) as refused:
            client.infer(model, inputs, outputs=outputs)
        assert refused.value.status() == f"StatusCode.{code}" and words in \
            refused.value.message(), refused.value.message()


def test_the_committed_descriptor_set_is_the_proto_compiled(tmp_path):
    """protos/grpc_predict_v2.desc is what grpcio-tools makes of protos/grpc_predict_v2.proto
    (regenerate it after an edit: the command is in the .proto's header)."""
    require("grpc_tools")
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc
    from kerasgl.serving import protos
    fresh = tmp_path / "fresh.desc"
    folder = protos.PROTO.rsplit("/", 1)[0]
    assert protoc.main(["protoc", f"-I{folder}", f"--descriptor_set_out={fresh}",
                        protos.PROTO]) == 0
    with open(protos.DESCRIPTOR_SET, "rb") as committed:
        assert descriptor_pb2.FileDescriptorSet.FromString(fresh.read_bytes()) == \
            descriptor_pb2.FileDescriptorSet.FromString(committed.read())
    assert set(protos.methods()) == {"ServerLive", "ServerReady", "ModelReady", "ServerMetadata",
                                     "ModelMetadata", "ModelInfer"}


def test_load_over_grpc_batches_and_leaks_nothing(server, keras_models):
    samples = np.random.default_rng(3).random((50, 8, 8, 1), dtype=np.float32)
    expected = keras_models["digits"].predict(samples, verbose=0)

    def scrape():
        return httpx.get(server.url + "/monitoring/prometheus/metrics", timeout=30).text

    async def load():
        session = triton_aio.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        answers, latencies, errors = [None] * REQUESTS, [], []

        async def one_client(c):
            for i in range(c, REQUESTS, CLIENTS):
                started = time.perf_counter()
                try:
                    result = await session.infer("digits", [tensor("digit", samples[i % 50:i % 50 + 1],
                                                                   "FP32")], client_timeout=60)
                    answers[i] = result.as_numpy("probs")
                except InferenceServerException as exc:
                    errors.append(exc)
                latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        await asyncio.gather(*(one_client(c) for c in range(CLIENTS)))
        seconds = time.perf_counter() - started
        await session.close()
        return answers, latencies, errors, seconds

    before, rss_before = scrape(), rss_bytes(server.process.pid)
    answers, latencies, errors, seconds = asyncio.run(load())
    after, rss_after = scrape(), rss_bytes(server.process.pid)
    assert errors == [] and seconds < 60
    for i in range(0, REQUESTS, 37):
        np.testing.assert_allclose(answers[i][0], expected[i % 50], rtol=1e-4, atol=1e-5)

    def delta(name, **labels):
        return metric(after, name, **labels) - metric(before, name, **labels)
    batches = delta("kerasgl_serving_batch_size_count", model="digits")
    examples = delta("kerasgl_serving_batch_size_sum", model="digits")
    assert examples == REQUESTS and delta("kerasgl_serving_requests_total", model="digits",
                                          status="200") == REQUESTS
    latencies.sort()
    gpu_before, gpu_after = (metric(t, "kerasgl_serving_gpu_bytes") for t in (before, after))
    print(f"gRPC: {REQUESTS} requests from {CLIENTS} clients in {seconds:.1f} s "
          f"({REQUESTS / seconds:.0f}/s), {len(errors)} errors, p50 "
          f"{1000 * statistics.median(latencies):.1f} ms, p99 "
          f"{1000 * latencies[int(0.99 * len(latencies))]:.1f} ms, mean batch "
          f"{examples / batches:.1f}, GPU bytes {gpu_before:.0f} -> {gpu_after:.0f}, server RSS "
          f"{rss_before / 2**20:.0f} -> {rss_after / 2**20:.0f} MiB")
    assert examples / batches > 1.0
    assert gpu_after == gpu_before > 0
    for kind in ("buffer", "texture", "program"):
        assert metric(after, "kerasgl_serving_gpu_objects", kind=kind) == \
            metric(before, "kerasgl_serving_gpu_objects", kind=kind)
    assert metric(after, "kerasgl_serving_queue_depth", model="digits") == 0
