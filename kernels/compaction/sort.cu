// Radix sort by repeated split (seed 000 §5.3) moves key-value pairs
// interleaved, as the paper does; these kernels pack separate keys and values
// into pairs before the splits and unpack them after. REAP_KEY_BYTES is 4
// (pairs are two u32) or 8 (a u64 key and the value widened to u64).
#include "common.cuh"

#if REAP_KEY_BYTES == 8
typedef u64 Key;
#else
typedef u32 Key;
#endif

extern "C" __global__ void interleave(u64 n, const Key* keys, const u32* values, Key* pairs) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        pairs[2 * i] = keys[i];
        pairs[2 * i + 1] = (Key)values[i];
    }
}

extern "C" __global__ void deinterleave(u64 n, const Key* pairs, Key* keys, u32* values) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        keys[i] = pairs[2 * i];
        values[i] = (u32)pairs[2 * i + 1];
    }
}
