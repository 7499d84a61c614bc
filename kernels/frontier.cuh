// The breadth-first level loop's device side (src/frontier.rs is its host
// side and says why the loop looks like this). Every length of a frame is a
// word of one u64 array; a kernel reads its input's length from one word and
// writes its output's to another, and never writes past a capacity.
#pragma once

#define FRONTIER_STATUS 0
#define FRONTIER_NEEDED 1
#define FRONTIER_OVERFLOW 1ull
#define FRONTIER_UNFINISHED 2ull
#define FRONTIER_CANDIDATES 4ull
#define FRONTIER_DEAD 0xffffffffffffffffull

// One expansion's words, passed by value: frontier.rs `DeviceLevel` (made
// from an `Expand`), keep in sync. frontier.rs `host` is the CPU twin of the
// functions below.
struct FrontierLevel {
    unsigned long long input_len, input_live, output_len, output_live;
    unsigned int last, pad;
};
static_assert(sizeof(FrontierLevel) == 40, "FrontierLevel: keep in sync with frontier.rs DeviceLevel");

// Items the expansion reads: the input's length, or 0 when the level before
// held no live item (the `none` loop ends there without a host read).
__device__ __forceinline__ unsigned long long frontier_n(const unsigned long long* words, FrontierLevel at) {
    return words[at.input_live] == 0 ? 0 : words[at.input_len];
}

// Whether `fan_out * n` slots fit `capacity`. When they do not, the first
// thread says so in the status, records what was needed, and the output is
// empty: every thread computes the same answer and writes nothing.
__device__ __forceinline__ bool frontier_fits(unsigned long long* words, FrontierLevel at, unsigned long long n,
                                              unsigned long long fan_out, unsigned long long capacity) {
    unsigned long long need = n * fan_out;
    bool fits = n <= capacity / fan_out;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        words[at.output_len] = fits ? need : 0;
        if (!fits) {
            atomicOr(&words[FRONTIER_STATUS], FRONTIER_OVERFLOW);
            atomicMax(&words[FRONTIER_NEEDED], need);
        }
    }
    return fits;
}

// Adds the calling warp's live slots to the output's live count (one atomic
// per warp, no shared memory, no barrier); at the last level of the bound, a
// live slot means unfinished.
__device__ __forceinline__ void frontier_count_live(unsigned long long* words, FrontierLevel at, unsigned int live) {
    unsigned int lanes = __activemask();
    unsigned int warp = __reduce_add_sync(lanes, live);
    if ((threadIdx.x & 31) == __ffs(lanes) - 1 && warp) {
        atomicAdd(&words[at.output_live], (unsigned long long)warp);
        if (at.last) atomicOr(&words[FRONTIER_STATUS], FRONTIER_UNFINISHED);
    }
}

// A fused expansion's kept total (compaction/site.cuh) becomes the level's length and live
// count (one thread, after the site finished): past the capacity it is an
// overflow (the slots below the capacity were written, the frame is redone);
// at the last level of the bound, a live item means unfinished.
__device__ __forceinline__ void frontier_close(unsigned long long* words, FrontierLevel at, unsigned long long total,
                                               unsigned long long capacity) {
    words[at.output_len] = total;
    words[at.output_live] = total;
    if (total > capacity) {
        atomicOr(&words[FRONTIER_STATUS], FRONTIER_OVERFLOW);
        atomicMax(&words[FRONTIER_NEEDED], total);
    }
    if (at.last && total) atomicOr(&words[FRONTIER_STATUS], FRONTIER_UNFINISHED);
}

// Whether a stage that changes persistent state may run: not after an
// overflow or an unfinished loop (the host redoes the frame).
__device__ __forceinline__ bool frontier_ok(const unsigned long long* words) {
    return *(volatile const unsigned long long*)&words[FRONTIER_STATUS] == 0;
}
