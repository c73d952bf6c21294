#version 430
// The whole recurrence of a SimpleRNN / LSTM / GRU layer in one dispatch: each work group owns
// BPG sequences of the batch and loops over every time step, with the hidden state h of its
// sequences in shared memory and barrier() between the phases of a step. The input projection
// x @ W + b of every step was computed before, as one matmul (xproj).
//
// Units are padded to UP = a multiple of 4 (zero rows/columns in the recurrent kernel, zero
// projections), so a lane works on vec4 quads of units; padded units never feed real ones.
// Each lane owns QPL quads (lane, lane + LANES, ...) for all BPG sequences, so LSTM's cell state
// stays in the lane's registers.
//
// Defines:
//   CELL        0 SimpleRNN, 1 LSTM, 2 GRU (reset_after), 3 GRU (reset before the matmul)
//   G           gates: 1, 4, 3, 3
//   UQ          UP / 4 (quads of units);  LANES  work group size;  QPL  quads per lane
//   BPG         sequences per work group
//   ACT, REC_ACT  activation and recurrent activation (functions of activations.glsl)
//   ACT_NORM, REC_NORM  0, or 1 softmax / 2 log_softmax over the units of each sequence (the
//               matching ACT / REC_ACT is then act_linear). Either one selects GROUP_NORM: the
//               step computes every pre-activation first, then normalises it with a work-group
//               reduction (max, then sum of exp) between barriers. Pointwise layers keep the
//               direct path below unchanged.
//   HAS_MASK    read mask[b, t] (0: the step is skipped: state kept, output as below)
//   HAS_REC_BIAS  GRU reset_after's recurrent bias
//   HAS_H0, HAS_C0  initial states given (else zeros)
//   RETURN_SEQUENCES  write every step's output (else only the last)
// Uniforms: batch, T, units, go_backwards, zero_masked_output (Bidirectional with sequences: a
// skipped step outputs zeros), zero_until_unmasked (unroll=True: before the first kept step the
// "previous output" is zeros, not the initial state), time_order (sequences in input time order
// rather than processing order: stacked cells and Bidirectional's backward layer).
#include "common.glsl"
#include "activations.glsl"

layout(local_size_x = LANES) in;

layout(std430, binding = 0) readonly buffer XProj { vec4 xproj4[]; };   // (batch, T, G*UP)
layout(std430, binding = 1) readonly buffer RecKernel { vec4 u4[]; };   // (UP, G*UP)
layout(std430, binding = 2) readonly buffer RecBias { vec4 rbias4[]; }; // (G*UP)
layout(std430, binding = 3) readonly buffer H0 { float h0[]; };         // (batch, units)
layout(std430, binding = 4) readonly buffer C0 { float c0[]; };         // (batch, units)
layout(std430, binding = 5) readonly buffer Mask { float mask[]; };     // (batch, T)
layout(std430, binding = 6) writeonly buffer Out { float out_y[]; };    // (batch, T|1, units)
layout(std430, binding = 7) writeonly buffer HOut { float h_out[]; };   // (batch, units)
layout(std430, binding = 8) writeonly buffer COut { float c_out[]; };   // (batch, units)

uniform int batch;
uniform int T;
uniform int units;
uniform int go_backwards;
uniform int zero_masked_output;
uniform int zero_until_unmasked;
uniform int time_order;      // write step s's output at its input time t (not at s)

shared vec4 h_sh[BPG * UQ];
#if CELL == 3
shared vec4 rh_sh[BPG * UQ];
#endif

vec4 act4(vec4 v) { return vec4(ACT(v.x), ACT(v.y), ACT(v.z), ACT(v.w)); }
vec4 rec4(vec4 v) { return vec4(REC_ACT(v.x), REC_ACT(v.y), REC_ACT(v.z), REC_ACT(v.w)); }

#define GROUP_NORM (ACT_NORM != 0 || REC_NORM != 0)
#if GROUP_NORM
// Per-lane partial max and sum for each (sequence, slot) of a normalisation.
shared float red_max[BPG * 4 * LANES];
shared float red_sum[BPG * 4 * LANES];

