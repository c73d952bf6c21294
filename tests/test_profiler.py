"""The GPU profiler (kerasgl/profiler/): `with kg.profile() as p: model.predict(x)`.

Per-dispatch GPU times (GL timer queries) must add up to no more than the predict they were
measured in, and to most of it where the GPU is what takes the time; eager calls and plan
replays are both recorded (a replay step by step); the trace is valid Trace Event JSON; the
queries are GL objects counted and freed like the others, and none exists without a profile."""
import io
import math
import json
import os
import time
from contextlib import redirect_stdout

import numpy as np
import pytest
from extras import in_ci, require

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl import cli
from kerasgl.ops import dispatch
from kerasgl.runtime import objects
from kerasgl.runtime.driver_objects import driver_objects

L = keras.layers
WARM_UP = 3
# The convolution kernels: llvmpipe's, and the implicit GEMM GPUs run (the plain policy).
CONV_KERNELS = ("conv2d.comp", "conv_gemm.comp")


@pytest.fixture(scope="module", autouse=True)
def peak_cache(tmp_path_factory):
    """table() and plot() read the device's peak (kerasgl/profiler/peak.py), measured on first use
    and cached: here once for the module, in a cache folder of its own, not the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


def conv_model(tmp_path, name="profiled"):
    """Convolutions big enough that the GPU's work, not Python, is most of a replay."""
    model = keras.Sequential([keras.Input((48, 48, 8)), L.Conv2D(32, 3, activation="relu"),
                              L.Conv2D(32, 3, padding="same"), L.GlobalAveragePooling2D(),
                              L.Dense(5)], name=name)
    randomize_weights(model, 0)
    path = os.path.join(str(tmp_path), f"{name}.keras")
    model.save(path)
    return model, path


def x_of(batch=4):
    return np.random.default_rng(1).uniform(-1, 1, (batch, 48, 48, 8)).astype("float32")


def queries_alive() -> int:
    return sum(1 for obj in objects.live_gl_objects() if obj.kind == "query")


def profiled(model, x):
    with kg.profile() as p:
        start = time.perf_counter()
        result = model.predict(x, verbose=0)
        wall = time.perf_counter() - start
    return p, result, wall


def test_gpu_times_add_up_to_the_predict_they_were_measured_in(tmp_path):
    keras_model, path = conv_model(tmp_path)
    x = x_of()
    with kg.load_model(path) as model:
        eager, eager_result, eager_wall = profiled(model, x)     # the first call: eager
        for _ in range(WARM_UP):
            model.predict(x, verbose=0)
        replay, replay_result, replay_wall = profiled(model, x)
    if not replay.gpu_timing:
        pytest.skip(f"no GPU timestamps here: {replay.note}")
    for p, wall in ((eager, eager_wall), (replay, replay_wall)):
        gpu = [e.gpu_time for e in p.events]
        assert all(t is not None and t >= 0 for t in gpu)
        assert 0 < sum(gpu) <= wall
        assert p.gpu_time == pytest.approx(sum(gpu))
        # The rows of each table split the same whole.
        for by in ("layer", "kernel"):
            rows = p.rows(by)
            assert sum(r.calls for r in rows) == len(p.events)
            assert sum(r.gpu_time for r in rows) == pytest.approx(p.gpu_time)
            assert sum(r.share for r in rows) == pytest.approx(1.0)
        # Each event's GPU span lies inside the block, in order.
        starts = [e.gpu_start for e in p.events]
        assert starts == sorted(starts) and starts[0] >= 0
        assert starts[-1] + p.events[-1].gpu_time <= p.wall_time + 1e-3
    # A replay is dispatches and little else: most of its time is the GPU's.
    assert replay.gpu_time >= 0.3 * replay_wall, (replay.gpu_time, replay_wall)
    expected = keras_model.predict(x, verbose=0)
    assert_close(eager_result, expected)
    assert_close(replay_result, expected)


