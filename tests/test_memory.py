"""Memory management semantics: dispose, tidy (its forms, nesting, returns, exceptions), keep,
memory() exactness, freeing without the garbage collector (checked with the driver), leak
tracking and the no_leaks fixture, a 10,000-iteration loop, the context's thread and device."""
import collections
import dataclasses
import gc
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import kerasgl as kg
from kerasgl.demo import data_path
from kerasgl.runtime import context, objects
from kerasgl.tensors import ownership
from kerasgl.runtime.driver_objects import driver_objects, is_live, mismatches

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def live_ids():
    return {id(t) for t in ownership.live_tensors()}


def usage(m=None):
    """memory() without programs (those are compiled on first use and stay, by design)."""
    m = m or kg.memory()
    return (m.num_tensors, m.num_bytes, m.gl_objects.get("buffer"), m.gl_objects.get("texture"))


def gl_names(tensors):
    return [(t._storage.gl.kind, t._storage.gl.glo) for t in tensors]


# -------------------------------------------------------------------------------------------------
# dispose
# -------------------------------------------------------------------------------------------------
def test_dispose_frees_now_and_twice_is_harmless():
    before = usage()
    t = kg.zeros([1000, 1000])
    assert kg.memory().num_bytes == before[1] + 4_000_000
    kind, glo = t._storage.gl.kind, t._storage.gl.glo
    t.dispose()
    assert not is_live(kind, glo)
    assert usage() == before
    t.dispose()
    kg.dispose(t)
    assert usage() == before


def test_dispose_nested_structures():
    before = usage()
    a, b, c, d = (kg.ones([2]) for _ in range(4))
    kg.dispose({"x": [a, (b, {"y": c})], "z": d, "n": 3, "s": "text"})
    assert all(t.is_disposed for t in (a, b, c, d))
    assert usage() == before


def test_dispose_calls_dispose_on_other_objects():
    class Model:
        disposed = False

        def dispose(self):
            self.disposed = True

    model = Model()
    kg.dispose(model)
    assert model.disposed


# -------------------------------------------------------------------------------------------------
# tidy and keep
# -------------------------------------------------------------------------------------------------
def test_tidy_context_manager_frees_all_but_kept():
    before = usage()
    with kg.tidy():
        a = kg.zeros([1000, 1000])
        b = kg.ones([1000, 1000])
        c = kg.keep(a + b)
        assert kg.memory().num_tensors == before[0] + 3
    assert a.is_disposed and b.is_disposed and not c.is_disposed
    assert np.array_equal(c.numpy(), np.ones((1000, 1000)))
    c.dispose()
    assert usage() == before


def test_tidy_function_form_returns_survive():
    def step(x, scale=1.0):
        y = x * scale
        return (y + 1).relu().mean(axis=0)

    x = kg.random_normal([64, 32], seed=1)
    before = live_ids()
    y = kg.tidy(step, x, scale=2.0)
    assert live_ids() - before == {id(y)}
    xs = x.numpy()
    np.testing.assert_allclose(y.numpy(), np.maximum(xs * 2 + 1, 0).mean(axis=0), rtol=1e-5, atol=1e-6)
    kg.dispose([x, y])


def test_tidy_decorator_and_zero_argument_function():
    @kg.tidy()
    def double(x):
        tmp = x + 0
        return tmp * 2

    @kg.tidy.wrap
    def make():
        kg.ones([3])
        return kg.zeros([3])

    x = kg.ones([3])
    before = live_ids()
    y = double(x)
    assert live_ids() - before == {id(y)} and np.array_equal(y.numpy(), [2, 2, 2])
    z = make()
    assert live_ids() - before == {id(y), id(z)}
    # tidy.run calls a function of no arguments at once (TF.js's tf.tidy(() => ...)).
    w = kg.tidy.run(lambda: kg.ones([2]) + 1)
    assert isinstance(w, kg.Tensor) and live_ids() - before == {id(y), id(z), id(w)}
    kg.dispose([x, y, z, w])


def test_tidy_runs_its_function_now_as_tf_tidy_does():
    """The memory guide's own form: `result = tidy(() => {...; return c})` runs at once and its
    loop body runs every time (a function passed alone is called, never decorated)."""
    calls = []

    def make():
        calls.append("make")
        kg.zeros([8])                      # not returned: freed at once
        return kg.ones([2]) * 3

    before = live_ids()
    result = kg.tidy(make)
    assert calls == ["make"] and isinstance(result, kg.Tensor)
    assert live_ids() - before == {id(result)} and np.array_equal(result.numpy(), [3, 3])
    with kg.load_model(data_path("digits_cnn.keras")) as model:
        steady = kg.memory().num_tensors
        for i in range(100):               # the guide's loop: a fresh input and output each time
            def step():
                inputs = kg.random_normal([1, 8, 8, 1], seed=i)
                output = model.predict(inputs)
                output.dispose()
            kg.tidy(step)
        assert kg.memory().num_tensors == steady
    result.dispose()


