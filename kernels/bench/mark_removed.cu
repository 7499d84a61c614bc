// Seed 004 §5 adds a phase 1 to every competitor of Redzone: "parallel for r
// in R: A[r] = deleted". reap's bench (src/bench/cuda.rs) times this kernel,
// then the competitor's select drops the marked elements by sentinel.
#include "../compaction/common.cuh"

// data[list[j]] = all-ones bytes (the sentinel) for every j < k.
extern "C" __global__ void mark_removed(u64 k, const u64* list, Elem* data) {
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < k; j += (u64)gridDim.x * blockDim.x) {
        u32* w = (u32*)&data[list[j]];
        for (int q = 0; q < REAP_ELEM_BYTES / 4; ++q) w[q] = 0xffffffffu;
    }
}
