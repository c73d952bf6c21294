"""`kerasgl serve` under faults, on a server whose batches wait 1.5 s for company (so a request
stays queued long enough to act on): a full queue answers 503 at once, a client that disconnects
(mid-body, or while queued) costs no GPU work, and SIGTERM answers the request in flight before
the process ends with every GL object released."""
import json
import signal
import socket
import threading
import time

import numpy as np
import pytest
from extras import require

httpx = require("httpx")
require("uvicorn")
require("starlette")

from serving_helpers import Server, as_float32, build_models, metric, wait_until  # noqa: E402

WAIT_MS = 1500
ROW = [0.25, -1.0, 0.5, 2.0, 0.0, 1.5]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return build_models(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def slow(models):
    running = Server({"mlp": models["mlp"]}, "--max-queue", "2", "--batch-timeout-ms",
                     str(WAIT_MS), "--max-batch-size", "32", "--no-warm-up")
    yield running
    running.stop()


def metrics(server) -> str:
    return httpx.get(server.url + "/monitoring/prometheus/metrics", timeout=10).text


def post(server, body, results, i):
    started = time.perf_counter()
    reply = httpx.post(server.url + "/v1/models/mlp:predict", content=json.dumps(body), timeout=30)
    results[i] = (reply.status_code, reply.json(), time.perf_counter() - started)


def raw_request(port: int, body: bytes, declared: int | None = None) -> socket.socket:
    """A POST written by hand on a socket (so that the test can walk away from it)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (f"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {declared or len(body)}\r\n\r\n")
    sock.sendall(head.encode() + body)
    return sock


def test_a_full_queue_answers_503_at_once(slow):
    results = [None] * 5
    threads = [threading.Thread(target=post, args=(slow, {"instances": [ROW]}, results, i))
               for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
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


def test_sigterm_answers_the_request_in_flight_then_exits(slow, models):
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
