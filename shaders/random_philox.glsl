// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator. philox(counter, key) is a pure function, so element i of a tensor made
// with seed s is the same on every GPU and every run, and no state lives between dispatches.

const uint PHILOX_M0 = 0xD2511F53u;
const uint PHILOX_M1 = 0xCD9E8D57u;
const uint PHILOX_W0 = 0x9E3779B9u;
const uint PHILOX_W1 = 0xBB67AE85u;

uvec4 philox_round(uvec4 c, uvec2 k) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(PHILOX_M0, c.x, hi0, lo0);
    umulExtended(PHILOX_M1, c.z, hi1, lo1);
    return uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
}

uvec4 philox(uvec4 counter, uvec2 key) {
    for (int r = 0; r < 10; ++r) {
        counter = philox_round(counter, key);
        key += uvec2(PHILOX_W0, PHILOX_W1);
    }
    return counter;
}

// 24 random bits -> a float in [0, 1), exactly representable, evenly spaced.
vec4 uniform01(uvec4 bits) {
    return vec4(bits >> 8u) * (1.0 / 16777216.0);
}
