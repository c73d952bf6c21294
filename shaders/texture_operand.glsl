// Tensors stored in textures, read and written where they are.
//
// A tensor whose storage is "texture" (kerasgl/tensors/tensor.py) is an r32f texture (r16f for
// one of halves, r32i for int32 and bool), one element per texel, laid out row by row: element i is texel
// (i % width, i / width), width = imageSize(image).x (the tensor's size up to
// GL_MAX_TEXTURE_SIZE; a larger tensor wraps onto further rows). A kernel that binds such an
// operand as an image reads it in place, so the op needs no temporary buffer and no
// texture_to_buffer.comp dispatch first; one that writes its result as an image needs no
// buffer_to_texture.comp after.
//
// The op side is kerasgl/ops/storage_ops.py (run_in_place): for each operand that is a texture it
// sets the define <NAME>_TEXTURE and binds the texture at the image unit numbered like the
// operand's storage-buffer binding. A kernel adopts it per operand with a few lines, its body
// unchanged because it reads through a load macro either way:
//
//     #ifdef X_TEXTURE
//     TEXTURE_OPERAND(x_texture, 0, TEXEL_FORMAT_0);   // INT_TEXTURE_OPERAND(x_texture, 0) for int32
//     #define LOAD_X(i) TEXEL(x_texture, i)     // TEXEL4(x_texture, i) where LOAD_X gives vec4 i
//     #else
//     (x's storage block at binding 0, as before)
//     #define LOAD_X(i) x[i]
//     #endif
//
// and, for a result (the op allocates it as a texture when it returns one):
//
//     #ifdef Y_TEXTURE
//     TEXTURE_RESULT(y_texture, 1, TEXEL_FORMAT_1);
//     #define STORE_Y(i, v) STORE_TEXEL(y_texture, i, v)    // STORE_TEXEL4 for vec4 i
//     #else
//     (y's storage block at binding 1, as before)
//     #define STORE_Y(i, v) y[i] = (v)
//     #endif
//
// (The blocks are not spelled out here because plans/recorder.py finds the bindings a kernel
// writes from the qualifiers of the storage blocks in its text, comments included.)
//
// The words are the same either way: a kernel gives bit-identical results on both storages.
#ifndef TEXTURE_OPERAND_GLSL
#define TEXTURE_OPERAND_GLSL

// A float texture holds float32 texels (r32f) or IEEE halves (r16f: a float16-activation model's
// tensors, kerasgl/tensors/tensor.py HALF_TEXTURE): kerasgl defines HALF_TEXTURE_<unit> for each
// unit bound to halves, and a kernel declares the unit's format as TEXEL_FORMAT_<unit> (a
// macro argument, expanded: GLSL's preprocessor has no token pasting to derive it from the
// unit). The kernel reads and writes floats either way (the texture unit converts: a store
// rounds to a half), so its body is the same.
#ifdef HALF_TEXTURE_0
#define TEXEL_FORMAT_0 r16f
#else
#define TEXEL_FORMAT_0 r32f
#endif
#ifdef HALF_TEXTURE_1
#define TEXEL_FORMAT_1 r16f
#else
#define TEXEL_FORMAT_1 r32f
#endif
#ifdef HALF_TEXTURE_2
#define TEXEL_FORMAT_2 r16f
#else
#define TEXEL_FORMAT_2 r32f
#endif
#ifdef HALF_TEXTURE_3
#define TEXEL_FORMAT_3 r16f
#else
#define TEXEL_FORMAT_3 r32f
#endif
#ifdef HALF_TEXTURE_4
#define TEXEL_FORMAT_4 r16f
#else
#define TEXEL_FORMAT_4 r32f
#endif

#define TEXTURE_OPERAND(image, unit, format) \
    layout(format, binding = unit) readonly uniform image2D image
#define INT_TEXTURE_OPERAND(image, unit) \
    layout(r32i, binding = unit) readonly uniform iimage2D image
#define TEXTURE_RESULT(image, unit, format) \
    layout(format, binding = unit) writeonly uniform image2D image

// The texel holding element i of a texture `width` texels wide.
ivec2 texel_of(uint i, int width) { return ivec2(int(i) % width, int(i) / width); }

// HALF_STORE_ROUNDING (set where a kernel writes a texture of halves and the device policy asks
// for it: tuning half_store_rounding, llvmpipe, whose image stores truncate): the value stored is
// first rounded to the nearest half, ties to even, as numpy and GPUs' stores round; the store then
// converts it exactly.
#ifdef HALF_STORE_ROUNDING
vec4 half_rounded(vec4 v) {
    uvec4 bits = floatBitsToUint(v);
    uvec4 exponent = (bits >> 23) & 0xffu;
    // Normal halves keep 11 significant bits: drop 13, ties to even.
    uvec4 normal = (bits + 0xfffu + ((bits >> 13) & 1u)) & ~0x1fffu;
    vec4 rounded = uintBitsToFloat(normal);
    // Below 2^-14 halves are subnormal, multiples of 2^-24 (the scaling is exact).
    rounded = mix(rounded, roundEven(v * 16777216.0) * 5.9604644775390625e-8,
                  lessThan(exponent, uvec4(113u)));
    // Beyond the largest half (65504) a value rounds to infinity, as numpy's cast does (the store
    // alone would clamp it to 65504 here).
    rounded = mix(rounded, uintBitsToFloat((bits & 0x80000000u) | 0x7f800000u),
                  greaterThan(abs(rounded), vec4(65504.0)));
    return mix(rounded, v, equal(exponent, uvec4(255u)));     // infinities and NaN as they are
}
#define STORED(v) half_rounded(vec4(v))
#else
#define STORED(v) vec4(v)
#endif

// Element i: a float (an int from an iimage2D).
#define TEXEL(image, i) imageLoad(image, texel_of(uint(i), imageSize(image).x)).x
#define STORE_TEXEL(image, i, v) \
    imageStore(image, texel_of(uint(i), imageSize(image).x), STORED(v))

// Elements 4i .. 4i+3 as a vec4 (vec4 kernels): adjacent texels of one row, since a vec4
// kernel's tensors hold a multiple of 4 elements and a texture's width is then a multiple of 4
// too (the size itself, or GL_MAX_TEXTURE_SIZE, which storage_ops.textures_in_place checks). So
// one division finds the row (the compiler folds the four texel_of calls, which are the same),
// where reading the elements one by one would take four.
#define TEXEL4_AT(image, i, k) \
    imageLoad(image, texel_of(4u * uint(i), imageSize(image).x) + ivec2(k, 0)).x
#define TEXEL4(image, i) vec4(TEXEL4_AT(image, i, 0), TEXEL4_AT(image, i, 1), \
                              TEXEL4_AT(image, i, 2), TEXEL4_AT(image, i, 3))
// A statement (a block): write `STORE_Y(i, v);` on a line of its own.
#define STORE_TEXEL4(image, i, v) { \
    ivec2 at_ = texel_of(4u * uint(i), imageSize(image).x); vec4 v_ = STORED(v); \
    imageStore(image, at_, vec4(v_.x)); \
    imageStore(image, at_ + ivec2(1, 0), vec4(v_.y)); \
    imageStore(image, at_ + ivec2(2, 0), vec4(v_.z)); \
    imageStore(image, at_ + ivec2(3, 0), vec4(v_.w)); }
#endif