def test_eager_runs_and_plan_replays_are_both_recorded_with_their_layers(tmp_path):
    _, path = conv_model(tmp_path)
    x = x_of(2)
    with kg.load_model(path) as model:
        first, _, _ = profiled(model, x)
        for _ in range(WARM_UP):
            model.predict(x, verbose=0)
        info = model.plan_info()[0]
        assert info.status == "planned"
        later, _, _ = profiled(model, x)
        layer_names = {layer.name for layer in model.layers}
    assert first.events and not any(e.replayed for e in first.events)
    assert later.events and all(e.replayed and e.plan.startswith("plan") for e in later.events)
    # One event per replayed step: every dispatch of the plan, named as in the eager call.
    assert sum(1 for e in later.events if e.kind == "dispatch") == info.dispatches
    assert [(e.layer, e.kernel) for e in first.events if e.kind == "dispatch"] == \
        [(e.layer, e.kernel) for e in later.events if e.kind == "dispatch"]
    assert {e.layer for e in later.events} <= layer_names
    conv = next(e for e in first.events if e.layer == model.layers[0].name)
    assert conv.kernel.startswith(CONV_KERNELS) and conv.groups
    assert (2, 48, 48, 8) in conv.shapes
    # Eager: each op allocates its output and frees what is done with; the call ends where it
    # started. A replay allocates nothing.
    assert sum(e.bytes_allocated for e in first.events) > 0
    assert first.bytes_at_end == first.bytes_at_start
    assert first.peak_bytes > first.bytes_at_start
    assert later.allocated_total == 0 and later.peak_bytes == later.bytes_at_start
    assert all(e.live_bytes == later.bytes_at_start for e in later.events)


def test_the_trace_is_trace_event_json_with_gpu_cpu_and_memory_tracks(tmp_path):
    _, path = conv_model(tmp_path)
    with kg.load_model(path) as model:
        p, _, _ = profiled(model, x_of(2))
    trace = os.path.join(str(tmp_path), "trace.json")
    p.export_chrome_trace(trace)
    with open(trace) as f:
        document = json.load(f)
    events = document["traceEvents"]
    for event in events:
        for key in ("ph", "ts", "pid", "tid", "name"):
            assert key in event, event
    complete = [e for e in events if e["ph"] == "X"]
    assert all(isinstance(e["dur"], (int, float)) and e["dur"] >= 0 for e in complete)
    tracks = {e["args"]["name"]: e["tid"] for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"CPU: dispatch calls", "layers"} <= set(tracks)
    by_track = {name: [e for e in complete if e["tid"] == tid] for name, tid in tracks.items()}
    assert len(by_track["CPU: dispatch calls"]) == len(p.events)
    if p.gpu_timing:
        assert len(by_track["GPU (timer queries)"]) == len(p.events)
    counters = [e for e in events if e["ph"] == "C"]
    assert len(counters) == len(p.events) + 2
    assert all(isinstance(e["args"]["live bytes"], int) for e in counters)
    assert max(e["args"]["live bytes"] for e in counters) == p.peak_bytes


def test_queries_are_gl_objects_freed_at_the_end_and_none_exist_without_a_profile(tmp_path):
    _, path = conv_model(tmp_path)
    x = x_of(2)
    with kg.load_model(path) as model:
        for _ in range(WARM_UP + 1):
            model.predict(x, verbose=0)          # eager and replayed calls, no profile
        assert queries_alive() == 0 and "query" not in kg.memory().gl_objects
        assert driver_objects().count("query") == 0
        assert not dispatch.profilers
        with kg.profile() as p:
            model.predict(x, verbose=0)
            if p.gpu_timing:
                held = kg.memory().gl_objects["query"].count
                assert held >= 2 * len(p.events) and held == queries_alive()
                assert driver_objects().count("query") == held
                assert kg.gl_objects()["driver"]["query"]["count"] == held
        assert queries_alive() == 0 and driver_objects().count("query") == 0
        assert "query" not in kg.memory().gl_objects and not dispatch.profilers
        with kg.profile(gpu_timing=False) as cpu_only:
            model.predict(x, verbose=0)
            assert queries_alive() == 0
        assert cpu_only.events and all(e.gpu_time is None for e in cpu_only.events)
        headers = [line for line in cpu_only.table().split("\n")
                   if line.lstrip().startswith("calls")]
        assert cpu_only.gpu_time is None and "timing off" in cpu_only.note
        assert len(headers) == 2 and all("CPU total" in h and "GPU" not in h for h in headers)


