// Warp-level helpers shared by the compaction kernels (compaction/common.cuh)
// and the collision demo (collide/collide.cu). List `WARP`
// (src/compaction/cuda/runtime.rs) in an including `Source`'s headers.
#pragma once

__device__ __forceinline__ unsigned int reap_lane() { return threadIdx.x & 31; }

// Inclusive warp scan (Hillis-Steele over the 32 lanes); every lane must call it.
template <typename T>
__device__ __forceinline__ T reap_warp_inclusive(T v) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        T up = __shfl_up_sync(0xffffffffu, v, d);
        if (reap_lane() >= (unsigned int)d) v += up;
    }
    return v;
}