def test_tidy_decorates_only_when_asked():
    """@kg.tidy() and @kg.tidy.wrap decorate; a bare @kg.tidy is kg.tidy(f): it would call f at
    the definition, and for a function that needs arguments it says how to decorate instead."""
    calls = []

    @kg.tidy()
    def scaled(x=None, scale=2.0):
        calls.append("scaled")
        x = kg.ones([4]) if x is None else x
        return (x + 1) * scale

    assert calls == [] and scaled.__name__ == "scaled"
    zero = kg.zeros([4])
    before = live_ids()
    a, b = scaled(), scaled(zero, scale=5.0)
    assert calls == ["scaled", "scaled"] and live_ids() - before == {id(a), id(b)}
    np.testing.assert_array_equal(b.numpy(), [5, 5, 5, 5])
    with pytest.raises(kg.InputTypeError, match=r"@kg\.tidy\(\) or @kg\.tidy\.wrap"):
        @kg.tidy
        def needs(x):
            return x + 1
    kg.dispose([zero, a, b])


def test_tidy_returns_survive_in_any_container():
    """What a user returns survives wherever it sits: namedtuples, dataclasses, sets, objects'
    attributes and nested mixtures; everything else made inside is freed."""
    Pair = collections.namedtuple("Pair", "low high")

    @dataclasses.dataclass
    class Stats:
        mean: object
        extra: dict

    class Holder:
        def __init__(self, tensor):
            self.tensor = tensor
            self.note = "kept"

    x = kg.random_normal([16, 8], seed=3)

    def step():
        kg.ones([5])                                      # freed
        return (Pair(x.min(), x.max()),
                Stats(x.mean(axis=0), {"s": {x.sum()}}),
                Holder(x * 2))

    before = live_ids()
    pair, stats, holder = kg.tidy(step)
    (total,) = stats.extra["s"]
    survivors = {id(pair.low), id(pair.high), id(stats.mean), id(total), id(holder.tensor)}
    assert live_ids() - before == survivors
    np.testing.assert_allclose(holder.tensor.numpy(), x.numpy() * 2)
    kg.dispose([x, pair, stats, holder])
    assert live_ids() == before - {id(x)}


def test_tidy_refuses_a_returned_awaitable():
    async def later():
        return kg.ones([2])

    before = usage()
    with pytest.raises(kg.InputTypeError, match="awaitable"):
        kg.tidy(later)
    assert usage() == before and ownership.scope_depth() == 0


def test_named_tidy_names_its_tensors_in_leak_reports():
    with ownership.track_leaks():
        leaked = kg.tidy("preprocess", lambda: kg.ones([3]) + 1)
        with kg.tidy("block"):
            inner = kg.keep(kg.zeros([2]))
    assert "in tidy 'preprocess'" in leaked._created_at
    assert "in tidy 'block'" in inner._created_at
    kg.dispose([leaked, inner])


def test_returned_nested_structures_move_to_the_parent_scope():
    def inner():
        a, b, c = kg.ones([1]), kg.ones([2]), kg.ones([3])
        kg.ones([4])    # not returned: freed
        return {"list": [a, (b, 7)], "dict": {"c": c}}, "other"

    before = live_ids()
    with kg.tidy():
        result, other = kg.tidy.run(inner)
        tensors = [result["list"][0], result["list"][1][0], result["dict"]["c"]]
        assert other == "other" and result["list"][1][1] == 7
        assert live_ids() - before == {id(t) for t in tensors}
        assert all(id(t) in ownership._scopes()[-1].tensors for t in tensors)   # now the parent's
    assert all(t.is_disposed for t in tensors)   # ...and freed when the parent exits
    assert live_ids() == before


def test_scopes_nest():
    outer_kept = None
    with kg.tidy():
        a = kg.ones([2])
        with kg.tidy():
            b = kg.ones([2])
            with kg.tidy():
                c = kg.ones([2])
                outer_kept = kg.keep(kg.ones([5]))
            assert c.is_disposed and not b.is_disposed and not a.is_disposed
        assert b.is_disposed and not a.is_disposed
    assert a.is_disposed and not outer_kept.is_disposed
    outer_kept.dispose()


