"""Tensors and the plain tensor ops against numpy: creation, random numbers, elementwise ops,
reductions, reshape, transpose, both storages, limits, disposed tensors, the program cache."""
import itertools
import math

import numpy as np
import pytest

import kerasgl as kg
from kerasgl.runtime import context, objects, shaders
from kerasgl.runtime.driver_objects import is_live

STORAGES = ("buffer", "texture")
rng = np.random.default_rng(1234)


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# -------------------------------------------------------------------------------------------------
# Creation and properties
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
def test_tensor_from_numpy_round_trips(storage):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    t = kg.tensor(a, storage=storage)
    assert (t.shape, t.dtype, t.size, t.nbytes, t.ndim, t.storage) == ((3, 4, 5), "float32", 60, 240, 3, storage)
    assert np.array_equal(t.numpy(), a) and np.array_equal(np.asarray(t), a)
    t.dispose()


@pytest.mark.parametrize("storage", STORAGES)
def test_dtypes_follow_keras_conventions(storage):
    f = kg.tensor(np.arange(6, dtype=np.float64), storage=storage)
    i = kg.tensor(np.arange(6, dtype=np.int64) - 3, storage=storage)
    b = kg.tensor(np.array([True, False]), storage=storage)
    assert (f.dtype, i.dtype, b.dtype) == ("float32", "int32", "bool")
    assert i.numpy().dtype == np.int32 and np.array_equal(i.numpy(), np.arange(6) - 3)
    assert b.numpy().dtype == np.bool_ and np.array_equal(b.numpy(), [True, False])
    kg.dispose([f, i, b])
    with pytest.raises(kg.ShapeError, match="float32, int32 or bool"):
        kg.tensor(np.zeros(3, np.complex64))
    with pytest.raises(kg.ShapeError, match="storage"):
        kg.zeros([2], storage="disk")


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_zeros_ones_fill(storage, dtype):
    for make, want in ((kg.zeros([2, 3], dtype, storage), np.zeros((2, 3))),
                       (kg.ones([2, 3], dtype, storage), np.ones((2, 3))),
                       (kg.fill([5], -7, dtype, storage), np.full(5, -7))):
        assert make.dtype == dtype and make.storage == storage
        got = make.numpy()
        assert got.dtype == np.dtype(dtype) and np.array_equal(got, want)
        make.dispose()


def test_zero_size_and_scalar_tensors():
    e = kg.zeros([0, 3])
    s = kg.tensor(np.float32(2.5))
    assert e.size == 0 and e.numpy().shape == (0, 3)
    assert s.shape == () and s.numpy() == np.float32(2.5)
    r = s * 2
    assert r.numpy() == 5.0
    kg.dispose([e, s, r])


# -------------------------------------------------------------------------------------------------
# Random numbers: Philox4x32-10 on the GPU
# -------------------------------------------------------------------------------------------------
def philox4x32_10(counter, key):
    """Reference Philox4x32-10 in Python (Salmon et al. 2011)."""
    m0, m1, w0, w1, mask = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85, 0xFFFFFFFF
    c, k = list(counter), list(key)
    for _ in range(10):
        p0, p1 = m0 * c[0], m1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & mask, (p0 >> 32) ^ c[3] ^ k[1], p0 & mask]
        k = [(k[0] + w0) & mask, (k[1] + w1) & mask]
    return c


def test_philox_reference_matches_published_vector():
    # Known-answer test from the Random123 distribution (kat_vectors: philox4x32 10 rounds).
    assert philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_random_uniform_is_exactly_philox():
    seed = 0x1234_5678_9ABC_DEF0
    t = kg.random_uniform([4 * 50 + 3], seed=seed)
    got = t.numpy()
    t.dispose()
    key = [seed & 0xFFFFFFFF, seed >> 32]
    want = [w >> 8 for block in range(51) for w in philox4x32_10([block, 0, 0, 0], key)][: got.size]
    assert np.array_equal(got, np.array(want, dtype=np.float64) / 2 ** 24)


