// Index helpers for ops that reduce over a set of axes (see kerasgl/ops/axes.py).
// The kept axes and the reduced axes of a tensor are each merged into at most 4 groups of
// (size, element stride). One invocation owns one kept position (`outer`) and walks its
// reduced elements r = 0 .. red_len-1 in C order. Define RED_GROUPS (1..4, 0 for none).
#define MAX_GROUPS 4
uniform int kept_count;
uniform int kept_sizes[MAX_GROUPS];
uniform int kept_strides[MAX_GROUPS];
uniform int red_sizes[MAX_GROUPS];
uniform int red_strides[MAX_GROUPS];
uniform int red_len;

int kept_offset(int outer) {
    int offset = 0;
    for (int g = kept_count - 1; g >= 0; --g) {
        offset += (outer % kept_sizes[g]) * kept_strides[g];
        outer /= kept_sizes[g];
    }
    return offset;
}

int reduced_offset(int r) {
#if RED_GROUPS <= 1
    return r * red_strides[0];
#else
    int offset = 0;
    for (int g = RED_GROUPS - 1; g >= 0; --g) {
        offset += (r % red_sizes[g]) * red_strides[g];
        r /= red_sizes[g];
    }
    return offset;
#endif
}