def test_returning_a_tensor_from_outside_keeps_its_owner():
    x = kg.ones([3])           # owned by no scope
    with kg.tidy():
        y = kg.tidy.run(lambda: x)  # returned but not made in the scope
        assert y is x
    assert not x.is_disposed
    x.dispose()


def test_keep_exempts_from_every_scope_and_returns_its_argument():
    with kg.tidy():
        with kg.tidy():
            pair = kg.keep([kg.ones([1]), kg.zeros([1])])
    assert not any(t.is_disposed for t in pair)
    kg.dispose(pair)


class Boom(Exception):
    pass


def test_exception_frees_everything_and_propagates_unchanged():
    before = usage()
    error = Boom("original")

    def body():
        kg.ones([10]); kg.keep(kg.ones([20])).dispose(); kg.zeros([30])
        raise error

    with pytest.raises(Boom) as caught:
        kg.tidy.run(body)
    assert caught.value is error and caught.value.args == ("original",)
    assert usage() == before and ownership.scope_depth() == 0

    with pytest.raises(Boom) as caught:
        with kg.tidy():
            kg.ones([10])
            with kg.tidy():
                kg.ones([10])
                raise error
    assert caught.value is error and usage() == before and ownership.scope_depth() == 0

    @kg.tidy()
    def failing(x):
        x + 1
        raise error

    x = kg.ones([3])
    with pytest.raises(Boom):
        failing(x)
    assert not x.is_disposed and kg.memory().num_tensors == before[0] + 1
    x.dispose()


def test_tidy_rejects_non_callables():
    with pytest.raises(kg.InputTypeError, match="function"):
        kg.tidy(3)
    with pytest.raises(TypeError, match="function"):
        kg.tidy.run(3)


# -------------------------------------------------------------------------------------------------
# memory() is exact
# -------------------------------------------------------------------------------------------------
def test_memory_counts_exactly_what_was_created():
    base = kg.memory()
    base_buffers = base.gl_objects.get("buffer", kg.KindUsage(0, 0))
    base_textures = base.gl_objects.get("texture", kg.KindUsage(0, 0))
    shapes = [(3, 5), (1000,), (7, 11, 13)]
    buffers = [kg.zeros(s) for s in shapes]
    textures = [kg.ones(s, storage="texture") for s in [(4, 4), (100,)]]
    view = buffers[0].reshape(15)
    m = kg.memory()
    buffer_bytes = 4 * (15 + 1000 + 7 * 11 * 13)
    texture_bytes = 4 * (16 + 100)
    assert m.num_tensors == base.num_tensors + 6
    assert m.num_bytes == base.num_bytes + buffer_bytes + texture_bytes   # the view adds nothing
    assert m.gl_objects["buffer"] == kg.KindUsage(base_buffers.count + 3, base_buffers.bytes + buffer_bytes)
    assert m.gl_objects["texture"] == kg.KindUsage(base_textures.count + 2, base_textures.bytes + texture_bytes)
    assert m.num_buffers == base_buffers.count + 3 and m.num_textures == base_textures.count + 2
    assert m.num_bytes_in_gpu == sum(u.bytes for u in m.gl_objects.values())
    # The driver agrees on every object and byte.
    found = driver_objects()
    assert found.count("buffer") == m.num_buffers and found.bytes["buffer"] == m.gl_objects["buffer"].bytes
    assert found.count("texture") == m.num_textures and found.bytes["texture"] == m.gl_objects["texture"].bytes
    assert "num_tensors=" in repr(m) and "buffers=" in repr(m)
    assert f"{m.num_tensors} tensor(s)" in str(m) and "buffer(s)" in str(m)
    kg.dispose([buffers, textures, view])
    assert usage() == usage(base)


# -------------------------------------------------------------------------------------------------
# No garbage collector involved; the driver confirms
# -------------------------------------------------------------------------------------------------
def test_gl_objects_die_at_scope_exit_without_gc_even_with_references_held():
    assert context.get_context().gc_mode is None
    held, names = [], []
    gc.disable()
    try:
        with kg.tidy():
            for storage in ("buffer", "texture"):
                for _ in range(5):
                    t = kg.random_normal([256, 256], storage=storage) * 2
                    held.append(t)
            handles = [t._storage.gl.handle for t in held]    # the moderngl objects, still referenced
            names = gl_names(held)
            assert all(is_live(kind, glo) for kind, glo in names)
        # Checked before anything else is allocated (the driver reuses freed names).
        assert not any(is_live(kind, glo) for kind, glo in names)
        registry = {(o.kind, o.glo) for o in objects.live_gl_objects()}
        assert not registry & set(names)
        assert all(t.is_disposed for t in held) and len(handles) == 10
        assert mismatches() == []
    finally:
        gc.enable()


