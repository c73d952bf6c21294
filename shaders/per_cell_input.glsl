// The input x and output y of a per-cell channels-last kernel (kerasgl/ops/channels_last.py
// run_per_cell with per_cell_input=True): elements of type T (vec4 when VEC == 4, else float),
// read as LOAD_X(i) and written by the statement `STORE_Y(i, v);`. x is read where it is stored:
// - X_TEXTURE: a texture, read in place (texture_operand.glsl), so the op copies nothing first;
// - X_VIEW (VEC == 4 only, chosen per device by kerasgl/tuning.py): an rgba32f imageBuffer view
//   of its buffer (kerasgl/buffer_views.py): the same values, gathered by llvmpipe where it loops
//   over the lanes for a storage-buffer load;
// - else the buffer.
// y is a buffer, or a texture written in place (Y_TEXTURE: the op returns a texture for one).
#include "texture_operand.glsl"
#if VEC == 4
#define T vec4
#define TEXEL_T TEXEL4
#define STORE_TEXEL_T STORE_TEXEL4
#else
#define T float
#define TEXEL_T TEXEL
#define STORE_TEXEL_T STORE_TEXEL
#endif
#ifdef X_TEXTURE
TEXTURE_OPERAND(x_texture, 0, TEXEL_FORMAT_0);
#define LOAD_X(i) TEXEL_T(x_texture, i)
#elif X_VIEW
layout(rgba32f, binding = 0) readonly uniform imageBuffer x_view;
#define LOAD_X(i) imageLoad(x_view, int(i))
#else
layout(std430, binding = 0) readonly buffer X { T x[]; };
#define LOAD_X(i) x[i]
#endif
#ifdef Y_TEXTURE
TEXTURE_RESULT(y_texture, 1, TEXEL_FORMAT_1);
#define STORE_Y(i, v) STORE_TEXEL_T(y_texture, i, v)
#else
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
#define STORE_Y(i, v) y[i] = (v)
#endif
