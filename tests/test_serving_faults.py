"""`kerasgl serve` under faults, on a server whose batches wait 1.5 s for company (so a request
stays queued long enough to act on, and requests sent together share a batch): a full queue
(in requests, rows or bytes) answers 503 at once and before it reads a body, connections past
--max-connections get 503, a client that disconnects (mid-body, or while queued) or whose own
deadline passes costs no GPU work, a request that fails on the GPU fails alone (400 naming its
input and value; a fault of the server's: 500 "internal error" and a request id, the details in
the log), options are checked before any model loads, and SIGTERM answers the request in flight
before the process ends with every GL object released. Long GPU jobs (deadlines, the drain's
bound, metrics meanwhile, the GPU watchdog) are in test_serving_long_jobs.py."""
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from extras import require

httpx = require("httpx")
require("uvicorn")
require("starlette")

from serving_helpers import REPO, Server, as_float32, build_models, metric, wait_until  # noqa: E402

WAIT_MS = 1500
ROW = [0.25, -1.0, 0.5, 2.0, 0.0, 1.5]      # 24 bytes as float32
MAX_CONNECTIONS = 8


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return build_models(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def slow(models):
    # The queue: 2 requests, 3 rows, 60 bytes (two and a half rows of the MLP) per model.
    running = Server({name: models[name] for name in ("mlp", "words", "tokens")},
                     "--max-queue", "2", "--max-queue-rows", "3", "--max-queue-bytes", "60",
                     "--batch-timeout-ms", str(WAIT_MS), "--max-batch-size", "32", "--no-warm-up",
                     "--max-connections", str(MAX_CONNECTIONS), "--grpc-port", "0")
    yield running
    running.stop()


def metrics(server) -> str:
    return httpx.get(server.url + "/monitoring/prometheus/metrics", timeout=10).text


def post(server, body, results, i, model="mlp"):
    started = time.perf_counter()
    reply = httpx.post(server.url + f"/v1/models/{model}:predict", content=json.dumps(body),
                       timeout=30)
    results[i] = (reply.status_code, reply.json(), time.perf_counter() - started)


def posted_together(server, requests: list) -> list:
    """[(status, JSON, seconds)] of (model, body) requests sent at once, from threads."""
    results = [None] * len(requests)
    threads = [threading.Thread(target=post, args=(server, body, results, i, model))
               for i, (model, body) in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def batches_run(server, model="mlp") -> float:
    return metric(metrics(server), "kerasgl_serving_batch_size_count", model=model)


def raw_request(port: int, body: bytes, declared: int | None = None) -> socket.socket:
    """A POST written by hand on a socket (so that the test can walk away from it)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (f"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {declared or len(body)}\r\n\r\n")
    sock.sendall(head.encode() + body)
    return sock


def read_reply(sock: socket.socket, timeout: float) -> bytes:
    """What the server sends on `sock` until it closes it or `timeout` passes."""
    sock.settimeout(timeout)
    reply = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    except socket.timeout:
        pass
    return reply


def test_a_full_queue_answers_503_at_once(slow):
    results = posted_together(slow, [("mlp", {"instances": [ROW]})] * 5)
    codes = sorted(code for code, _, _ in results)
    assert codes == [200, 200, 503, 503, 503], results
    for code, answer, seconds in results:
        if code == 503:
            assert "queue" in answer["error"] and "full" in answer["error"]
            assert seconds < WAIT_MS / 1000          # refused at once, not after waiting
        else:
            assert len(answer["predictions"]) == 1
    text = metrics(slow)
    assert metric(text, "kerasgl_serving_requests_total", model="mlp", status="503") == 3
    assert metric(text, "kerasgl_serving_queue_depth", model="mlp") == 0


def test_a_client_leaving_costs_nothing(slow):
    before = metrics(slow)
    batches = metric(before, "kerasgl_serving_batch_size_count", model="mlp")
    left = metric(before, "kerasgl_serving_requests_total", model="mlp", status="499")
    # Mid-body: 10 bytes of the 1000 announced, then gone.
    raw_request(slow.port, b'{"instances', declared=1000).close()
    # Queued: the whole request sent, then gone while it waits for its batch.
    queued = raw_request(slow.port, json.dumps({"instances": [ROW]}).encode())
    assert wait_until(lambda: metric(metrics(slow), "kerasgl_serving_queue_depth", model="mlp") == 1)
    queued.close()
    assert wait_until(lambda: metric(metrics(slow), "kerasgl_serving_requests_total", model="mlp",
                                     status="499") == left + 2)
    time.sleep(WAIT_MS / 1000 + 0.3)            # past the batch's deadline
    after = metrics(slow)
    assert metric(after, "kerasgl_serving_batch_size_count", model="mlp") == batches   # no GPU run
    assert metric(after, "kerasgl_serving_queue_depth", model="mlp") == 0
    assert metric(after, "kerasgl_serving_requests_total", model="mlp", status="500") == 0
    results = [None]
    post(slow, {"instances": [ROW, ROW]}, results, 0)
    assert results[0][0] == 200 and len(results[0][1]["predictions"]) == 2


def test_a_full_queue_refuses_before_reading_the_body(slow):
    """With the queue full, a request is refused from its headers alone: its body (1000 bytes
    announced) is never sent, and the 503 comes anyway."""
    threads_done = []
    filler = threading.Thread(target=lambda: threads_done.append(
        posted_together(slow, [("mlp", {"instances": [ROW]})] * 2)))
    filler.start()
    assert wait_until(lambda: metric(metrics(slow), "kerasgl_serving_queue_depth", model="mlp") == 2)
    started = time.perf_counter()
    sock = raw_request(slow.port, b"", declared=1000)
    try:
        reply = read_reply(sock, timeout=WAIT_MS / 1000 / 2)
    finally:
        sock.close()
    assert reply.startswith(b"HTTP/1.1 503"), reply
    assert b"queue" in reply and time.perf_counter() - started < WAIT_MS / 1000
    filler.join(30)
    assert sorted(code for code, _, _ in threads_done[0]) == [200, 200]


def test_the_queue_is_bounded_in_rows_and_bytes(slow):
    """Two rows wait: two more would pass 3 rows (503), one more would pass 60 bytes (503), and a
    request of three rows (72 bytes) could never fit the queue (413)."""
    waiting = [None]
    first = threading.Thread(target=post, args=(slow, {"instances": [ROW, ROW]}, waiting, 0))
    first.start()
    assert wait_until(lambda: metric(metrics(slow), "kerasgl_serving_queue_depth", model="mlp") == 1)
    rows, nbytes = [None], [None]
    post(slow, {"instances": [ROW, ROW]}, rows, 0)
    post(slow, {"instances": [ROW]}, nbytes, 0)
    first.join(30)
    assert rows[0][0] == 503 and "--max-queue-rows" in rows[0][1]["error"], rows
    assert nbytes[0][0] == 503 and "--max-queue-bytes" in nbytes[0][1]["error"], nbytes
    assert waiting[0][0] == 200 and len(waiting[0][1]["predictions"]) == 2
    whole = [None]
    post(slow, {"instances": [ROW] * 3}, whole, 0)
    assert whole[0][0] == 413 and "72 bytes" in whole[0][1]["error"], whole


def test_connections_past_the_limit_get_503(slow):
    """--max-connections (uvicorn's limit_concurrency): with that many connections open, a
    request on one more is refused at once; once they close, requests are served again."""
    held = [socket.create_connection(("127.0.0.1", slow.port), timeout=10)
            for _ in range(MAX_CONNECTIONS)]
    try:
        refused = httpx.get(slow.url + "/v1/models/mlp", timeout=10)
    finally:
        for sock in held:
            sock.close()
    assert refused.status_code == 503, refused.text
    assert wait_until(lambda: httpx.get(slow.url + "/v1/models/mlp", timeout=10).status_code == 200)


def test_a_request_that_fails_on_the_gpu_fails_alone(slow, models):
    """An Embedding index out of range is checked on the GPU, so it passes validation and fails
    the batch it joined: the batch runs again in halves, the request at fault gets a 400 naming
    the input and the value, the other its answer."""
    import keras
    good, bad = [[1, 2, 3, 4, 5]], [[1, 2, 99, 4, 5]]
    expected = keras.saving.load_model(models["words"]).predict(np.array(good, np.int32), verbose=0)
    before = batches_run(slow, "words")
    (good_code, good_answer, _), (bad_code, bad_answer, _) = posted_together(
        slow, [("words", {"instances": good}), ("words", {"instances": bad})])
    assert good_code == 200, good_answer
    np.testing.assert_allclose(as_float32(good_answer["predictions"]), expected, rtol=1e-5, atol=1e-6)
    assert bad_code == 400, bad_answer
    assert "Input 'ids' of model 'words'" in bad_answer["error"] and "99" in bad_answer["error"]
    assert batches_run(slow, "words") == before + 1           # the good request's run


def test_a_fault_of_the_server_is_an_internal_error_with_a_request_id(slow):
    """A lone UTF-16 surrogate (valid JSON, "\\ud800") makes the text model's host-side lookup
    raise UnicodeEncodeError, which is no error kerasgl raises about an input: a fault of the
    server's. Its client gets "internal error" and a request id, never the exception (the log
    has it under that id); the request it was batched with gets its answer."""
    good = {"instances": [["a", "b", "c", "d"]]}
    bad = {"instances": [["a", "\ud800", "c", "d"]]}
    (good_code, good_answer, _), (bad_code, bad_answer, _) = posted_together(
        slow, [("tokens", good), ("tokens", bad)])
    assert good_code == 200 and len(good_answer["predictions"]) == 1, good_answer
    assert bad_code == 500, bad_answer
    found = re.fullmatch(r"internal error \(request id ([0-9a-f]{16}); the server's log has the "
                         r"details\)", bad_answer["error"])
    assert found, bad_answer
    assert wait_until(lambda: found.group(1) in slow.output())
    logged = slow.output()[slow.output().index(found.group(1)):]
    assert "UnicodeEncodeError" in logged and "UnicodeEncodeError" not in bad_answer["error"]


def test_the_clients_own_deadline_drops_its_work(slow):
    """tritonclient's timeouts: over HTTP the request's "timeout" parameter (microseconds) ends
    it with 504, over gRPC its deadline with DEADLINE_EXCEEDED; either way the request, still
    waiting for company in the queue, costs no GPU work."""
    http_client = require("tritonclient.http")
    grpc_client = require("tritonclient.grpc")
    from tritonclient.utils import InferenceServerException
    row = np.array([ROW], np.float32)
    before = batches_run(slow)
    over_http = http_client.InferenceServerClient(f"127.0.0.1:{slow.port}")
    tensor = http_client.InferInput("features", [1, 6], "FP32")
    tensor.set_data_from_numpy(row)
    started = time.perf_counter()
    with pytest.raises(InferenceServerException) as http_error:
        over_http.infer("mlp", [tensor], timeout=300_000)
    assert http_error.value.status() == "504" and time.perf_counter() - started < 1.2
    over_http.close()
    over_grpc = grpc_client.InferenceServerClient(f"127.0.0.1:{slow.grpc_port}")
    tensor = grpc_client.InferInput("features", [1, 6], "FP32")
    tensor.set_data_from_numpy(row)
    with pytest.raises(InferenceServerException) as grpc_error:
        over_grpc.infer("mlp", [tensor], client_timeout=0.3)
    assert grpc_error.value.status() == "StatusCode.DEADLINE_EXCEEDED"
    over_grpc.close()
    time.sleep(WAIT_MS / 1000 + 0.3)           # past the batches' deadlines
    assert batches_run(slow) == before
    assert metric(metrics(slow), "kerasgl_serving_queue_depth", model="mlp") == 0


def test_options_are_checked_before_any_model_loads(tmp_path):
    """A bad option is reported before the models load: here the model file is not a model at
    all, and the error is the option's (loading it first would have said ModelFileError)."""
    not_a_model = tmp_path / "notes.keras"
    not_a_model.write_text("not a model")
    done = subprocess.run([sys.executable, "-m", "kerasgl.cli", "serve", "--port", "0",
                           "--model", f"m={not_a_model}", "--max-batch-size", "8",
                           "--allowed-batch-sizes", "1,4"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "allowed batch sizes" in done.stderr and "ModelFileError" not in done.stderr


def test_a_grpc_port_in_use_ends_the_start_cleanly(models):
    """The gRPC port is taken: the server says so in one line, exits 1, and leaves nothing on the
    GPU (the models it loaded are disposed, the context closed)."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        done = subprocess.run([sys.executable, "-m", "kerasgl.cli", "serve", "--port", "0",
                               "--grpc-port", str(taken.getsockname()[1]), "--no-warm-up",
                               "--model", f"mlp={models['mlp']}"], cwd=REPO, capture_output=True,
                              text=True, timeout=120)
    finally:
        taken.close()
    assert done.returncode == 1, done.stderr
    assert "ServeSetupError" in done.stderr and "for gRPC" in done.stderr
    assert "GL objects left on the GPU: {'buffer': 0, 'texture': 0, 'program': 0}" in done.stdout


def test_sigterm_answers_the_request_in_flight_then_exits(slow, models):
    """Last: it stops the module's server."""
    import keras
    expected = keras.saving.load_model(models["mlp"]).predict(np.array([ROW], np.float32), verbose=0)
    results = [None]
    thread = threading.Thread(target=post, args=(slow, {"instances": [ROW]}, results, 0))
    thread.start()
    assert wait_until(lambda: metric(metrics(slow), "kerasgl_serving_queue_depth", model="mlp") == 1)
    slow.terminate()
    time.sleep(0.5)
    with pytest.raises(OSError):                 # no new connections once draining
        socket.create_connection(("127.0.0.1", slow.port), timeout=2).close()
    thread.join(30)
    code, answer, _ = results[0]
    assert code == 200
    np.testing.assert_allclose(as_float32(answer["predictions"]), expected, rtol=1e-5, atol=1e-6)
    assert slow.wait(30) == -signal.SIGTERM
    assert "GL objects left on the GPU: {'buffer': 0, 'texture': 0, 'program': 0}" in slow.output()
