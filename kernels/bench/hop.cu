// The inter-block hop, measured alone (issue 44, `reap bench hop`): a
// ping-pong between two blocks and a chain of blocks, each handing a flag word
// to the next with the single-pass kernels' relaxed GPU-scope loads and stores
// (tile_state.cuh), on 64-bit words as their tile states are. Twin of
// shaders/bench/hop.wgsl; the host is src/bench/hop/ (keep the layout in sync).
//
// Every wait is bounded by `budget` polls in all per thread, so a block that is
// never scheduled shows as an error in words[HOP_ERR], not as a hang.
#include "../compaction/tile_state.cuh"

// 64-bit words per 128 bytes: every flag sits on a line of its own.
#define HOP_LINE 16u
#define HOP_ERR 0u
#define HOP_DONE 16u
#define HOP_NEXT_ID 32u
#define HOP_FLAGS 64u
#define HOP_PONG (HOP_FLAGS + 8u * HOP_LINE)

#define HOP_SEEN 0u
#define HOP_BOUND 1u
#define HOP_ABANDONED 3u

// Poll with atomicOr(x, 0) (a read-modify-write) instead of ld.relaxed.gpu.
#ifndef REAP_HOP_RMW
#define REAP_HOP_RMW 0
#endif

__device__ __forceinline__ u64 hop_poll(u64* p) {
#if REAP_HOP_RMW
    return atomicOr(p, 0ull);
#else
    return reap_load_relaxed(p);
#endif
}

// Polls *p until it equals `want`, spending polls from *left.
__device__ u32 hop_wait(u64* words, u64* p, u64 want, u32* left) {
    for (; *left > 0; --*left) {
        if (hop_poll(p) == want) return HOP_SEEN;
        // Now and then, whether someone else gave up: then the flag may never come.
        if ((*left & 255u) == 0 && reap_load_relaxed(&words[HOP_ERR]) != 0) return HOP_ABANDONED;
    }
    return HOP_BOUND;
}

__device__ void hop_fail(u64* words, u32 code) {
    if (code != HOP_ABANDONED) atomicMax(&words[HOP_ERR], (u64)code);
}

// Two blocks, n round trips: thread 0 of block 0 stores i to the first flag and
// waits for the second to read i; block 1 waits for the first, then stores i.
extern "C" __global__ void pingpong(u32 n, u32 budget, u64* words) {
    if (threadIdx.x != 0) return;
    u32 left = budget;
    for (u32 i = 1; i <= n; ++i) {
        if (blockIdx.x == 0) {
            reap_store_relaxed(&words[HOP_FLAGS], i);
            u32 r = hop_wait(words, &words[HOP_PONG], i, &left);
            if (r != HOP_SEEN) return hop_fail(words, r);
        } else {
            u32 r = hop_wait(words, &words[HOP_FLAGS], i, &left);
            if (r != HOP_SEEN) return hop_fail(words, r);
            reap_store_relaxed(&words[HOP_PONG], i);
        }
    }
    atomicAdd(&words[HOP_DONE], 1ull);
}

// A chain of w blocks in the order they take ids (a block waits only for one
// scheduled before it: running or done): block k waits until flag k-1 reads
// k, then stores k + 1 to flag k. The first `pollers` threads poll.
extern "C" __global__ void chain(u32 w, u32 budget, u32 pollers, u64* words) {
    __shared__ u32 id;
    if (threadIdx.x == 0) id = (u32)atomicAdd(&words[HOP_NEXT_ID], 1ull);
    __syncthreads();
    const u32 k = id;
    if (k >= w || threadIdx.x >= pollers) return;
    if (k > 0) {
        u32 left = budget;
        u32 r = hop_wait(words, &words[HOP_FLAGS + (u64)(k - 1) * HOP_LINE], k, &left);
        // A failed wait still publishes, so the rest of the chain ends at once.
        if (r != HOP_SEEN && threadIdx.x == 0) hop_fail(words, r);
    }
    if (threadIdx.x == 0) {
        reap_store_relaxed(&words[HOP_FLAGS + (u64)k * HOP_LINE], (u64)k + 1);
        atomicAdd(&words[HOP_DONE], 1ull);
    }
}
