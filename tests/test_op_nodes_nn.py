"""keras.ops products, nn and linalg operations as graph nodes (op_nodes_linalg.py,
op_nodes_nn.py, op_nodes_norms.py), against live Keras in both formats; refusals at load."""
import numpy as np
import pytest

from keras_ref import assert_close, assert_matches_keras, keras

import kerasgl as kg

ops = keras.ops
RNG = np.random.default_rng(7)


def _const(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype("float32")


def test_einsum_and_products(tmp_path):
    x, y = keras.Input((3, 4)), keras.Input((4, 5))
    e2 = ops.einsum("btd,de->bte", x, _const(4, 6))                  # constant operand
    e3 = ops.einsum("bij,bjk,bk->bi", x, y, ops.sum(y, axis=1))     # three operands
    implicit = ops.einsum("bij,bjk", x, y)                          # numpy's implicit output
    ellipsis = ops.einsum("...ij,jk->...ki", x, _const(4, 2))
    summed = ops.einsum("bij->bj", x)
    broadcast = ops.einsum("...ij,...jk->...ik", x, _const(1, 4, 2))   # ellipsis 2 against 1
    td = ops.tensordot(x, _const(4, 3, 2), axes=([2], [0]))
    td2 = ops.tensordot(x, _const(3, 4), axes=2)
    dot = ops.dot(x, _const(4, 2))
    inner = ops.inner(x, _const(5, 4))
    kron = ops.kron(x, _const(2, 1, 2))
    model = keras.Model([x, y], [e2, e3, implicit, ellipsis, summed, broadcast, td, td2, dot, inner, kron],
                        name="products")
    assert_matches_keras(model, tmp_path)


def test_flat_products(tmp_path):
    x = keras.Input((3,))
    outer = ops.outer(x, _const(4))
    vdot = x + ops.vdot(x, _const(2, 3))
    assert_matches_keras(keras.Model(x, [outer, vdot], name="flat_products"), tmp_path)


def test_linalg(tmp_path):
    x, b = keras.Input((4, 4)), keras.Input((4, 2))
    a = x + 3.0 * np.eye(4, dtype="float32")                        # well conditioned
    spd = ops.matmul(a, ops.transpose(a, (0, 2, 1))) + np.eye(4, dtype="float32")
    sign, logabs = ops.slogdet(a)
    outputs = [ops.det(a), ops.inv(a), ops.solve(a, b),
               ops.solve_triangular(a, b, lower=True), ops.solve_triangular(a, b),
               ops.cholesky(spd), ops.cholesky(spd, upper=True), sign, logabs, ops.logdet(spd),
               *ops.qr(x), *ops.qr(b, mode="complete"), *ops.qr(ops.transpose(b, (0, 2, 1))),
               *ops.lu_factor(x)]
    assert_matches_keras(keras.Model([x, b], outputs, name="linalg"), tmp_path)


def test_cholesky_inverse_of_one_matrix(tmp_path):
    x = keras.Input((4,))
    factor = np.tril(_const(4, 4)) + 3.0 * np.eye(4, dtype="float32")
    lower = ops.cholesky_inverse(ops.multiply(factor, 1.0))
    upper = ops.cholesky_inverse(ops.multiply(factor.T.copy(), 1.0), upper=True)
    out = ops.matmul(x, lower) + ops.matmul(x, upper)
    assert_matches_keras(keras.Model(x, out, name="chol_inv"), tmp_path)


def test_convolutions(tmp_path):
    x = keras.Input((7, 6, 4))
    kernel = ops.tanh(_const(3, 3, 4, 5))                          # computed in the graph
    conv = ops.conv(x, kernel, strides=2, padding="same")
    dilated = ops.conv(x, _const(3, 2, 4, 6), padding="same", dilation_rate=(2, 1))
    depth = ops.depthwise_conv(x, _const(3, 3, 4, 2), strides=(1, 2), padding="valid")
    sep = ops.separable_conv(x, _const(2, 2, 4, 2), _const(1, 1, 8, 3), padding="same",
                             dilation_rate=2)
    first = ops.conv(x, _const(2, 2, 7, 3), data_format="channels_first")
    model = keras.Model(x, [conv, dilated, depth, sep, first], name="convs")
    assert_matches_keras(model, tmp_path)


def test_convolutions_1d_3d(tmp_path):
    x, v = keras.Input((9, 4)), keras.Input((4, 5, 4, 2))
    c1 = ops.conv(x, _const(3, 4, 5), strides=2, padding="same")
    d1 = ops.depthwise_conv(x, _const(2, 4, 1), dilation_rate=2)
    c3 = ops.conv(v, _const(2, 3, 2, 2, 3), padding="same")
    model = keras.Model([x, v], [c1, d1, c3], name="convs_1d_3d")
    assert_matches_keras(model, tmp_path)


def test_conv_transpose_against_eager_keras(tmp_path):
    # Keras 3.15's ConvTranspose op node hands its padding and output_padding to the backend in
    # each other's places when it runs, so a graph of it cannot predict in Keras; the reference
    # is keras.ops.conv_transpose called eagerly (which passes them right) on the same inputs.
    rng = np.random.default_rng(2)
    cases = [((7, 6, 4), _const(3, 3, 5, 4), dict(strides=2, padding="same")),
             ((7, 6, 4), _const(2, 3, 3, 4), dict(strides=(2, 3), padding="valid",
                                                   output_padding=1)),
             ((5, 6, 4), _const(3, 3, 2, 4), dict(strides=1, padding="same", dilation_rate=2)),
             ((9, 4), _const(3, 2, 4), dict(strides=2, padding="valid")),
             ((4, 5, 6), _const(2, 2, 3, 4), dict(strides=2, padding="same",
                                                   data_format="channels_first"))]
    for i, (shape, kernel, options) in enumerate(cases):
        x = keras.Input(shape)
        model = keras.Model(x, ops.conv_transpose(x, kernel, **options), name=f"convt{i}")
        data = rng.uniform(-1, 1, (2,) + shape).astype("float32")
        expected = np.asarray(ops.conv_transpose(data, kernel, **options))
        for fmt in (".keras", ".h5"):
            path = str(tmp_path / f"convt{i}{fmt}")
            model.save(path)
            with kg.load_model(path) as loaded:
                assert_close(loaded.predict(data, verbose=0), expected, what=f"convt{i}{fmt}")


def test_pooling_and_rearranging(tmp_path):
    x, s, v = keras.Input((6, 7, 4)), keras.Input((9, 3)), keras.Input((4, 4, 4, 2))
    outputs = [ops.max_pool(x, 3, strides=2, padding="same"),
               ops.average_pool(x, (2, 3), strides=(2, 3), padding="same"),
               ops.average_pool(s, 2, strides=1),
               ops.max_pool(v, 2, strides=2),
               ops.average_pool(x, 2, strides=2, data_format="channels_first"),
               ops.adaptive_average_pool(x, (3, 2)),
               ops.adaptive_max_pool(s, (4,)),
               ops.depth_to_space(x, 2),
               ops.space_to_depth(ops.depth_to_space(x, 2), 2),
               ops.depth_to_space(ops.transpose(x, (0, 3, 1, 2)), 2, data_format="channels_first")]
    assert_matches_keras(keras.Model([x, s, v], outputs, name="pools"), tmp_path)


def test_normalizations(tmp_path):
    x = keras.Input((3, 5))
    bn = ops.batch_normalization(x, _const(5), _const(5, low=0.5, high=2.0), axis=-1,
                                 offset=_const(5), scale=_const(5), epsilon=1e-2)
    bn_mid = ops.batch_normalization(x, _const(3), _const(3, low=0.5, high=2.0), axis=1,
                                     offset=_const(3), scale=_const(3))
    ln = ops.layer_normalization(x, _const(5), _const(5), epsilon=1e-3)
    ln_all = ops.layer_normalization(x, _const(3, 5), axis=[1, 2])
    rms = ops.rms_normalization(x, _const(5), epsilon=1e-4)
    rms_mid = ops.rms_normalization(x, axis=1)
    model = keras.Model(x, [bn, bn_mid, ln, ln_all, rms, rms_mid], name="norms")
    assert_matches_keras(model, tmp_path)


def test_dot_product_attention(tmp_path):
    q, k, v = keras.Input((4, 2, 8)), keras.Input((5, 2, 8)), keras.Input((5, 2, 8))
    mask = keras.Input((1, 4, 5))
    square = ops.dot_product_attention(q, q, q, is_causal=True)
    masked = ops.dot_product_attention(q, k, v, mask=mask, scale=0.3)
    biased = ops.dot_product_attention(q, k, v, bias=_const(1, 2, 4, 5), mask=mask)
    causal_bias = ops.dot_product_attention(q, q, q, bias=_const(1, 1, 4, 4), is_causal=True)
    flags = keras.Input((2, 4, 5), dtype="bool")                   # a bool mask
    flagged = ops.dot_product_attention(q, k, v, mask=flags)
    flagged_bias = ops.dot_product_attention(q, k, v, bias=_const(2, 1, 4, 5), mask=flags)
    grouped_q = keras.Input((4, 4, 8))                              # 4 query heads over 2
    grouped = ops.dot_product_attention(grouped_q, k, v, scale=0.5)
    grouped_bias = ops.dot_product_attention(grouped_q, k, v, bias=_const(1, 4, 4, 5))
    model = keras.Model([q, k, v, mask, flags, grouped_q],
                        [square, masked, biased, causal_bias, flagged, flagged_bias, grouped,
                         grouped_bias], name="dpa")
    rng = np.random.default_rng(3)
    inputs = [rng.uniform(-1, 1, (2,) + tuple(t.shape[1:])).astype("float32") for t in (q, k, v)]
    inputs.append((rng.uniform(0, 1, (2, 1, 4, 5)) > 0.3).astype("float32"))
    inputs.append(rng.uniform(0, 1, (2, 2, 4, 5)) > 0.3)
    inputs.append(rng.uniform(-1, 1, (2, 4, 4, 8)).astype("float32"))
    assert_matches_keras(model, tmp_path, inputs=inputs)


def test_losses_and_encodings(tmp_path):
    t, o = keras.Input((3, 5)), keras.Input((3, 5))
    labels = keras.Input((3,), dtype="int32")
    tokens = keras.Input((4,), dtype="int32")
    probs = ops.softmax(o, axis=-1)
    outputs = [ops.binary_crossentropy(ops.sigmoid(t), ops.sigmoid(o)),
               ops.binary_crossentropy(ops.sigmoid(t), o, from_logits=True),
               ops.categorical_crossentropy(ops.softmax(t), probs),
               ops.categorical_crossentropy(ops.softmax(t, axis=1), o, from_logits=True, axis=1),
               ops.sparse_categorical_crossentropy(labels, probs),
               ops.sparse_categorical_crossentropy(labels, o, from_logits=True),
               o + ops.psnr(ops.sigmoid(t), ops.sigmoid(o), 1.0),
               ops.multi_hot(tokens, 12)]
    model = keras.Model([t, o, labels, tokens], outputs, name="losses")
    rng = np.random.default_rng(4)
    inputs = [rng.uniform(-2, 2, (2, 3, 5)).astype("float32") for _ in range(2)]
    inputs += [rng.integers(0, 5, (2, 3)).astype("int32"),
               rng.integers(0, 12, (2, 4)).astype("int32")]
    assert_matches_keras(model, tmp_path, inputs=inputs)


@pytest.mark.parametrize("build, name", [
    (lambda x: ops.svd(x)[1], "SVD"),
    (lambda x: ops.eigh(x)[0], "Eigh"),
    (lambda x: ops.pinv(x), "Pinv"),
    (lambda x: ops.lstsq(x[0], x[0]), "Lstsq"),
    (lambda x: ops.einsum("bii->bi", x), "Einsum"),
    (lambda x: ops.cholesky_inverse(x), "CholeskyInverse"),
    (lambda x: ops.matrix_rank(x[0]), "MatrixRank"),
    (lambda x: ops.eig(x)[0], "Eig"),
    (lambda x: ops.ctc_decode(x, ops.array([3, 3]))[0][0], "CTCDecode"),
    (lambda x: ops.ctc_loss(ops.cast(x[:, 0], "int32"), x, ops.cast(x[:, 0, 0] * 0 + 3, "int32"),
                            ops.cast(x[:, 0, 0] * 0 + 3, "int32")), "CTCLoss"),
    (lambda x: ops.dot_product_attention(x[:, None], x[:, None], x[:, None],
                                         bias=np.zeros((1, 3, 3), "float32")), "bias of rank 3"),
    (lambda x: ops.multi_hot(ops.cast(x, "int32"), 4, axis=1), "MultiHot"),
    (lambda x: ops.multi_hot(ops.cast(x, "int32"), 4, dtype="int32"), "MultiHot"),
    (lambda x: ops.conv(x, np.ones((2, 3, 3), "float32"), padding="causal"), "causal"),
])
def test_refused_at_load(tmp_path, build, name):
    # matrix factorisations kerasgl does not run, and options it cannot honour
    x = keras.Input((3, 3))
    model = keras.Model(x, build(x))
    path = str(tmp_path / "refused.keras")
    model.save(path)
    with pytest.raises(kg.UnsupportedLayerError, match=name):
        kg.load_model(path)