@pytest.mark.parametrize("make", [kg.random_normal, kg.random_uniform])
def test_random_same_seed_same_numbers(make):
    a, b, c = make([1001], seed=7), make([1001], seed=7), make([1001], seed=8)
    assert np.array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    d, e = make([1001]), make([1001])   # no seed: fresh numbers each call
    assert not np.array_equal(d.numpy(), e.numpy())
    kg.dispose([a, b, c, d, e])


def test_random_normal_statistics():
    n = 1_000_000
    t = kg.random_normal([1000, 1000], mean=2.0, stddev=3.0, seed=11)
    x = t.numpy().astype(np.float64).ravel()
    t.dispose()
    z = (x - 2.0) / 3.0
    # Bounds of ~6 standard errors: a wrong generator fails them, a right one essentially never.
    assert abs(z.mean()) < 6 / math.sqrt(n)
    assert abs(z.std() - 1.0) < 6 / math.sqrt(2 * n)
    assert abs(np.mean(np.abs(z) < 1.0) - 0.682689) < 6 * math.sqrt(0.2166 / n)
    assert abs(np.mean(z > 2.0) - 0.0227501) < 6 * math.sqrt(0.0222 / n)
    # Neighbours are independent (Box-Muller pairs included).
    assert abs(np.corrcoef(z[0::2], z[1::2])[0, 1]) < 6 / math.sqrt(n / 2)
    assert abs(np.corrcoef(z[0::4], z[2::4])[0, 1]) < 6 / math.sqrt(n / 4)


def test_random_uniform_statistics():
    n = 1_000_000
    t = kg.random_uniform([n], minval=-2.0, maxval=3.0, seed=5)
    x = t.numpy().astype(np.float64)
    t.dispose()
    assert x.min() >= -2.0 and x.max() < 3.0
    assert abs(x.mean() - 0.5) < 6 * 5 / math.sqrt(12 * n)
    assert abs(x.var() - 25 / 12) < 6 * 25 / math.sqrt(180 * n)
    hist, _ = np.histogram(x, bins=50, range=(-2, 3))
    chi2 = np.sum((hist - n / 50) ** 2 / (n / 50))
    assert chi2 < 49 + 6 * math.sqrt(2 * 49)


@pytest.mark.parametrize("storage", STORAGES)
def test_random_texture_storage_same_numbers(storage):
    a = kg.random_normal([3, 70], seed=3)
    b = kg.random_normal([3, 70], seed=3, storage=storage)
    assert b.storage == storage and np.array_equal(a.numpy(), b.numpy())
    kg.dispose([a, b])


def test_random_argument_errors():
    with pytest.raises(ValueError, match="maxval > minval"):
        kg.random_uniform([3], minval=1, maxval=1)
    with pytest.raises(ValueError, match="stddev"):
        kg.random_normal([3], stddev=-1)
    with pytest.raises(kg.ShapeError):
        kg.random_normal([3], dtype="int32")


# -------------------------------------------------------------------------------------------------
# Elementwise ops, both storages
# -------------------------------------------------------------------------------------------------
UNARY = {"neg": np.negative, "exp": np.exp, "sqrt": np.sqrt, "abs": np.abs, "log": np.log,
         "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
         "tanh": np.tanh}
BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops(name, storage):
    a = rng.standard_normal((5, 7)).astype(np.float32)
    if name in ("sqrt", "log"):
        a = np.abs(a) + 0.1
    t = kg.tensor(a, storage=storage)
    r = getattr(t, name)()
    assert r.storage == storage
    close(r.numpy(), UNARY[name](a.astype(np.float64)))
    kg.dispose([t, r])


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)),
                                    ((2, 1, 3), (4, 1)), ((1,), (6, 2))])
def test_binary_ops_broadcast_like_numpy(shapes, storage):
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32) + 3.0
    ta, tb = kg.tensor(a, storage=storage), kg.tensor(b, storage=storage)
    with kg.tidy():
        for op, ref in BINARY.items():
            got = eval(f"ta {op} tb")
            assert got.storage == storage
            close(got.numpy(), ref(a.astype(np.float64), b))
        close(ta.maximum(tb).numpy(), np.maximum(a, b))
        close(ta.minimum(tb).numpy(), np.minimum(a, b))
        close((2.0 - ta).numpy(), 2.0 - a)
        close((1.5 / tb).numpy(), 1.5 / b.astype(np.float64))
        close((ta * 3).numpy(), a * 3.0)
        close((tb ** 2).numpy(), b.astype(np.float64) ** 2)
    kg.dispose([ta, tb])


