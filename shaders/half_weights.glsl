// A kernel's weights operand, stored as float32 or as IEEE half (kg.load_model(path,
// storage_dtype="float16"): two halves per 32-bit word, element 2k in the low 16 bits of word k,
// packHalf2x16's layout; kerasgl/tensors/tensor.py half_tensor packs them at load). Halves are
// converted to float32 as they are read: all arithmetic stays float32, only the weights' values
// are rounded. Included by matmul.comp and matmul_tiled.comp (B), conv2d.comp and conv_gemm.comp
// (the packed convolution weights), embedding_rows.comp (the table).
//
// The including shader defines, before including this file:
//   W_BINDING   the weights' binding: their storage buffer's, or with W_IMAGE the image unit
//   W_IMAGE     1: read through a texture-buffer view of the buffer (kerasgl/runtime/
//               buffer_views.py): float32 as rgba32f (texel i = vec4 i), float16 as rg32ui (texel
//               i = the two words holding vec4 i's four halves: the same texel index); 0: as a
//               storage buffer
//   W_VEC4      1: the kernel reads vec4s (the buffer is declared as vec4s, or for halves as
//               uvec2s: one load per vec4); 0: floats (halves: words)
// and kerasgl sets WEIGHTS_F16 (1: the weights are halves; absent: float32), and with it
// HALF_DECODE_INTEGER where the device policy asks for the integer decode below (llvmpipe).
// ops/dispatch.py refuses a float16 tensor to any dispatch without WEIGHTS_F16.
// Provides, for either storage:
//   vec4 load_w4(int i)   weights 4i .. 4i+3 (i counts vec4s)
//   float load_w(int i)   weight i
// The float32 forms read exactly what the kernels read before this file existed (same loads).
#ifndef WEIGHTS_F16
#define WEIGHTS_F16 0
#endif

#ifndef HALF_DECODE_INTEGER
#define HALF_DECODE_INTEGER 0
#endif

#if WEIGHTS_F16
#if HALF_DECODE_INTEGER
// Four halves (each in the low 16 bits of its lane) as float32s, exactly: a normal half's bits
// moved into a float32's (exponent rebiased by 112), a subnormal or zero as its integer mantissa
// times 2^-24, infinities and NaN as such; then the sign. The same values unpackHalf2x16 gives,
// in vector integer operations. Chosen by the device policy (tuning half_decode_integer):
// llvmpipe runs unpackHalf2x16 lane by lane, which made a 3x3 convolution over 56x56x64
// (conv2d.comp, weights through a view) take 18.7 ms against float32 weights' 9.7; this takes
// 7.9 against 7.4 (2 shared cores, load average about 6; at about 2: 3.9 against 3.5).
vec4 halves_to_floats(uvec4 h) {
    uvec4 magnitude = h & 0x7fffu;
    vec4 v = uintBitsToFloat((magnitude << 13) + 0x38000000u);
    v = mix(v, vec4(magnitude) * 5.9604644775390625e-8, lessThan(magnitude, uvec4(0x400u)));
    v = mix(v, uintBitsToFloat((magnitude << 13) | 0x7f800000u),
            greaterThanEqual(magnitude, uvec4(0x7c00u)));
    return uintBitsToFloat(floatBitsToUint(v) | ((h & 0x8000u) << 16));
}

// The four halves of two words, in order (element 2k in the low half of word k).
vec4 words_to_vec4(uvec2 words) {
    return halves_to_floats(uvec4(words.x & 0xffffu, words.x >> 16, words.y & 0xffffu,
                                  words.y >> 16));
}

float word_half(uint word, int which) {
    return halves_to_floats(uvec4(which != 0 ? word >> 16 : word & 0xffffu)).x;
}
#else
// GPUs convert halves in hardware: the built-in, on the words as stored (packHalf2x16's layout).
vec4 words_to_vec4(uvec2 words) {
    return vec4(unpackHalf2x16(words.x), unpackHalf2x16(words.y));
}

float word_half(uint word, int which) {
    vec2 both = unpackHalf2x16(word);
    return which != 0 ? both.y : both.x;
}
#endif

#if W_IMAGE
layout(rg32ui, binding = W_BINDING) readonly uniform uimageBuffer w_half_view;
vec4 load_w4(int i) { return words_to_vec4(imageLoad(w_half_view, i).xy); }
float load_w(int i) {
    uvec2 words = imageLoad(w_half_view, i >> 2).xy;
    return word_half((i & 2) != 0 ? words.y : words.x, i & 1);
}
#elif W_VEC4
layout(std430, binding = W_BINDING) readonly buffer WeightWords { uvec2 w_pairs[]; };
vec4 load_w4(int i) { return words_to_vec4(w_pairs[i]); }
float load_w(int i) {
    uvec2 words = w_pairs[i >> 2];
    return word_half((i & 2) != 0 ? words.y : words.x, i & 1);
}
#else
layout(std430, binding = W_BINDING) readonly buffer WeightWords { uint w_words[]; };
vec4 load_w4(int i) { return words_to_vec4(uvec2(w_words[2 * i], w_words[2 * i + 1])); }
float load_w(int i) { return word_half(w_words[i >> 1], i & 1); }
#endif

#elif W_IMAGE
layout(rgba32f, binding = W_BINDING) readonly uniform imageBuffer w_view;
vec4 load_w4(int i) { return imageLoad(w_view, i); }
float load_w(int i) { return imageLoad(w_view, i >> 2)[i & 3]; }
#elif W_VEC4
layout(std430, binding = W_BINDING) readonly buffer Weights { vec4 w4[]; };
vec4 load_w4(int i) { return w4[i]; }
float load_w(int i) { return w4[i >> 2][i & 3]; }
#else
layout(std430, binding = W_BINDING) readonly buffer Weights { float w1[]; };
vec4 load_w4(int i) { return vec4(w1[4 * i], w1[4 * i + 1], w1[4 * i + 2], w1[4 * i + 3]); }
float load_w(int i) { return w1[i]; }
#endif