def test_ten_thousand_tidy_iterations_leave_nothing_behind():
    x = kg.ones([4])
    kg.tidy.run(lambda: (x * 2.0 + 1.0).sum()).dispose()  # compile the programs first: they are meant to stay
    start, start_driver = kg.memory(), driver_objects().counts()
    for i in range(10_000):
        with kg.tidy():
            y = (x * float(i) + 1.0).sum()
            if i % 2500 == 0:
                assert y.numpy() == pytest.approx(4 * i + 4)
    assert kg.memory() == start
    assert driver_objects().counts() == start_driver
    x.dispose()


# -------------------------------------------------------------------------------------------------
# Leak tracking and the no_leaks fixture
# -------------------------------------------------------------------------------------------------
def make_leaky(n):
    return [kg.zeros([2, 2]) for _ in range(n)]


def test_leak_report_groups_by_site():
    before = live_ids()
    with kg.track_leaks():
        assert kg.leak_tracking_enabled()
        first = make_leaky(3)
        second = kg.ones([5])
        with kg.track_leaks(False):
            assert not kg.leak_tracking_enabled()
        assert kg.leak_tracking_enabled()
    report = kg.leak_report()
    line = make_leaky.__code__.co_firstlineno + 1
    assert f"3 created at {__file__}:{line} in <listcomp>" in report or \
           f"3 created at {__file__}:{line} in make_leaky" in report
    assert "3x [2, 2]" in report and "[5]" in report and "in test_leak_report_groups_by_site" in report
    kg.dispose([first, second])
    assert live_ids() == before


def test_leak_tracking_is_off_by_default_and_env_turns_it_on():
    code = ("import kerasgl as kg; t = kg.zeros([1]); "
            "print(kg.leak_tracking_enabled(), t._created_at is not None)")
    env = {k: v for k, v in os.environ.items() if k != "KERASGL_TRACK_LEAKS"}
    env["PYTHONPATH"] = REPO
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    on = subprocess.run([sys.executable, "-c", code], env={**env, "KERASGL_TRACK_LEAKS": "1"},
                        capture_output=True, text=True, timeout=60)
    assert off.stdout.split() == ["False", "False"], off.stderr
    assert on.stdout.split() == ["True", "True"], on.stderr


