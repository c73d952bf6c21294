#version 430
// The device's float32 FMA throughput (kerasgl/profiler/peak.py): every invocation runs CHAINS
// independent chains of fma(x, a, b), each WIDTH floats wide (4: a vec4), `iterations` times
// UNROLL steps. Independent chains hide the FMA latency (a dependent fma waits for the one
// before it); many invocations and work groups fill every core. Each step is one fused
// multiply-add per float: 2 floating-point operations. CHAINS = 1, WIDTH = 1 is the naive
// shader, bound by latency rather than throughput (what the peak is checked against).
// x -> 0.999 x + 0.001 stays finite forever (it tends to 1); a and b are uniforms, so the
// compiler can fold nothing, and the sum of the chains is written so that none is dead code.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

layout(std430, binding = 0) writeonly buffer Out { float result[]; };

uniform int iterations;
uniform float a;
uniform float b;
uniform uint n_invocations;

#if WIDTH == 4
#define VALUE vec4
#else
#define VALUE float
#endif

void main() {
    uint index = linear_index();
    VALUE x[CHAINS];
    for (int c = 0; c < CHAINS; ++c) x[c] = VALUE(float(index & 255u) * 1e-3 + float(c));
    VALUE va = VALUE(a), vb = VALUE(b);
    for (int i = 0; i < iterations; ++i) {
        for (int u = 0; u < UNROLL; ++u) {
            for (int c = 0; c < CHAINS; ++c) x[c] = fma(x[c], va, vb);
        }
    }
    VALUE sum = x[0];
    for (int c = 1; c < CHAINS; ++c) sum += x[c];
    if (index < n_invocations) result[index] = dot(sum, VALUE(1.0));
}