// The activations of a step's slots v[(s * QPL + p) * 4 + k] (k < 4: a gate or the cell state),
// in place: which[k] = 0 leaves slot k, 1 applies the activation, 2 the recurrent activation.
// softmax / log_softmax run over the real units of each sequence, as Keras applies them to a
// (batch, units) tensor; padded units take no part (and come out 0). Every lane must call this
// (it has barriers); it leaves red_max / red_sum free for the next call.
void activate(inout vec4 v[BPG * QPL * 4], ivec4 which) {
    int lane = int(gl_LocalInvocationID.x);
    ivec4 mode = ivec4(0);
    for (int k = 0; k < 4; ++k) mode[k] = which[k] == 1 ? ACT_NORM : (which[k] == 2 ? REC_NORM : 0);
    // Pointwise slots first; padded units of normalised slots are excluded below.
    for (int s = 0; s < BPG; ++s) {
        for (int p = 0; p < QPL; ++p) {
            int q = lane + p * LANES;
            if (q >= UQ) break;
            for (int k = 0; k < 4; ++k) {
                int r = (s * QPL + p) * 4 + k;
                if (which[k] == 1 && mode[k] == 0) v[r] = act4(v[r]);
                else if (which[k] == 2 && mode[k] == 0) v[r] = rec4(v[r]);
            }
        }
    }
    if (mode == ivec4(0)) return;     // uniform: the same for every lane
    for (int s = 0; s < BPG; ++s) {
        for (int k = 0; k < 4; ++k) {
            if (mode[k] == 0) continue;
            float m = -3.4e38;
            for (int p = 0; p < QPL; ++p) {
                int q = lane + p * LANES;
                if (q >= UQ) break;
                for (int i = 0; i < 4; ++i) {
                    if (4 * q + i < units) m = max(m, v[(s * QPL + p) * 4 + k][i]);
                }
            }
            red_max[(s * 4 + k) * LANES + lane] = m;
        }
    }
    barrier();
    float mx[BPG * 4];
    for (int s = 0; s < BPG; ++s) {
        for (int k = 0; k < 4; ++k) {
            if (mode[k] == 0) continue;
            float m = -3.4e38;
            for (int l = 0; l < LANES; ++l) m = max(m, red_max[(s * 4 + k) * LANES + l]);
            mx[s * 4 + k] = m;
            float sum = 0.0;
            for (int p = 0; p < QPL; ++p) {
                int q = lane + p * LANES;
                if (q >= UQ) break;
                for (int i = 0; i < 4; ++i) {
                    if (4 * q + i < units) sum += exp(v[(s * QPL + p) * 4 + k][i] - m);
                }
            }
            red_sum[(s * 4 + k) * LANES + lane] = sum;
        }
    }
    barrier();
    for (int s = 0; s < BPG; ++s) {
        for (int k = 0; k < 4; ++k) {
            if (mode[k] == 0) continue;
            float total = 0.0;
            for (int l = 0; l < LANES; ++l) total += red_sum[(s * 4 + k) * LANES + l];
            float m = mx[s * 4 + k];
            float log_total = log(total);
            for (int p = 0; p < QPL; ++p) {
                int q = lane + p * LANES;
                if (q >= UQ) break;
                int r = (s * QPL + p) * 4 + k;
                vec4 y;
                for (int i = 0; i < 4; ++i) {
                    float shifted = v[r][i] - m;
                    y[i] = 4 * q + i >= units ? 0.0
                         : (mode[k] == 1 ? exp(shifted) / total : shifted - log_total);
                }
                v[r] = y;
            }
        }
    }
    barrier();
}
#endif

vec4 load_state(int which, int b, int q) {
    // which: 0 = h0, 1 = c0; padded units read 0.
    vec4 v = vec4(0.0);
    for (int i = 0; i < 4; ++i) {
        int j = 4 * q + i;
        if (j < units) v[i] = which == 0 ? h0[b * units + j] : c0[b * units + j];
    }
    return v;
}

void store4(int which, int base, int q, vec4 v) {
    for (int i = 0; i < 4; ++i) {
        int j = 4 * q + i;
        if (j >= units) break;
        if (which == 0) out_y[base + j] = v[i];
        else if (which == 1) h_out[base + j] = v[i];
        else c_out[base + j] = v[i];
    }
}

// acc[s * G + g] += sum_k state[s][k] * U[k, g, q] for every sequence s of the group and the
// gates g0 <= g < g1: each load of the recurrent kernel serves all BPG sequences.
void recurrent_matmul(inout vec4 acc[BPG * G], int q, int g0, int g1, bool from_rh) {
    for (int k4 = 0; k4 < UQ; ++k4) {
        vec4 hv[BPG];
        for (int s = 0; s < BPG; ++s) {
#if CELL == 3
            hv[s] = from_rh ? rh_sh[s * UQ + k4] : h_sh[s * UQ + k4];
#else
            hv[s] = h_sh[s * UQ + k4];
#endif
        }
        int row = 4 * k4 * G * UQ;
        for (int g = g0; g < g1; ++g) {
            int i = row + g * UQ + q;
            vec4 u0 = u4[i], u1 = u4[i + G * UQ], u2 = u4[i + 2 * G * UQ], u3 = u4[i + 3 * G * UQ];
            for (int s = 0; s < BPG; ++s) {
                acc[s * G + g] += hv[s].x * u0 + hv[s].y * u1 + hv[s].z * u2 + hv[s].w * u3;
            }
        }
    }
}

