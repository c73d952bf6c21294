#version 430
// The device's memory bandwidth (kerasgl/profiler/peak.py): a streaming copy. Each invocation
// reads READS vec4s (16 bytes each) and writes their sum, one vec4: READS = 1 is a plain copy,
// READS = 4 a read-mostly stream (on drivers whose stores are slower than their loads, such as
// llvmpipe, the copy alone understates how fast kernels that mostly read can go). Read j of
// invocation i is src[j * n_vec4 + i]: consecutive invocations at consecutive addresses
// (coalesced on a GPU, whole cache lines on a CPU). The buffers are far larger than any cache.
// SRC_VIEW: the source read through an rgba32f imageBuffer view of its buffer, as kernels read
// their operands where the device's tuning says so (runtime/buffer_views.py: llvmpipe gathers an
// image load where it loops over lanes for a storage-buffer load); the fastest read is the peak.
#include "common.glsl"
layout(local_size_x = LOCAL_SIZE) in;

#if SRC_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer src_view;
#define SRC(i) imageLoad(src_view, int(i))
#else
layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
#define SRC(i) src[i]
#endif
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };

uniform uint n_vec4;     // vec4s written

void main() {
    uint i = linear_index();
    if (i >= n_vec4) return;
    vec4 sum = SRC(i);
    for (uint j = 1u; j < uint(READS); ++j) sum += SRC(j * n_vec4 + i);
    dst[i] = sum;
}