def test_mixed_storages_work_together():
    a = rng.standard_normal((3, 4)).astype(np.float32)
    tb, tt = kg.tensor(a), kg.tensor(a, storage="texture")
    r = tb + tt
    close(r.numpy(), 2 * a)
    kg.dispose([tb, tt, r])


def test_broadcast_mismatch_is_a_shape_error():
    a, b = kg.zeros([2, 3]), kg.zeros([4])
    with pytest.raises(kg.ShapeError, match=r"\[2, 3\] and \[4\]"):
        a + b
    kg.dispose([a, b])


# -------------------------------------------------------------------------------------------------
# Reductions
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reductions_over_every_axis_combination(op, storage):
    a = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    t = kg.tensor(a, storage=storage)
    ref = a.astype(np.float64)
    combos = [None, -1, 2] + [c for k in range(0, 5) for c in itertools.combinations(range(4), k)]
    with kg.tidy():
        for axes in combos:
            for keepdims in (False, True):
                r = getattr(t, op)(axis=axes, keepdims=keepdims)
                want = getattr(ref, op)(axis=axes, keepdims=keepdims)
                assert r.shape == want.shape and r.storage == storage, (axes, keepdims)
                close(r.numpy(), want, rtol=1e-5, atol=1e-6)
    t.dispose()


def test_module_level_reductions():
    a = rng.standard_normal((6, 8)).astype(np.float32)
    t = kg.tensor(a)
    with kg.tidy():
        close(kg.reduce_sum(t, 1).numpy(), a.sum(1, dtype=np.float64))
        close(kg.reduce_mean(t, 0, keepdims=True).numpy(), a.mean(0, keepdims=True, dtype=np.float64))
        close(kg.reduce_max(t).numpy(), a.max())
        close(kg.reduce_min(t, (0, 1)).numpy(), a.min())
    t.dispose()


@pytest.mark.parametrize("shape,axis", [((1_000_000,), None), ((1000, 1000), 0), ((1000, 1000), 1),
                                        ((4, 250_000), 1), ((250_000, 4), 0)])
def test_large_sums_stay_accurate(shape, axis):
    # Values with a large common offset: a plain float32 running sum of 1e6 of them drifts by
    # ~1e-2 relative; the compensated tree must stay within 1e-6.
    a = (rng.random(shape) + 100.0).astype(np.float32)
    t = kg.tensor(a)
    for op in ("sum", "mean"):
        r = getattr(t, op)(axis=axis)
        close(r.numpy(), getattr(a.astype(np.float64), op)(axis=axis), rtol=1e-6, atol=0)
        r.dispose()
    t.dispose()


def test_reduction_special_values():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    t = kg.tensor(a)
    with kg.tidy():
        for op in ("max", "min", "sum", "mean"):
            np.testing.assert_array_equal(getattr(t, op)(axis=1).numpy(), getattr(a, op)(axis=1))
        e = kg.zeros([0, 3])
        np.testing.assert_array_equal(e.sum(axis=0).numpy(), np.zeros(3))
        with pytest.warns(RuntimeWarning):
            want = np.zeros((0, 3), np.float32).mean(axis=0)
        np.testing.assert_array_equal(e.mean(axis=0).numpy(), want)
        assert e.sum(axis=1).shape == (0,)
        with pytest.raises(kg.ShapeError, match="empty"):
            e.max(axis=0)
        with pytest.raises(kg.ShapeError, match="out of range"):
            t.sum(axis=2)
        with pytest.raises(kg.ShapeError, match="Repeated"):
            t.sum(axis=(1, -1))
        np.testing.assert_array_equal(t.sum(axis=()).numpy(), a.sum(axis=()))
    t.dispose()