void main() {
    int lane = int(gl_LocalInvocationID.x);
    int b0 = int(gl_WorkGroupID.x) * BPG;

    // State owned by this lane: h (also in shared memory), c (LSTM), the last output.
    vec4 h_reg[BPG * QPL];
    vec4 c_reg[BPG * QPL];
    vec4 y_reg[BPG * QPL];
    bool seen[BPG];
    for (int s = 0; s < BPG; ++s) {
        seen[s] = false;
        int b = min(b0 + s, batch - 1);
        for (int p = 0; p < QPL; ++p) {
            int q = lane + p * LANES;
            if (q >= UQ) break;
#if HAS_H0
            vec4 h = load_state(0, b, q);
#else
            vec4 h = vec4(0.0);
#endif
#if HAS_C0
            vec4 c = load_state(1, b, q);
#else
            vec4 c = vec4(0.0);
#endif
            h_reg[s * QPL + p] = h;
            c_reg[s * QPL + p] = c;
            y_reg[s * QPL + p] = h;
            h_sh[s * UQ + q] = h;
        }
    }
    barrier();

    for (int step = 0; step < T; ++step) {
        int t = go_backwards != 0 ? T - 1 - step : step;
        vec4 new_h[BPG * QPL];
        vec4 new_c[BPG * QPL];
#if !GROUP_NORM
        vec4 gates[BPG * QPL];       // GRU reset before: z, until the candidate is computed
        for (int p = 0; p < QPL; ++p) {
            int q = lane + p * LANES;
            if (q >= UQ) break;
            vec4 acc[BPG * G];
            for (int i = 0; i < BPG * G; ++i) acc[i] = vec4(0.0);
#if CELL == 3
            // z and r now; the candidate's matmul needs r * h from every lane first.
            recurrent_matmul(acc, q, 0, 2, false);
#else
            recurrent_matmul(acc, q, 0, G, false);
#endif
            for (int s = 0; s < BPG; ++s) {
                int b = min(b0 + s, batch - 1);
                int xbase = (b * T + t) * G * UQ;
                int a = s * G;
                int r = s * QPL + p;
#if CELL == 0
                new_h[r] = act4(xproj4[xbase + q] + acc[a]);
#elif CELL == 1
                vec4 i_g = rec4(xproj4[xbase + q] + acc[a]);
                vec4 f_g = rec4(xproj4[xbase + UQ + q] + acc[a + 1]);
                vec4 c_new = f_g * c_reg[r] + i_g * act4(xproj4[xbase + 2 * UQ + q] + acc[a + 2]);
                vec4 o_g = rec4(xproj4[xbase + 3 * UQ + q] + acc[a + 3]);
                new_c[r] = c_new;
                new_h[r] = o_g * act4(c_new);
#elif CELL == 2
#if HAS_REC_BIAS
                for (int g = 0; g < 3; ++g) acc[a + g] += rbias4[g * UQ + q];
#endif
                vec4 z = rec4(xproj4[xbase + q] + acc[a]);
                vec4 rg = rec4(xproj4[xbase + UQ + q] + acc[a + 1]);
                vec4 hh = act4(xproj4[xbase + 2 * UQ + q] + rg * acc[a + 2]);
                new_h[r] = z * h_reg[r] + (1.0 - z) * hh;
#else
                gates[r] = rec4(xproj4[xbase + q] + acc[a]);
                rh_sh[s * UQ + q] = rec4(xproj4[xbase + UQ + q] + acc[a + 1]) * h_reg[r];
#endif
            }
        }
#if CELL == 3
        barrier();
        for (int p = 0; p < QPL; ++p) {
            int q = lane + p * LANES;
            if (q >= UQ) break;
            vec4 acc[BPG * G];
            for (int i = 0; i < BPG * G; ++i) acc[i] = vec4(0.0);
            recurrent_matmul(acc, q, 2, 3, true);
            for (int s = 0; s < BPG; ++s) {
                int b = min(b0 + s, batch - 1);
                int r = s * QPL + p;
                vec4 hh = act4(xproj4[(b * T + t) * G * UQ + 2 * UQ + q] + acc[s * G + 2]);
                new_h[r] = gates[r] * h_reg[r] + (1.0 - gates[r]) * hh;
            }
        }
#endif
#else   // GROUP_NORM: every pre-activation of the step first, then the (collective) activations.
        vec4 v[BPG * QPL * 4];
        vec4 rec_h[BPG * QPL];      // GRU reset_after: h @ U_h + b_h, scaled by r once r is known
        for (int p = 0; p < QPL; ++p) {
            int q = lane + p * LANES;
            if (q >= UQ) break;
            vec4 acc[BPG * G];
            for (int i = 0; i < BPG * G; ++i) acc[i] = vec4(0.0);
#if CELL == 3
            recurrent_matmul(acc, q, 0, 2, false);
#else
            recurrent_matmul(acc, q, 0, G, false);
#endif
            for (int s = 0; s < BPG; ++s) {
                int b = min(b0 + s, batch - 1);
                int xbase = (b * T + t) * G * UQ;
                int r = s * QPL + p;
#if CELL == 2 && HAS_REC_BIAS
                for (int g = 0; g < 3; ++g) acc[s * G + g] += rbias4[g * UQ + q];
#endif
                for (int g = 0; g < G; ++g) v[r * 4 + g] = xproj4[xbase + g * UQ + q] + acc[s * G + g];
#if CELL >= 2
                v[r * 4 + 2] = xproj4[xbase + 2 * UQ + q];
                rec_h[r] = acc[s * G + 2];
#endif
            }
        }
#if CELL == 0
        activate(v, ivec4(1, 0, 0, 0));
        for (int r = 0; r < BPG * QPL; ++r) new_h[r] = v[r * 4];
#elif CELL == 1
        activate(v, ivec4(2, 2, 1, 2));      // i, f, candidate, o
        vec4 cv[BPG * QPL * 4];
        for (int r = 0; r < BPG * QPL; ++r) {
            new_c[r] = v[r * 4 + 1] * c_reg[r] + v[r * 4] * v[r * 4 + 2];
            cv[r * 4] = new_c[r];
        }
        activate(cv, ivec4(1, 0, 0, 0));
        for (int r = 0; r < BPG * QPL; ++r) new_h[r] = v[r * 4 + 3] * cv[r * 4];
#else
        activate(v, ivec4(2, 2, 0, 0));      // z, r
#if CELL == 3
        // The candidate's matmul needs r * h from every lane.
        for (int s = 0; s < BPG; ++s) {
            for (int p = 0; p < QPL; ++p) {
                int q = lane + p * LANES;
                if (q >= UQ) break;
                rh_sh[s * UQ + q] = v[(s * QPL + p) * 4 + 1] * h_reg[s * QPL + p];
            }
        }
        barrier();
        for (int p = 0; p < QPL; ++p) {
            int q = lane + p * LANES;
            if (q >= UQ) break;
            vec4 acc[BPG * G];
            for (int i = 0; i < BPG * G; ++i) acc[i] = vec4(0.0);
            recurrent_matmul(acc, q, 2, 3, true);
            for (int s = 0; s < BPG; ++s) v[(s * QPL + p) * 4 + 2] += acc[s * G + 2];
        }
#else
        for (int r = 0; r < BPG * QPL; ++r) v[r * 4 + 2] += v[r * 4 + 1] * rec_h[r];
#endif
        activate(v, ivec4(0, 0, 1, 0));
        for (int r = 0; r < BPG * QPL; ++r) {
            vec4 z = v[r * 4];
            new_h[r] = z * h_reg[r] + (1.0 - z) * v[r * 4 + 2];
        }
#endif
#endif  // GROUP_NORM
        barrier();   // every lane has read h_sh (and rh_sh) for this step
        for (int s = 0; s < BPG; ++s) {
            int b = min(b0 + s, batch - 1);
#if HAS_MASK
            bool keep = mask[b * T + t] != 0.0;
#else
            bool keep = true;
#endif
            if (keep) seen[s] = true;
            for (int p = 0; p < QPL; ++p) {
                int q = lane + p * LANES;
                if (q >= UQ) break;
                int r = s * QPL + p;
                vec4 y;
                if (keep) {
                    h_reg[r] = new_h[r];
#if CELL == 1
                    c_reg[r] = new_c[r];
#endif
                    y = new_h[r];
                } else if (zero_masked_output != 0 || (zero_until_unmasked != 0 && !seen[s])) {
                    y = vec4(0.0);
                } else {
                    y = h_reg[r];     // Keras: a skipped step repeats the previous output
                }
                y_reg[r] = y;
                h_sh[s * UQ + q] = h_reg[r];
#if RETURN_SEQUENCES
                if (b0 + s < batch) store4(0, (b * T + (time_order != 0 ? t : step)) * units, q, y);
#endif
            }
        }
        barrier();
    }

    for (int s = 0; s < BPG; ++s) {
        int b = b0 + s;
        if (b >= batch) break;
        for (int p = 0; p < QPL; ++p) {
            int q = lane + p * LANES;
            if (q >= UQ) break;
#if !RETURN_SEQUENCES
            store4(0, b * units, q, y_reg[s * QPL + p]);
#endif
            store4(1, b * units, q, h_reg[s * QPL + p]);
#if CELL == 1
            store4(2, b * units, q, c_reg[s * QPL + p]);
#endif
        }
    }
}
