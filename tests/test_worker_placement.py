"""Where llvmpipe's compute workers wait during a call (kerasgl/devices/llvmpipe/placement.py).

Checked on the live driver through /proc: an eager dispatch of one work group huddles the workers
on the caller's CPU and leaves the caller's CPU mask as it was; the next larger dispatch puts
them back on their own CPUs; a plan's first replays try placements and then keep one, with
results bit-identical to eager execution and Keras's. The choice among placements is plain logic
on measured times, checked here with times given to it."""
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_ref import assert_close, keras, randomize_weights

import kerasgl as kg
from kerasgl.devices.llvmpipe import placement as worker_placement, threads as llvmpipe_threads
from kerasgl.devices.llvmpipe.placement import PlacementTrials

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_placement = pytest.mark.skipif(
    not worker_placement.available(),
    reason="llvmpipe with its workers pinned on 2+ CPUs only (elsewhere nothing is moved)")


def worker_masks():
    return {tid: os.sched_getaffinity(tid) for tid, _ in llvmpipe_threads.pinned_workers()}


def assert_workers_home():
    assert worker_placement.huddled_on() is None
    assert worker_masks() == {tid: {home} for tid, home in llvmpipe_threads.pinned_workers()}


@needs_placement
def test_a_one_group_dispatch_huddles_the_workers_and_a_large_one_spreads_them():
    mask = os.sched_getaffinity(0)
    with kg.tidy():
        a = np.arange(5, dtype=np.float32)
        assert np.array_equal((kg.tensor(a) + kg.tensor(a)).numpy(), a + a)    # one group
        assert os.sched_getaffinity(0) == mask
        cpu = worker_placement.huddled_on()
        assert cpu is not None and cpu in mask
        assert all(m == {cpu} for m in worker_masks().values())
        big = np.linspace(-1, 1, 1 << 16, dtype=np.float32)
        assert np.array_equal((kg.tensor(big) * kg.tensor(big)).numpy(), big * big)
        assert_workers_home()
        assert os.sched_getaffinity(0) == mask


@needs_placement
def test_plan_trials_end_in_a_choice_with_unchanged_results(tmp_path):
    inp = keras.Input((24,))
    h = keras.layers.Dense(16, activation="relu")(inp)
    h = keras.layers.Dense(16, activation="tanh")(h)
    model = keras.Model(inp, keras.layers.Dense(4)(h))
    randomize_weights(model, 3)
    path = str(tmp_path / "mlp.keras")
    model.save(path)
    x = np.random.default_rng(4).uniform(-1, 1, (2, 24)).astype("float32")
    expected = model.predict(x, verbose=0)
    mask = os.sched_getaffinity(0)
    with kg.load_model(path) as m:
        first = m.predict(x, verbose=0)
        assert_close(first, expected)
        for _ in range(3 + 3 * 2 * PlacementTrials.ROUNDS):   # recordings, then every trial
            assert np.array_equal(m.predict(x, verbose=0), first)
            assert os.sched_getaffinity(0) == mask
        plan = next(e.plan for e in m._plans._entries.values())
        assert plan.device.trials is None, "the trials should be over"
        (info,) = m.plan_info()
        assert info.placement.endswith(("dispatches huddled", "dispatches spread"))
        assert info.placement in str(info)
        # Whatever was chosen, every step huddled gives the same bits.
        plan.device.placed = plan.device.with_placement([True] * len(plan.steps))
        assert np.array_equal(m.predict(x, verbose=0), first)
        assert os.sched_getaffinity(0) == mask
        big = np.ones(1 << 16, np.float32)
        with kg.tidy():
            assert np.array_equal((kg.tensor(big) + kg.tensor(big)).numpy(), big + big)
        assert_workers_home()


def run_trials(trials, spread_steps, huddled_steps, totals):
    """Feed one trial's rounds: step times (spread or huddled as the trial places them)."""
    for total in totals:
        times = [h if flag else s for flag, s, h in zip(trials.current, spread_steps, huddled_steps)]
        trials.record(times, total)


def test_trials_with_no_short_step_keep_everything_spread():
    trials = PlacementTrials(2)
    run_trials(trials, [1e-3, 5e-3], [None, None], [7e-3, 6e-3])
    assert trials.done() and trials.choice == [False, False]


def test_trials_stop_when_the_short_steps_are_a_sliver_of_the_replay():
    trials = PlacementTrials(3)
    run_trials(trials, [1e-3, 5e-6, 8e-6], [None] * 3, [0.9e-3, 1e-3])   # 13 us of 0.9 ms
    assert trials.done() and trials.choice == [False, False, False]


def test_trials_try_short_steps_huddled_then_the_clear_winners_and_keep_the_fastest_replay():
    spread = [1e-3, 50e-6, 10e-6, None]         # a long step, two short ones, a copy
    huddled = [None, 20e-6, 9.5e-6, None]       # the last short one gains under a tenth
    for totals, expected in (((2.0e-3, 1.0e-3, 1.5e-3), [False, True, True, False]),
                             ((2.0e-3, 1.5e-3, 1.0e-3), [False, True, False, False]),
                             ((1.0e-3, 1.5e-3, 2.0e-3), [False, False, False, False])):
        trials = PlacementTrials(4)
        run_trials(trials, spread, huddled, [totals[0]] * PlacementTrials.ROUNDS)
        assert trials.current == [False, True, True, False]        # the candidates
        run_trials(trials, spread, huddled, [totals[1]] * PlacementTrials.ROUNDS)
        assert trials.current == [False, True, False, False]       # the clear winners
        run_trials(trials, spread, huddled, [totals[2]] * PlacementTrials.ROUNDS)
        assert trials.done() and trials.choice == expected


def test_no_placement_when_pinning_is_off():
    code = ("import kerasgl as kg, numpy as np; from kerasgl.devices.llvmpipe import placement as w; "
            "t = kg.tensor(np.ones(3, np.float32)); (t + t).numpy(); "
            "print(w.available(), w.huddled_on())")
    env = dict(os.environ, PYTHONPATH=ROOT, KERASGL_PIN_THREADS="0")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "None"]
