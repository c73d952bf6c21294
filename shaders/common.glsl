// Shared helpers for every compute shader (each file includes this one first).
// Defines injected by kerasgl/shaders.py come before this file's text.

#ifndef LOCAL_SIZE
#define LOCAL_SIZE 64
#endif

// Dispatches larger than the 65535 work-group limit of one dimension use a 2D grid of groups;
// this turns (group, lane) back into one linear index. For 1D work groups of LOCAL_SIZE lanes.
uint linear_index() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * uint(LOCAL_SIZE)
           + gl_LocalInvocationID.x;
}

// max / min that propagate NaN, as jnp.maximum / jnp.minimum and XLA's max reductions (max
// pooling, reduce_max) do. GLSL leaves max(NaN, y) undefined (llvmpipe returns y, so a NaN would
// vanish into a finite number); isnan is tested explicitly and a + b is the NaN then.
float nan_max(float a, float b) { return isnan(a) || isnan(b) ? a + b : max(a, b); }
float nan_min(float a, float b) { return isnan(a) || isnan(b) ? a + b : min(a, b); }
vec4 nan_max(vec4 a, vec4 b) {
    return mix(max(a, b), a + b, bvec4(uvec4(isnan(a)) | uvec4(isnan(b))));
}
