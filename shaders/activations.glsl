// Activation functions and other pointwise maps, shared by unary.comp and the fused kernels
// (dense, conv, ...). A kernel picks one with `#define ACT act_<name>`; parameters, where a
// function has them, come from the uniforms act_p0..act_p2 (declared here).
// Written for accuracy within 1e-6 of float32 math, and safe for large |x| (no inf/inf).
// NaN in, NaN out, as in Keras: GLSL's max/min/clamp leave NaN operands undefined (llvmpipe
// returns the other operand: relu(NaN) would be 0), so the clipping functions test isnan.

uniform float act_p0;
uniform float act_p1;
uniform float act_p2;

float act_linear(float x) { return x; }
float act_neg(float x) { return -x; }
float act_abs(float x) { return abs(x); }
float act_exp(float x) { return exp(x); }
float act_exponential(float x) { return exp(x); }
float act_log(float x) { return log(x); }
float act_sqrt(float x) { return sqrt(x); }
float act_square(float x) { return x * x; }
float act_relu(float x) { return isnan(x) ? x : max(x, 0.0); }
// jnp.clip(x, lo, hi): NaN when x or a bound is NaN.
float clip_nan(float x, float lo, float hi) {
    return isnan(x) || isnan(hi) ? x + hi : clamp(x, lo, hi);
}
// exp(x) - 1 without the cancellation of small |x| (jax.nn.elu and celu use expm1).
float expm1_accurate(float x) {
    if (abs(x) < 1e-2) return x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0))));
    return exp(x) - 1.0;
}
float act_relu6(float x) { return isnan(x) ? x : clamp(x, 0.0, 6.0); }
// p0 = negative slope
float act_leaky_relu(float x) { return x >= 0.0 ? x : act_p0 * x; }
// p0 = alpha
float act_elu(float x) { return x > 0.0 ? x : act_p0 * expm1_accurate(x); }
float act_selu(float x) {
    const float alpha = 1.6732632423543772848170429916717;
    const float scale = 1.0507009873554804934193349852946;
    return scale * (x > 0.0 ? x : alpha * expm1_accurate(x));
}
float act_sigmoid(float x) {
    // exp of a non-positive number never overflows.
    float e = exp(-abs(x));
    return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
float act_tanh(float x) {
    float e = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - e) / (1.0 + e);
}
// Keras 2: clip(0.2 x + 0.5, 0, 1). Keras 3: relu6(x + 3) / 6.
float act_hard_sigmoid_k2(float x) { return isnan(x) ? x : clamp(0.2 * x + 0.5, 0.0, 1.0); }
float act_hard_sigmoid(float x) { return act_relu6(x + 3.0) / 6.0; }
float act_hard_silu(float x) { return x * act_hard_sigmoid(x); }
float act_silu(float x) { return x * act_sigmoid(x); }
float act_softplus(float x) { return max(x, 0.0) + log(1.0 + exp(-abs(x))); }
float act_softsign(float x) { return x / (1.0 + abs(x)); }
float act_mish(float x) { return x * act_tanh(act_softplus(x)); }
float act_gelu_tanh(float x) {
    const float k = 0.7978845608028654;  // sqrt(2 / pi)
    return 0.5 * x * (1.0 + act_tanh(k * (x + 0.044715 * x * x * x)));
}
// erf with |error| < 1.2e-7 (Numerical Recipes erfc, Chebyshev fit); GLSL has no erf.
float erf_approx(float x) {
    float z = abs(x);
    float t = 1.0 / (1.0 + 0.5 * z);
    float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
              t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
              t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0.0 ? 1.0 - r : r - 1.0;
}
float act_gelu(float x) { return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476)); }
// keras.activations.relu / the ReLU layer: p0 = max_value (negative: none), p1 = negative_slope,
// p2 = threshold. Keras's ReLU.static_call branch for branch: its branches test the parameters
// in Python (a NaN slope or threshold counts as one: NaN != 0), so every invocation takes the
// same one; the isnan tests keep that true where a compiler treats NaN comparisons loosely.
float act_relu_full(float x) {
    bool sloped = isnan(act_p1) || act_p1 != 0.0;
    bool thresholded = isnan(act_p2) || act_p2 != 0.0;
    bool clipped = isnan(act_p0) || act_p0 >= 0.0;
    if (sloped && !clipped && !thresholded) return x >= 0.0 ? x : act_p1 * x;   // leaky_relu
    // x where x > threshold else 0 (a NaN x fails the test); without a threshold relu(x).
    float y = thresholded ? (x > act_p2 ? x : 0.0) : act_relu(x);
    if (clipped) y = clip_nan(y, 0.0, act_p0);
    if (sloped) y -= act_p1 * act_relu(-x + act_p2);
    return y;
}
// Keras ThresholdedReLU / ReLU(threshold) without slope: p0 = theta
// tf.keras computes x * cast(x > theta): NaN (and -inf * 0) stay NaN.
float act_thresholded_relu(float x) { return x * float(x > act_p0); }
// Keras 3 activations beyond the classic set (jax.nn formulas). p0 = alpha / b / threshold.
float act_celu(float x) {
    return isnan(x) ? x : max(x, 0.0) + act_p0 * expm1_accurate(min(x, 0.0) / act_p0);
}
float act_squareplus(float x) { return (x + sqrt(x * x + act_p0)) / 2.0; }
float act_soft_shrink(float x) { return x > act_p0 ? x - act_p0 : (x < -act_p0 ? x + act_p0 : 0.0); }
float act_hard_shrink(float x) { return abs(x) > act_p0 ? x : 0.0; }
float act_sparse_plus(float x) { return x <= -1.0 ? 0.0 : (x >= 1.0 ? x : (x + 1.0) * (x + 1.0) / 4.0); }
float act_sparse_sigmoid(float x) { return x <= -1.0 ? 0.0 : (x >= 1.0 ? 1.0 : 0.5 * (x + 1.0)); }
float act_tanh_shrink(float x) { return x - act_tanh(x); }
float act_hard_tanh(float x) { return isnan(x) ? x : clamp(x, -1.0, 1.0); }
float act_log_sigmoid(float x) { return -act_softplus(-x); }