# -------------------------------------------------------------------------------------------------
# Reshape and transpose
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
def test_reshape_is_a_view(storage):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    t = kg.tensor(a, storage=storage)
    before = kg.memory()
    r = t.reshape(3, -1)
    after = kg.memory()
    assert r.shape == (3, 8) and np.array_equal(r.numpy(), a.reshape(3, 8))
    assert after.num_tensors == before.num_tensors + 1 and after.num_bytes == before.num_bytes
    t.dispose()   # the view keeps the storage alive
    assert np.array_equal(r.numpy(), a.reshape(3, 8)) and r.storage == storage
    with pytest.raises(kg.ShapeError, match="Cannot reshape"):
        r.reshape(5, 5)
    with pytest.raises(kg.ShapeError, match="-1"):
        r.reshape(-1, -1)
    r.dispose()


@pytest.mark.parametrize("storage", STORAGES)
def test_transpose_every_permutation_up_to_rank_4(storage):
    for shape in [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 5), (1, 3, 1, 6)]:
        a = rng.standard_normal(shape).astype(np.float32)
        t = kg.tensor(a, storage=storage)
        with kg.tidy():
            for perm in itertools.permutations(range(len(shape))):
                r = t.transpose(perm)
                assert r.storage == storage
                assert np.array_equal(r.numpy(), a.transpose(perm)), (shape, perm)
            assert np.array_equal(t.T.numpy(), a.T)
            assert np.array_equal(kg.transpose(t).numpy(), a.transpose())
        t.dispose()


def test_transpose_high_rank_int_and_large():
    a = rng.standard_normal((2, 3, 2, 3, 2, 3, 2, 3)).astype(np.float32)
    t = kg.tensor(a)
    i = kg.tensor(np.arange(2 * 3 * 4 * 5 * 7).reshape(2, 3, 4, 5, 7))
    big = rng.standard_normal((513, 1031)).astype(np.float32)
    tb = kg.tensor(big)
    with kg.tidy():
        for _ in range(20):
            perm = tuple(rng.permutation(8))
            assert np.array_equal(t.transpose(perm).numpy(), a.transpose(perm)), perm
        r = i.transpose(4, 2, 0, 3, 1)
        assert r.dtype == "int32"
        assert np.array_equal(r.numpy(), np.arange(840).reshape(2, 3, 4, 5, 7).transpose(4, 2, 0, 3, 1))
        assert np.array_equal(tb.T.numpy(), big.T)
        with pytest.raises(kg.ShapeError, match="not a permutation"):
            t.transpose(0, 0, 1, 2, 3, 4, 5, 6)
        with pytest.raises(kg.ShapeError, match="not a permutation"):
            tb.transpose(0)
    kg.dispose([t, i, tb])


