// The verify suite's synthetic producer (src/verify/site.rs is its host and
// its CPU reference): input item i makes PRODUCE_K candidates, candidate j
// worth (i << 5 | j) + 1, kept where bit j of a seeded hash of i is set, so a
// thread emits 0..K items. Fused (REAP_SITE_PRODUCE a REAP_SITE_*), it emits
// through the site; separate, it writes every slot, dead ones as the sentinel,
// and the library's select runs after it.
#include "site.cuh"

#ifndef REAP_SITE_PRODUCE
#define REAP_SITE_PRODUCE REAP_SITE_SEPARATE
#endif
#define PRODUCE_BLOCK 256
#define PRODUCE_K 4
#define PRODUCE_DEAD64 0xffffffffffffffffull
#define PRODUCE_DEAD32 0xffffffffu

// splitmix64 of the item and the seed (site.rs `mix`).
__device__ __forceinline__ u64 produce_mix(u64 i, u32 seed) {
    u64 z = (i ^ ((u64)seed << 32)) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// words[len_at]: the input's length n. Fused: the kept total goes to
// words[count_at]. Separate: the slots' length (K n) goes there and the
// slots to `out`.
extern "C" __global__ void __launch_bounds__(PRODUCE_BLOCK)
    site_produce(u64* words, u64 len_at, u64 count_at, u32 seed, u64* out, Site site) {
    u64 n = words[len_at];
#if REAP_SITE_PRODUCE == REAP_SITE_SEPARATE
    if (blockIdx.x == 0 && threadIdx.x == 0) words[count_at] = n * PRODUCE_K;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u32 keep = (u32)produce_mix(i, seed) & ((1u << PRODUCE_K) - 1);
#pragma unroll
        for (u32 j = 0; j < PRODUCE_K; j++) out[i * PRODUCE_K + j] = (keep >> j) & 1 ? ((i << 5) | j) + 1 : PRODUCE_DEAD64;
    }
#else
    SiteLoop l = site_loop<REAP_SITE_PRODUCE, PRODUCE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_PRODUCE>(site, l); t < l.tiles; t = site_next<REAP_SITE_PRODUCE>(site, l, t)) {
        u64 i = (u64)t * PRODUCE_BLOCK + threadIdx.x;
        u64 items[PRODUCE_K];
        u32 keep = 0;
#pragma unroll
        for (u32 j = 0; j < PRODUCE_K; j++) items[j] = ((i << 5) | j) + 1;
        if (i < n) keep = (u32)produce_mix(i, seed) & ((1u << PRODUCE_K) - 1);
        site_emit<REAP_SITE_PRODUCE, PRODUCE_BLOCK, PRODUCE_K>(site, l, t, items, keep, out);
    }
    u64 total;
    if (site_finish<REAP_SITE_PRODUCE, PRODUCE_BLOCK, PRODUCE_K>(site, l, out, &total)) words[count_at] = total;
#endif
}

// One 4-byte candidate per item (a path queue's shape): item i kept, as i,
// where bit 0 of its hash is set.
extern "C" __global__ void __launch_bounds__(PRODUCE_BLOCK)
    site_produce_one(u64* words, u64 len_at, u64 count_at, u32 seed, u32* out, Site site) {
    u64 n = words[len_at];
#if REAP_SITE_PRODUCE == REAP_SITE_SEPARATE
    if (blockIdx.x == 0 && threadIdx.x == 0) words[count_at] = n;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = produce_mix(i, seed) & 1 ? (u32)i : PRODUCE_DEAD32;
#else
    SiteLoop l = site_loop<REAP_SITE_PRODUCE, PRODUCE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_PRODUCE>(site, l); t < l.tiles; t = site_next<REAP_SITE_PRODUCE>(site, l, t)) {
        u64 i = (u64)t * PRODUCE_BLOCK + threadIdx.x;
        u32 items[1] = {(u32)i};
        u32 keep = i < n ? (u32)produce_mix(i, seed) & 1 : 0;
        site_emit<REAP_SITE_PRODUCE, PRODUCE_BLOCK, 1>(site, l, t, items, keep, out);
    }
    u64 total;
    if (site_finish<REAP_SITE_PRODUCE, PRODUCE_BLOCK, 1>(site, l, out, &total)) words[count_at] = total;
#endif
}
