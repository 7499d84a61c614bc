// The inter-block state of the single-pass algorithms (decoupled look-back,
// chained scan): the tile-state word, the memory orderings that publish and
// read it, and the back-off between polls. It needs no element type, so the
// library's kernels (single_pass.cuh) and fused producers (site.cuh) share it.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// Tile state: [status:2 | epoch:16 | value:46] in one 64-bit word. The state
// buffer persists across calls; a word written by an earlier call carries an
// older epoch and reads as INVALID, so no call clears the buffer first (the
// host clears it when the 16-bit epoch wraps). 46 bits count 7e13 elements.
#define ST_INVALID 0ull
#define ST_AGGREGATE 1ull
#define ST_PREFIX 2ull
#define ST_SHIFT 62
#define ST_EPOCH_SHIFT 46
#define ST_VALUE(w) ((w) & ((1ull << ST_EPOCH_SHIFT) - 1))
#define ST_WORD(status, epoch, value) (((status) << ST_SHIFT) | ((u64)(epoch) << ST_EPOCH_SHIFT) | (value))
__device__ __forceinline__ u64 st_status(u64 w, u32 epoch) {
    return ((w >> ST_EPOCH_SHIFT) & 0xffff) == epoch ? (w >> ST_SHIFT) : ST_INVALID;
}

// Nanoseconds a look-back sleeps between polls of a predecessor not yet
// published (0: spin), so spinning warps leave issue slots to loading ones.
#ifndef REAP_DELAY
#define REAP_DELAY 0
#endif
__device__ __forceinline__ void reap_backoff() {
#if REAP_DELAY > 0
    __nanosleep(REAP_DELAY);
#endif
}

// Inter-block flags. A status and its value share one 64-bit word, so a
// relaxed GPU-scope store publishes both at once and no fence is needed.
__device__ __forceinline__ void reap_store_relaxed(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 reap_load_relaxed(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
// Release / acquire pair for a flag that guards data written before it.
__device__ __forceinline__ void reap_store_release(u32* p, u32 v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u32 reap_load_acquire(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