def test_an_exception_inside_still_ends_the_profile_and_frees_its_queries(tmp_path):
    a = kg.ones([64])
    with pytest.raises(ZeroDivisionError):
        with kg.profile() as p:
            with kg.tidy():
                (a + 1).relu()
            1 / 0
    a.dispose()
    assert not dispatch.profilers and queries_alive() == 0
    assert [e.layer for e in p.events] == [None, None]       # ops outside any model
    assert "(no layer)" in p.table()
    with pytest.raises(RuntimeError, match="runs once"):
        with p:
            pass


def test_table_sorts_and_refuses_unknown_keys(tmp_path):
    _, path = conv_model(tmp_path)
    with kg.load_model(path) as model:
        p, _, _ = profiled(model, x_of(2))
    for key in ("gpu_time", "cpu_time", "calls"):
        values = [getattr(r, key) or 0 for r in p.rows("kernel", key)]
        assert values == sorted(values, reverse=True)
    assert [r.name for r in p.rows("layer", "name")] == sorted(r.name for r in p.rows("layer"))
    text = p.table(sort_by="cpu_time", limit=2)
    assert "By layer (sorted by cpu_time" in text and "first 2 shown" in text
    with pytest.raises(ValueError, match="sort_by"):
        p.table(sort_by="speed")


def test_plot_draws_a_png(tmp_path):
    require("matplotlib")
    _, path = conv_model(tmp_path)
    with kg.load_model(path) as model:
        p, _, _ = profiled(model, x_of(2))
    out = os.path.join(str(tmp_path), "profile.png")
    assert p.plot(out) == out
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_profile_command_prints_the_table_and_writes_trace_and_plot(tmp_path):
    _, path = conv_model(tmp_path)
    trace = os.path.join(str(tmp_path), "out.json")
    argv = ["profile", path, "--batch-size", "2", "--trace", trace]
    if _has_matplotlib():
        argv += ["--plot", os.path.join(str(tmp_path), "out.png")]
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(argv) == 0
    text = out.getvalue()
    assert "By layer" in text and "By kernel" in text and any(k in text for k in CONV_KERNELS)
    assert "replayed from execution plans" in text and "0 eager" in text    # warmed up first
    with open(trace) as f:
        assert json.load(f)["traceEvents"]
    if _has_matplotlib():
        assert os.path.getsize(os.path.join(str(tmp_path), "out.png")) > 0


def _has_matplotlib() -> bool:
    """Whether the plot can be drawn: under CI, where the test extra installs matplotlib, it must
    be (require fails the run), so the plot assertion always runs there."""
    if in_ci():
        require("matplotlib")
        return True
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# -- the work of each dispatch, and the device's peaks ---------------------------------------------



def a_peak():
    from kerasgl.profiler import peak
    return peak.DevicePeak(100.0, 10.0, 0.1, 0.1, 110.0, 11.0, 7, "test device")


