// The input x of a per-cell channels-last kernel (kerasgl/ops/channels_last.py run_per_cell):
// elements of type T (vec4 when VEC == 4, else float), read as LOAD_X(i). With X_VIEW (VEC == 4
// only, chosen per device by kerasgl/tuning.py) through an rgba32f imageBuffer view of the same
// buffer (kerasgl/buffer_views.py): the same values, gathered by llvmpipe where it loops over the
// lanes for a storage-buffer load.
#if VEC == 4
#define T vec4
#else
#define T float
#endif
#if X_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer x_view;
#define LOAD_X(i) imageLoad(x_view, int(i))
#else
layout(std430, binding = 0) readonly buffer X { T x[]; };
#define LOAD_X(i) x[i]
#endif
