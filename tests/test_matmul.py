"""ops.matmul against numpy: shapes (2-D, vectors, broadcast batches, transposes, odd sizes that
miss the vec4 paths), the fused bias + activation epilogue, texture inputs, and errors."""
import numpy as np
import pytest

import kerasgl as kg
from kerasgl.ops.matmul import dense, matmul

ATOL = RTOL = 1e-4
rng = np.random.default_rng(0)


def rand(*shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def run(a, b, **kwargs):
    with kg.tidy():
        bias = kwargs.pop("bias", None)
        if bias is not None:
            kwargs["bias"] = kg.tensor(bias)
        return matmul(kg.tensor(a), kg.tensor(b), **kwargs).numpy()


@pytest.mark.parametrize("m,k,n", [
    (1, 1, 1), (1, 7, 3), (3, 5, 2), (4, 4, 4), (5, 8, 12), (8, 16, 8), (9, 13, 17),
    (33, 64, 64), (64, 3, 130), (2, 257, 6), (100, 40, 1), (17, 32, 33),
])
def test_2d_matches_numpy(m, k, n):
    a, b = rand(m, k), rand(k, n)
    np.testing.assert_allclose(run(a, b), a @ b, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((5,), (5, 3)), ((4, 6), (6,)), ((7,), (7,)), ((2, 3, 4), (4,)), ((4,), (3, 4, 5)),
    ((3, 4, 5), (3, 5, 6)), ((3, 4, 5), (5, 6)), ((4, 5), (2, 3, 5, 8)), ((2, 1, 4, 5), (3, 5, 2)),
    ((2, 3, 1, 4, 4), (1, 3, 2, 4, 8)), ((6, 1, 3), (1, 3, 5)), ((1, 2, 9, 12), (2, 1, 12, 4)),
])
def test_batched_broadcasting_matches_np_matmul(a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape)
    expected = np.matmul(a, b)
    actual = run(a, b)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("a_batch,b_batch,m,k,n", [
    ((), (), 6, 5, 7), ((2,), (2,), 8, 4, 12), ((3,), (), 5, 3, 4), ((), (2,), 1, 9, 3),
])
def test_transposed_operands(ta, tb, a_batch, b_batch, m, k, n):
    a = rand(*(a_batch + ((k, m) if ta else (m, k))))
    b = rand(*(b_batch + ((n, k) if tb else (k, n))))
    expected = np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
    np.testing.assert_allclose(run(a, b, transpose_a=ta, transpose_b=tb), expected,
                               atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("n", [1, 3, 4, 8, 10, 64])
@pytest.mark.parametrize("activation,params,reference", [
    (None, (), lambda x: x),
    ("relu", (), lambda x: np.maximum(x, 0)),
    ("act_leaky_relu", (0.3,), lambda x: np.where(x >= 0, x, 0.3 * x)),
    ("sigmoid", (), lambda x: 1 / (1 + np.exp(-x))),
])
def test_bias_and_activation_epilogue(n, activation, params, reference):
    a, b, bias = rand(6, 9), rand(9, n), rand(n)
    actual = run(a, b, bias=bias, activation=activation, activation_params=params)
    np.testing.assert_allclose(actual, reference(a @ b + bias), atol=ATOL, rtol=RTOL)


def test_bias_on_batched_input():
    a, b, bias = rand(3, 5, 7), rand(7, 8), rand(8)
    np.testing.assert_allclose(run(a, b, bias=bias), a @ b + bias, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("x_shape", [(7,), (2, 7), (2, 3, 7), (2, 1, 3, 7)])
def test_dense_on_any_rank(x_shape):
    x, kernel, bias = rand(*x_shape), rand(7, 5), rand(5)
    with kg.tidy():
        y = dense(kg.tensor(x), kg.tensor(kernel), kg.tensor(bias), "tanh").numpy()
    np.testing.assert_allclose(y, np.tanh(x @ kernel + bias), atol=ATOL, rtol=RTOL)


def test_texture_inputs_give_texture_output():
    a, b = rand(5, 6), rand(6, 4)
    with kg.tidy():
        out = matmul(kg.tensor(a, storage="texture"), kg.tensor(b, storage="texture"))
        assert out.storage == "texture"
        np.testing.assert_allclose(out.numpy(), a @ b, atol=ATOL, rtol=RTOL)
        mixed = matmul(kg.tensor(a), kg.tensor(b, storage="texture"))
        np.testing.assert_allclose(mixed.numpy(), a @ b, atol=ATOL, rtol=RTOL)


def test_large_batch_count_past_one_dispatch():
    # More matrices than one dispatch's 65535 work groups along z.
    a, b = rand(70000, 1, 2), rand(70000, 2, 1)
    np.testing.assert_allclose(run(a, b), np.matmul(a, b), atol=ATOL, rtol=RTOL)


def test_1024_square_is_accurate():
    a, b = rand(1024, 1024), rand(1024, 1024)
    np.testing.assert_allclose(run(a, b), a.astype(np.float64) @ b, atol=1e-4, rtol=1e-4)


def test_operator_uses_matmul():
    a, b = rand(3, 4), rand(4, 2)
    with kg.tidy():
        np.testing.assert_allclose((kg.tensor(a) @ kg.tensor(b)).numpy(), a @ b, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (5, 2)), ((2, 3, 4), (3, 4, 2)), ((3,), (4,))])
