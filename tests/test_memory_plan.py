"""kerasgl.plans.memory_plan: greedy-by-size sharing of buffers between tensors with disjoint lifetimes
(pure Python; checked against brute-force properties on random lifetimes)."""
import numpy as np
import pytest

from kerasgl.plans.memory_plan import Usage, assign, naive_bytes, peak_live_bytes


def random_usages(rng, count, steps):
    usages = []
    for i in range(count):
        first = int(rng.integers(0, steps))
        last = int(rng.integers(first, min(steps, first + 1 + rng.integers(1, 6))))
        usages.append(Usage(i, int(rng.integers(1, 1000)) * 4, first, last))
    return usages


def live_bytes_by_brute_force(usages):
    last_step = max(u.last for u in usages)
    return max(sum(u.size for u in usages if u.first <= s <= u.last) for s in range(last_step + 1))


def check_valid(usages, result):
    by_key = {u.key: u for u in usages}
    assert set(result.buffer_of) == set(by_key)
    tenants = {}
    for key, index in result.buffer_of.items():
        tenants.setdefault(index, []).append(by_key[key])
    assert sorted(tenants) == list(range(len(result.sizes)))
    for index, group in tenants.items():
        assert all(u.size <= result.sizes[index] for u in group)
        assert result.sizes[index] == max(u.size for u in group)   # no buffer larger than needed
        for a in group:
            for b in group:
                if a is not b:
                    assert a.last < b.first or b.last < a.first, f"{a} and {b} overlap in buffer {index}"


@pytest.mark.parametrize("seed", range(20))
def test_random_lifetimes_never_share_a_buffer_while_both_alive(seed):
    rng = np.random.default_rng(seed)
    usages = random_usages(rng, count=int(rng.integers(1, 60)), steps=40)
    result = assign(usages)
    check_valid(usages, result)
    assert peak_live_bytes(usages) == live_bytes_by_brute_force(usages)
    assert peak_live_bytes(usages) <= result.total_bytes <= naive_bytes(usages)


def test_a_chain_of_layers_needs_at_most_three_buffers():
    # A sequential network: tensor i is written at step i and read at step i + 1, so it overlaps
    # only its two neighbours: at most two buffers are busy when it is placed, and a third is free.
    rng = np.random.default_rng(0)
    usages = [Usage(i, int(rng.integers(1, 100)) * 4, i, i + 1) for i in range(30)]
    result = assign(usages)
    check_valid(usages, result)
    assert len(result.sizes) <= 3
    assert result.total_bytes <= 3 * max(u.size for u in usages) < naive_bytes(usages)


def test_largest_tensor_takes_the_best_fitting_free_buffer():
    usages = [Usage("big", 400, 0, 1), Usage("mid", 200, 0, 1), Usage("small", 150, 2, 3)]
    result = assign(usages)
    check_valid(usages, result)
    # "small" fits both free buffers; the smaller (mid's) is the best fit.
    assert result.buffer_of["small"] == result.buffer_of["mid"]
    assert result.total_bytes == 600


def test_a_skip_connection_keeps_its_buffer_alive():
    # x lives from step 0 to 3 (read by an Add at step 3); a and b are made and used in between.
    usages = [Usage("x", 100, 0, 3), Usage("a", 100, 1, 2), Usage("b", 100, 2, 3)]
    result = assign(usages)
    check_valid(usages, result)
    assert len({result.buffer_of[k] for k in ("x", "a", "b")}) == 3


def test_bad_usages_are_refused():
    with pytest.raises(ValueError):
        Usage("x", 4, 3, 2)
    with pytest.raises(ValueError):
        assign([Usage("x", 4, 0, 1), Usage("x", 4, 2, 3)])
    assert assign([]).sizes == [] and peak_live_bytes([]) == 0