# -------------------------------------------------------------------------------------------------
# matmul (ops/matmul.py): @ against numpy
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 5), (64, 96, 33), (130, 257, 70)])
def test_matmul_operator(m, k, n, storage):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ta, tb = kg.tensor(a, storage=storage), kg.tensor(b, storage=storage)
    c = ta @ tb
    assert c.shape == (m, n)
    np.testing.assert_allclose(c.numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    kg.dispose([ta, tb, c])


# -------------------------------------------------------------------------------------------------
# Limits, disposed tensors, program cache
# -------------------------------------------------------------------------------------------------
def test_tensor_over_the_ssbo_limit_fails_naming_the_limit():
    limit = context.limits().max_ssbo_block_bytes
    before = kg.memory()
    elements = limit // 4 + 1
    with pytest.raises(kg.GPULimitError, match=f"GL_MAX_SHADER_STORAGE_BLOCK_SIZE = {limit} bytes"):
        kg.zeros([elements])
    with pytest.raises(kg.GPULimitError, match="GL_MAX_SHADER_STORAGE_BLOCK_SIZE"):
        kg.random_normal([2, elements // 2 + 1])
    assert kg.memory() == before          # nothing half-made is left behind
    ok = kg.zeros([limit // 4])            # exactly at the limit is fine
    ok.dispose()


def _uses(t, other):
    return [
        ("numpy()", lambda: t.numpy()), ("np.asarray", lambda: np.asarray(t)),
        ("+", lambda: t + 1), ("radd", lambda: 1 + t), ("right operand", lambda: other * t),
        ("neg", lambda: -t), ("relu", lambda: t.relu()), ("sum", lambda: t.sum()),
        ("max", lambda: t.max(axis=0)), ("reshape", lambda: t.reshape(-1)),
        ("transpose", lambda: t.T), ("to_texture", lambda: t.to_texture()),
        ("to_buffer", lambda: t.to_buffer()), ("matmul", lambda: t @ other),
        ("tensor()", lambda: kg.tensor(t)), ("gl_name", lambda: t.gl_name),
    ]


@pytest.mark.parametrize("storage", STORAGES)
def test_every_use_of_a_disposed_tensor_raises(storage):
    t, other = kg.ones([2, 2], storage=storage), kg.ones([2, 2])
    t.dispose()
    t.dispose()   # twice is harmless
    assert t.is_disposed and "disposed" in repr(t)
    for name, use in _uses(t, other):
        with pytest.raises(kg.DisposedError, match=r"Tensor of shape \[2, 2\] \(float32\) is disposed"):
            use()
    other.dispose()


def test_disposed_error_names_creation_and_disposal_sites():
    with kg.track_leaks():
        t = kg.zeros([3])          # created here
        line_created = test_disposed_error_names_creation_and_disposal_sites.__code__.co_firstlineno + 2
        with kg.tidy():
            u = kg.ones([3])
        t.dispose()
    with pytest.raises(kg.DisposedError) as info:
        t + 1
    message = str(info.value)
    assert f"test_tensor.py:{line_created} in test_disposed_error_names_creation_and_disposal_sites" in message
    assert f"disposed at {__file__}:{line_created + 4}" in message
    with pytest.raises(kg.DisposedError, match=rf"disposed at {__file__}:{line_created + 2}"):
        u.numpy()   # freed by the tidy scope: the site is the `with` statement


def test_without_tracking_the_error_says_how_to_get_sites():
    t = kg.zeros([1])
    with kg.track_leaks(False):
        t2 = kg.zeros([1])
        t2.dispose()
    with pytest.raises(kg.DisposedError, match="KERASGL_TRACK_LEAKS"):
        t2.numpy()
    t.dispose()


def test_programs_are_compiled_once_and_counted():
    a = kg.ones([16])
    (a * 2.0).dispose()                       # warm: the program exists now
    n_programs = kg.memory().num_programs
    assert n_programs == shaders.cached_program_count() > 0
    for _ in range(5):
        (a * 3.0).dispose()
    assert kg.memory().num_programs == n_programs
    names = [obj.glo for obj in objects.live_gl_objects() if obj.kind == "program"]
    assert all(is_live("program", glo) for glo in names)
    kg.clear_program_cache()
    assert kg.memory().num_programs == 0
    assert not any(is_live("program", glo) for glo in names)
    (a * 2.0).dispose()                       # compiles again on demand
    assert kg.memory().num_programs == 1
    a.dispose()


@pytest.mark.parametrize("storage", STORAGES)
def test_copy_and_storage_conversions(storage):
    from kerasgl.ops.layout import copy
    a = rng.standard_normal((3, 50)).astype(np.float32)
    t = kg.tensor(a, storage=storage)
    with kg.tidy():
        c = copy(t)
        assert c.storage == storage and c.gl_name != t.gl_name and np.array_equal(c.numpy(), a)
        for converted, kind in ((t.to_texture(), "texture"), (t.to_buffer(), "buffer")):
            assert converted.storage == kind and np.array_equal(converted.numpy(), a)
        i = kg.tensor(np.arange(-5, 5), storage=storage)
        assert np.array_equal(i.to_texture().to_buffer().numpy(), np.arange(-5, 5))
        e = kg.empty([2, 2], storage=storage)
        assert e.shape == (2, 2) and e.storage == storage
    t.dispose()


# -------------------------------------------------------------------------------------------------
# binary_vec4.comp: the 4-per-lane path (same shapes, per-channel [1, .., 1, C], scalars) and the
# shapes that must fall back to binary.comp. +, -, *, max, min are exact IEEE ops in both
# kernels and in numpy's float32, so these compare bit for bit.
# -------------------------------------------------------------------------------------------------
EXACT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                "maximum": np.maximum, "minimum": np.minimum}
VEC4_SHAPES = [((2, 3, 4), (2, 3, 4)),          # same shape, 4 | n: vec4
               ((3, 5), (3, 5)),                # same shape, n odd: fallback
               ((1, 5, 7, 8), (1, 1, 1, 8)),    # per-channel, 4 | C: vec4
               ((1, 1, 8), (3, 5, 8)),          # per-channel on the left
               ((2, 4, 12), (12,)),             # per-channel of lower rank
               ((1, 3, 3, 6), (1, 1, 1, 6)),    # per-channel, C = 6: fallback
               ((4, 8), (4, 1))]                # other broadcast: fallback


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("shapes", VEC4_SHAPES)
def test_binary_vec4_and_fallback_match_numpy_exactly(shapes, storage):
    from kerasgl.ops import elementwise
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    ta, tb = kg.tensor(a, storage=storage), kg.tensor(b, storage=storage)
    with kg.tidy():
        for op, ref in EXACT_BINARY.items():
            got = elementwise.binary(op, ta, tb)
            assert got.storage == storage and got.shape == ref(a, b).shape
            np.testing.assert_array_equal(got.numpy(), ref(a, b), err_msg=op)
        # division: both kernels do one IEEE float division per element, as numpy float32 does
        np.testing.assert_array_equal(elementwise.binary("div", ta, tb + 3.0).numpy(),
                                      a / (b + np.float32(3.0)))
    kg.dispose([ta, tb])


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("shape", [(2, 6), (3, 5)])
def test_binary_vec4_scalar_operands_match_numpy_exactly(shape, storage):
    from kerasgl.ops import elementwise
    a = rng.standard_normal(shape).astype(np.float32)
    ta = kg.tensor(a, storage=storage)
    with kg.tidy():
        s = np.float32(1.75)
        for op, ref in EXACT_BINARY.items():
            np.testing.assert_array_equal(elementwise.binary(op, ta, 1.75).numpy(), ref(a, s))
            np.testing.assert_array_equal(elementwise.binary(op, 1.75, ta).numpy(), ref(s, a))
        close(elementwise.binary("pow", ta, 2.0).numpy(), a.astype(np.float64) ** 2)
        close(elementwise.binary("pow", ta, 3.0).numpy(), a.astype(np.float64) ** 3)
    ta.dispose()


@pytest.mark.parametrize("shapes", [((1, 4, 4, 8), (1, 4, 4, 8)), ((1, 4, 4, 8), (1, 1, 1, 8)),
                                    ((3, 5), (3, 5))])
def test_binary_vec4_fused_activation_matches_unfused(shapes):
    """The ACT epilogue (Add+ReLU of a residual block) gives what binary then relu gives."""
    from kerasgl.layers.activation_functions import Pointwise
    from kerasgl.ops import elementwise
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    ta, tb = kg.tensor(a), kg.tensor(b)
    with kg.tidy():
        fused = elementwise.binary("add", ta, tb, activation=Pointwise("act_relu"))
        np.testing.assert_array_equal(fused.numpy(), np.maximum(a + b, np.float32(0)))
        fused = elementwise.binary("mul", ta, tb, activation=Pointwise("act_sigmoid"))
        close(fused.numpy(), elementwise.unary("sigmoid", ta * tb).numpy())
    kg.dispose([ta, tb])


def test_binary_chooses_vec4_only_where_it_applies(monkeypatch):
    from kerasgl.ops import dispatch, elementwise
    seen = []
    real_run = dispatch.run
    monkeypatch.setattr(dispatch, "run", lambda name, **kw: (seen.append(name), real_run(name, **kw)))
    cases = {((2, 3, 4), (2, 3, 4)): "binary_vec4.comp", ((1, 5, 5, 8), (1, 1, 1, 8)): "binary_vec4.comp",
             ((3, 5), (3, 5)): "binary.comp", ((1, 3, 3, 6), (1, 1, 1, 6)): "binary.comp",
             ((4, 8), (4, 1)): "binary.comp", ((1, 1, 1, 8), (1, 1, 1, 8)): "binary_vec4.comp"}
    with kg.tidy():
        for (sa, sb), want in cases.items():
            ta, tb = kg.zeros(list(sa)), kg.zeros(list(sb))
            seen.clear()
            elementwise.binary("mul", ta, tb)
            assert seen == [want], (sa, sb, seen)