def test_shape_mismatch_raises_shape_error(a_shape, b_shape):
    with kg.tidy():
        a, b = kg.zeros(a_shape), kg.zeros(b_shape)
        with pytest.raises(kg.ShapeError):
            matmul(a, b)


def test_bad_bias_and_dtype_raise():
    with kg.tidy():
        with pytest.raises(kg.ShapeError, match="bias"):
            matmul(kg.zeros((2, 3)), kg.zeros((3, 4)), bias=kg.zeros((3,)))
        with pytest.raises(kg.ShapeError, match="int32"):
            matmul(kg.zeros((2, 3), dtype="int32"), kg.zeros((3, 4)))


def test_no_tensor_left_behind():
    before = kg.memory().num_tensors
    with kg.tidy():
        out = kg.keep(dense(kg.zeros((2, 3, 4)), kg.zeros((4, 5))))
    assert kg.memory().num_tensors == before + 1
    out.dispose()


def _softmax_rows(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("n", [1, 6, 32])
def test_softmax_epilogue_matches_numpy(n):
    rng = np.random.default_rng(n)
    a = rng.uniform(-3, 3, (2, 5, 20)).astype(np.float32)
    b = rng.uniform(-3, 3, (20, n)).astype(np.float32)
    bias = rng.uniform(-3, 3, n).astype(np.float32)
    with kg.tidy():
        out = matmul(kg.tensor(a), kg.tensor(b), kg.tensor(bias), "softmax").numpy()
    np.testing.assert_allclose(out, _softmax_rows(a @ b + bias), rtol=1e-5, atol=1e-6)


def test_softmax_epilogue_refuses_wide_rows():
    with kg.tidy():
        a, b = kg.ones((2, 4)), kg.ones((4, 33))
        with pytest.raises(kg.ShapeError, match="at most 32 columns"):
            matmul(a, b, activation="softmax")


# -- the tiled GEMM (shaders/matmul_tiled.comp: what GPUs run) -----------------------------------
TILED = ("matmul_tiled=1,matmul_as_conv=0", "matmul_tiled=1,matmul_as_conv=0,matmul_views=1,"
         "gemm_tile_m=32,gemm_tile_n=128,gemm_block_n=8,gemm_tile_k=8")


@pytest.fixture(params=TILED)
def tiled(request, monkeypatch):
    from kerasgl.runtime import tuning
    monkeypatch.setenv(tuning.ENV, request.param)
    return request.param


@pytest.mark.parametrize("a_shape,b_shape,tb", [
    ((64, 64), (64, 64), False), ((100, 36), (36, 52), False), ((17, 20), (20, 24), True),
    ((3, 40, 12), (3, 12, 16), False), ((2, 1, 33, 8), (3, 8, 20), True),
    ((130, 4), (4, 68), False),
])
def test_tiled_gemm_matches_numpy(tiled, a_shape, b_shape, tb):
    """Partial tiles in M and N, K shorter than a tile's depth, batches broadcast, B transposed;
    a bias and an activation in the epilogue."""
    a, b = rand(*a_shape), rand(*b_shape)
    bias = rand(b_shape[-1])
    expected = np.maximum(np.matmul(a, b) + bias, 0)
    b_given = np.swapaxes(b, -1, -2).copy() if tb else b
    with kg.profile(gpu_timing=False) as p:
        actual = run(a, b_given, bias=bias, activation="relu", transpose_b=tb)
    np.testing.assert_allclose(actual, expected, atol=ATOL, rtol=RTOL)
    assert any(e.kernel.startswith("matmul_tiled.comp") for e in p.events)


def test_tiled_gemm_leaves_what_it_cannot_do_to_matmul_comp(tiled):
    """Odd sizes (no vec4 along K or N), A transposed, a softmax epilogue, a single row."""
    cases = [((20, 18), (18, 30), {}), ((16, 24), (16, 20), {"transpose_a": True}),
             ((32, 16), (16, 10), {"activation": "softmax"}), ((1, 64), (64, 64), {})]
    for a_shape, b_shape, options in cases:
        a, b = rand(*a_shape), rand(*b_shape)
        with kg.profile(gpu_timing=False) as p:
            actual = run(a, b, **options)
        a_used = a.T if options.get("transpose_a") else a
        expected = a_used @ b
        if options.get("activation") == "softmax":
            expected = np.exp(expected - expected.max(1, keepdims=True))
            expected /= expected.sum(1, keepdims=True)
        np.testing.assert_allclose(actual, expected, atol=ATOL, rtol=RTOL)
        assert [e.kernel.split()[0] for e in p.events] == ["matmul.comp"]
