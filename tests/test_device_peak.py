"""The device's peaks (kerasgl/profiler/peak.py): kerasgl's own FMA-chain and streaming-copy
shaders measure a positive float32 FMA throughput and memory bandwidth, a second measurement's
fastest run agrees with the first's within REPEATABLE, the result is cached per device and read
back (and printed by `kerasgl info`), and the FMA figure beats a naive shader's (one scalar
chain: latency-bound)."""
import io
import json
from contextlib import redirect_stdout

import pytest

import kerasgl as kg
from kerasgl import cli
from kerasgl.profiler import peak
from kerasgl.runtime import tuning

# The fastest runs of two measurements on one shared 2-core machine (CI's) differ by up to this
# fraction of the larger: other processes take the CPUs llvmpipe's threads run on for part of a
# run (they only ever slow one down, so the fastest runs are compared, in up to ATTEMPTS tries).
REPEATABLE = 0.5
ATTEMPTS = 3


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One measurement for the module (a few seconds on llvmpipe), written to a cache of its own."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(cache))
        found = kg.device_peak()
    return found, cache


def test_peaks_are_positive_and_say_how_they_were_measured(measured):
    found, _ = measured
    assert found.gflops > 0 and found.gbps > 0
    assert found.runs == peak.RUNS and found.device == tuning.device_key()
    assert 0 <= found.gflops_spread and 0 <= found.gbps_spread
    assert tuple(found.fma_shape) in peak.FMA_SHAPES
    assert tuple(found.copy_shape) in peak.COPY_SHAPES
    text = str(found)
    assert "GFLOP/s" in text and "GB/s" in text and "spread" in text


def test_a_second_measurement_agrees_within_the_stated_spread(measured):
    found, _ = measured
    for first, again in ((found.gflops_best, lambda: peak.fma_rates(*found.fma_shape, runs=3)),
                         (found.gbps_best, lambda: peak.copy_rates(3, *found.copy_shape))):
        seen = []
        for _ in range(ATTEMPTS):
            seen.append(max(again()) / 1e9)
            if abs(first - seen[-1]) <= REPEATABLE * max(first, seen[-1]):
                break
        else:
            pytest.fail(f"first measurement's best {first:.2f}, then {seen}")


def test_the_fma_peak_beats_a_naive_shader(measured):
    found, _ = measured
    naive = max(peak.fma_rates(*peak.NAIVE_SHAPE, runs=3)) / 1e9
    assert found.gflops_best > 1.5 * naive, (found.gflops_best, naive)


def test_the_peak_is_cached_per_device_and_read_back(measured, monkeypatch):
    found, cache = measured
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    saved = json.loads((cache / "kerasgl" / peak.CACHE_FILE).read_text())
    assert list(saved) == [tuning.device_key()]
    assert peak.cached() == found

    def not_again(*args, **kwargs):
        raise AssertionError("measured again though cached")
    monkeypatch.setattr(peak, "measure", not_again)
    assert kg.device_peak() == found
    # `kerasgl info` prints the cached figures and measures nothing.
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["info"]) == 0
    assert f"device peak: {found}" in out.getvalue()


def test_refresh_measures_again_and_a_bad_cache_is_measured_over(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "kerasgl").mkdir()
    (tmp_path / "kerasgl" / peak.CACHE_FILE).write_text(
        json.dumps({tuning.device_key(): {"gflops": "not a number"}}))
    assert peak.cached() is None
    fake = peak.DevicePeak(1.0, 2.0, 0.1, 0.1, 1.1, 2.2, 3, tuning.device_key())
    monkeypatch.setattr(peak, "measure", lambda runs=peak.RUNS: fake)
    assert kg.device_peak() == fake and peak.cached() == fake
    assert kg.device_peak(refresh=True) == fake
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["info", "--peak"]) == 0
    assert "device peak: float32 FMA 1.0 GFLOP/s" in out.getvalue()


def test_info_without_a_cached_peak_says_how_to_measure_it(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(peak, "measure", lambda runs=peak.RUNS: pytest.fail("info measured"))
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["info"]) == 0
    assert "device peak: not measured yet" in out.getvalue()