def test_a_matmul_and_a_convolution_carry_their_work_and_invocations():
    """flops = 2*M*N*K exactly for a matmul (on its own kernel and on the convolution kernel),
    2 * outputs * taps * input channels for a convolution; bytes = every operand and the output
    once; invocations = work groups x the program's work group size."""
    from kerasgl.ops import conv, matmul as mm
    rng = np.random.default_rng(2)
    cases = {"small": (20, 12, 8), "large": (256, 128, 96)}     # large: M*K*N >= AS_CONV_MIN_WORK
    with kg.profile(gpu_timing=False) as p:
        with kg.tidy():
            for M, K, N in cases.values():
                mm.matmul(kg.tensor(rng.standard_normal((M, K), dtype=np.float32)),
                          kg.tensor(rng.standard_normal((K, N), dtype=np.float32)))
            x = kg.tensor(rng.standard_normal((2, 9, 7, 8), dtype=np.float32))
            kernel = conv.pack_conv(rng.standard_normal((3, 3, 8, 12)), None, 1, kg.tensor)
            conv.conv2d(x, kernel, padding=((1, 1), (1, 1)))
            depthwise = conv.pack_depthwise(rng.standard_normal((3, 3, 8, 1)), None, kg.tensor)
            conv.depthwise_conv2d(x, depthwise, strides=(2, 2))
    products = [e for e in p.events if e.flops is not None][:2]
    for event, (M, K, N) in zip(products, cases.values()):
        assert event.flops == 2 * M * N * K
        assert event.bytes >= 4 * (M * K + K * N + M * N)
        assert event.bytes <= 4 * (M * K + K * N + M * N + N)      # a bias, where the path adds one
    conv_event = [e for e in p.events if e.kernel.startswith(CONV_KERNELS)][-1]
    assert conv_event.flops == 2 * (2 * 9 * 7 * 12) * 9 * 8
    assert conv_event.bytes == 4 * (2 * 9 * 7 * 8 + 9 * 8 * 12 + 12 + 2 * 9 * 7 * 12)
    dw = next(e for e in p.events if e.kernel.startswith("depthwise_conv2d.comp"))
    assert dw.flops == 2 * (2 * 4 * 3 * 8) * 9
    for event in p.events:
        assert len(event.local_size) == 3 and all(s >= 1 for s in event.local_size)
        assert event.invocations == math.prod(event.local_size) * math.prod(event.groups)


def test_replayed_steps_carry_the_work_their_ops_declared_when_recorded(tmp_path):
    _, path = conv_model(tmp_path)
    x = x_of(2)
    with kg.load_model(path) as model:
        eager, _, _ = profiled(model, x)
        for _ in range(WARM_UP):
            model.predict(x, verbose=0)
        replay, _, _ = profiled(model, x)
    assert all(e.replayed for e in replay.events)

    def work(profile):
        return [(e.kernel, e.local_size, e.invocations, e.flops, e.bytes)
                for e in profile.events if e.kind == "dispatch"]
    assert work(replay) == work(eager)
    first = next(e for e in replay.events if e.kernel.startswith(CONV_KERNELS))
    assert first.flops == 2 * (2 * 46 * 46 * 32) * 9 * 8


def test_the_table_shows_rates_and_shares_of_the_device_peak(tmp_path):
    _, path = conv_model(tmp_path)
    with kg.load_model(path) as model:
        for _ in range(WARM_UP):
            model.predict(x_of(2), verbose=0)
        p, _, _ = profiled(model, x_of(2))
    peak = a_peak()
    text = p.table(peak=peak)
    assert f"device peak: {peak}" in text
    headers = [line for line in text.split("\n") if line.lstrip().startswith("calls")]
    assert len(headers) == 2
    assert all(c in h for h in headers for c in ("GFLOP/s", "GB/s", "%FMA", "%BW"))
    conv_row = next(r for r in p.rows("kernel") if r.name.startswith(CONV_KERNELS))
    events = [e for e in p.events if e.kernel == conv_row.name]
    seconds = sum(p.time_of(e) for e in events)
    assert conv_row.flops == sum(e.flops for e in events)
    assert conv_row.gflops == pytest.approx(conv_row.flops / seconds / 1e9)
    fma, bandwidth = conv_row.of_peak(peak)
    assert fma == pytest.approx(conv_row.gflops / 100.0)
    assert bandwidth == pytest.approx(conv_row.gbps / 10.0)
    line = next(line for line in text.split("\n") if line.endswith(conv_row.name))
    assert f"{fma:.1%}" in line
    assert "%FMA" not in p.table(peak=False)