def test_no_leaks_fixture_fails_a_leaking_test(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest
        from kerasgl.testing import no_leaks  # noqa: F401

        @pytest.fixture(autouse=True)
        def _check(no_leaks):
            yield
    """))
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent("""
        import kerasgl as kg

        def test_clean():
            with kg.tidy():
                kg.ones([3]) + 1

        def test_leaks():
            a = kg.ones([3, 3])
            b = a + 1
            a.dispose()
    """))
    env = {**os.environ, "PYTHONPATH": REPO}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rE",
                          str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "2 passed, 1 error" in out   # the leak fails at teardown
    assert "The test left 1 tensor(s) alive." in out
    assert "test_leaky.py:10 in test_leaks: [3, 3]" in out


def test_testing_module_needs_pytest_only_for_the_fixture():
    """kerasgl.testing imports without pytest (no install of kerasgl declares it): its
    leaks_checked() works, and only the no_leaks fixture asks for pytest, with a clear error."""
    code = textwrap.dedent("""
        import sys
        sys.modules["pytest"] = None          # what a machine without pytest looks like
        import kerasgl as kg
        from kerasgl import testing
        with testing.leaks_checked():
            with kg.tidy():
                kg.ones([2]) + 1
        try:
            with testing.leaks_checked():
                leaked = kg.ones([3])
        except kg.LeakError as exc:
            print("LeakError:", str(exc).splitlines()[0], leaked.is_disposed)
        try:
            from kerasgl.testing import no_leaks
        except ImportError as exc:
            print("ImportError:", exc)
    """)
    run = _fresh_process(code)
    assert "LeakError: The test left 1 tensor(s) alive. True" in run.stdout, run.stdout + run.stderr
    assert "ImportError: kerasgl.testing.no_leaks is a pytest fixture and pytest is not installed" \
        in run.stdout, run.stdout + run.stderr


# -------------------------------------------------------------------------------------------------
# The context: thread, info, device selection, missing GL
# -------------------------------------------------------------------------------------------------
def test_using_the_context_from_another_thread_raises():
    t = kg.ones([4])
    errors = {}

    def other_thread():
        for name, use in [("zeros", lambda: kg.zeros([2])), ("numpy", t.numpy),
                          ("op", lambda: t + 1), ("dispose", t.dispose)]:
            try:
                use()
                errors[name] = None
            except Exception as exc:   # noqa: BLE001 - recorded and checked below
                errors[name] = exc

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    for name in ("zeros", "numpy", "op", "dispose"):
        assert isinstance(errors[name], kg.GLContextError), (name, errors[name])
        assert "belongs to the thread that created it" in str(errors[name])
    assert not t.is_disposed and np.array_equal(t.numpy(), np.ones(4))   # still fine here
    t.dispose()


def test_info_reports_driver_and_limits():
    info = kg.info()
    gl = context.driver()
    assert info.vendor and info.renderer and info.glsl_version
    major, minor = (int(v) for v in info.version.split()[0].split(".")[:2])
    assert (major, minor) >= (4, 3)
    lim = info.limits
    assert lim.max_ssbo_block_bytes == gl.get_integer(0x90DE) >= 2 ** 24
    assert lim.max_texture_size == gl.get_integer(0x0D33) >= 1024
    assert len(lim.max_work_group_size) == 3 and min(lim.max_work_group_size) >= 64
    assert len(lim.max_work_group_count) == 3 and min(lim.max_work_group_count) >= 65535
    assert lim.max_work_group_invocations >= 1024 and lim.max_shared_memory_bytes >= 32768
    text = str(info)
    assert info.renderer in text and str(lim.max_ssbo_block_bytes) in text


def test_select_device_after_creation_raises():
    context.get_context()
    with pytest.raises(kg.GLContextError, match="before the first GPU operation"):
        kg.select_device(0)


def test_device_env_var_must_be_an_integer(monkeypatch):
    monkeypatch.setattr(context, "_device_index", None)
    monkeypatch.setenv("KERASGL_EGL_DEVICE", "first")
    with pytest.raises(kg.GLContextError, match="KERASGL_EGL_DEVICE must be an integer"):
        context._requested_device()
    monkeypatch.setenv("KERASGL_EGL_DEVICE", "0")
    assert context._requested_device() == 0


def _fresh_process(code, **env):
    full_env = {**os.environ, "PYTHONPATH": REPO, **env}
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                          text=True, timeout=60)


def test_device_selection_in_a_fresh_process():
    ok = _fresh_process("import kerasgl as kg; kg.select_device(0); print(kg.info().egl_device)")
    assert ok.stdout.strip() == "0", ok.stderr
    code = ("import kerasgl as kg\ntry:\n    kg.zeros([1])\nexcept kg.GLContextError as e:\n"
            "    print('GLContextError:', e)")
    bad_env = _fresh_process(code, KERASGL_EGL_DEVICE="gpu0")
    assert "GLContextError: KERASGL_EGL_DEVICE must be an integer" in bad_env.stdout, bad_env.stderr
    missing = _fresh_process(code, KERASGL_EGL_DEVICE="99")
    assert "GLContextError: Could not create a headless OpenGL 4.3 context through EGL on device 99" \
        in missing.stdout, missing.stderr


def test_missing_gl_says_what_to_install():
    # An EGL vendor list that names no driver: what a machine without Mesa's EGL looks like.
    code = ("import kerasgl as kg\ntry:\n    kg.zeros([1])\nexcept kg.GLContextError as e:\n"
            "    print('GLContextError:', e)")
    run = _fresh_process(code, __EGL_VENDOR_LIBRARY_FILENAMES="/nonexistent/none.json")
    assert "GLContextError: Could not create a headless OpenGL 4.3 context" in run.stdout, run.stderr
    assert "apt-get install" in run.stdout and "libegl-mesa0" in run.stdout and "libgl1-mesa-dri" in run.stdout


def _pytest_without_gl(**env):
    full_env = {**os.environ, "PYTHONPATH": REPO, **env,
                "__EGL_VENDOR_LIBRARY_FILENAMES": "/nonexistent/none.json"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                           "tests/test_install.py"], cwd=REPO, env=full_env, capture_output=True,
                          text=True, timeout=120)


def test_without_gl_ci_fails_the_run_and_local_runs_skip():
    ci = _pytest_without_gl(CI="true")
    assert ci.returncode != 0 and "CI=true and no GL context" in ci.stdout + ci.stderr
    local = _pytest_without_gl(CI="")
    assert local.returncode == 0 and "1 skipped" in local.stdout and "no OpenGL 4.3 context" in local.stdout
