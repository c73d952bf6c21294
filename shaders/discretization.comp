#version 430
// y[i] = how many of the `bound_count` boundaries (float32, in increasing order) are <= x[i]: the
// bucket jnp.digitize gives (Keras's Discretization), found by binary search. NaN sorts after
// every number in jnp's searchsorted, so its bucket is the last one; the explicit test is needed
// because every comparison with NaN is false. Defines: X_INT (int32 input, read as its float
// value, as Keras converts the layer's inputs to float32). One invocation per value.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;
#if X_INT
layout(std430, binding = 0) readonly buffer X { int x[]; };
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#endif
layout(std430, binding = 1) readonly buffer Bounds { float bounds[]; };
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
uniform uint n;
uniform int bound_count;

void main() {
    uint i = linear_index();
    if (i >= n) return;
    float v = float(x[i]);
    if (isnan(v)) {
        y[i] = bound_count;
        return;
    }
    int lo = 0;
    int hi = bound_count;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (bounds[mid] <= v) lo = mid + 1; else hi = mid;
    }
    y[i] = lo;
}
