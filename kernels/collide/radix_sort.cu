// The collision demo's fast radix sort (`--sort fast`): LSD, up to 8 bits
// per pass, stable, u32 keys with u32 values (Satish, Harris & Garland 2009,
// "Designing Efficient Sorting Algorithms for Manycore GPUs"). Per pass:
//   1. radix_histogram: each tile of RS_TILE keys counts its digits and
//      writes them digit-major, hist[digit * tiles + tile];
//   2. the library's exclusive scan of that array (src/collide/cuda.rs calls
//      CudaBackend::exclusive_scan with `lookback`): entry (d, t) becomes the
//      place in the output of tile t's first key with digit d;
//   3. radix_scatter: each tile ranks its keys stably by digit (per-warp
//      digit counters in shared memory, peers found with __match_any_sync),
//      orders the tile by digit in shared memory, and writes each digit's run
//      to its scanned offset, so the global writes come in contiguous runs.
// The host ping-pongs between two key and two value buffers.
typedef unsigned int u32;
typedef unsigned long long u64;

#ifndef RS_BLOCK
#define RS_BLOCK 256
#endif
#ifndef RS_ITEMS
#define RS_ITEMS 8
#endif
#define RS_TILE (RS_BLOCK * RS_ITEMS)
#define RS_WARPS (RS_BLOCK / 32)
#define RS_RADIX 256

// radix_scatter gives each thread one digit in the per-digit steps.
static_assert(RS_BLOCK == RS_RADIX, "RS_BLOCK must equal RS_RADIX");

__device__ __forceinline__ u32 rs_lane() { return threadIdx.x & 31; }

__device__ __forceinline__ u32 rs_digit(u32 key, u32 shift, u32 bits) { return (key >> shift) & ((1u << bits) - 1u); }

// Step 1: the digit counts of tile blockIdx.x, bits [shift, shift + bits).
extern "C" __global__ void radix_histogram(const u32* keys, u64 n, u32 shift, u32 bits, u32 tiles, u32* hist) {
    __shared__ u32 count[RS_RADIX];
    count[threadIdx.x] = 0;
    __syncthreads();
    u64 base = (u64)blockIdx.x * RS_TILE;
#pragma unroll
    for (u32 e = 0; e < RS_ITEMS; e++) {
        u64 i = base + e * RS_BLOCK + threadIdx.x;
        bool valid = i < n;
        u32 d = valid ? rs_digit(keys[i], shift, bits) : RS_RADIX;
        // Neighbouring Morton codes share their high digits: one shared
        // atomic per distinct digit in the warp instead of up to 32 on one word.
        u32 peers = __match_any_sync(0xffffffffu, d);
        if (valid && rs_lane() == (u32)(__ffs(peers) - 1)) atomicAdd(&count[d], (u32)__popc(peers));
    }
    __syncthreads();
    if (threadIdx.x < (1u << bits)) hist[(u64)threadIdx.x * tiles + blockIdx.x] = count[threadIdx.x];
}

// Exclusive sum over the block's threads (RS_BLOCK of them); every thread calls it.
__device__ __forceinline__ u32 block_exclusive(u32 v, u32* warp_sums) {
    u32 lane = rs_lane(), warp = threadIdx.x >> 5;
    u32 incl = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        u32 up = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= (u32)d) incl += up;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    u32 before = 0;
    for (u32 w = 0; w < warp; w++) before += warp_sums[w];
    return before + incl - v;
}

// Step 3: tile blockIdx.x's keys and values to their places. `offsets` is
// the exclusive scan of radix_histogram's output for the same pass.
extern "C" __global__ void radix_scatter(const u32* keys_in, const u32* vals_in, u64 n, u32 shift, u32 bits,
                                         u32 tiles, const u32* offsets, u32* keys_out, u32* vals_out) {
    // Per warp, per digit: keys seen so far, then (after the scan) the warp's
    // first place among the tile's keys of that digit.
    __shared__ u32 warp_count[RS_WARPS][RS_RADIX];
    __shared__ u32 digit_start[RS_RADIX];  // tile-local: the tile's first key of each digit
    __shared__ u32 global_start[RS_RADIX];  // where that key goes in the output
    __shared__ u32 warp_sums[RS_WARPS];
    __shared__ u32 tile_keys[RS_TILE];
    __shared__ u32 tile_vals[RS_TILE];
    u32 lane = rs_lane(), warp = threadIdx.x >> 5;
    for (u32 d = lane; d < RS_RADIX; d += 32) warp_count[warp][d] = 0;
    __syncwarp();

    // Each warp takes RS_ITEMS rounds of 32 consecutive keys, its rounds
    // consecutive too: (warp, round, lane) is input order, so ranking in that
    // order keeps the sort stable.
    u64 tile_base = (u64)blockIdx.x * RS_TILE;
    u64 base = tile_base + (u64)warp * 32 * RS_ITEMS;
    u32 below = (1u << lane) - 1u;
    u32 key[RS_ITEMS], val[RS_ITEMS], rank[RS_ITEMS];
#pragma unroll
    for (u32 r = 0; r < RS_ITEMS; r++) {
        u64 i = base + r * 32 + lane;
        bool valid = i < n;
        key[r] = valid ? keys_in[i] : 0;
        val[r] = valid ? vals_in[i] : 0;
        u32 d = valid ? rs_digit(key[r], shift, bits) : RS_RADIX;
        u32 peers = __match_any_sync(0xffffffffu, d);
        u32 seen = valid ? warp_count[warp][d] : 0;
        rank[r] = seen + __popc(peers & below);
        // Every peer has read the count before its leader moves it on.
        __syncwarp();
        if (valid && lane == (u32)(__ffs(peers) - 1)) warp_count[warp][d] = seen + __popc(peers);
        __syncwarp();
    }
    __syncthreads();

    // Thread d: digit d's warps in order, then the digits in order.
    u32 d = threadIdx.x;
    u32 total = 0;
    for (u32 w = 0; w < RS_WARPS; w++) {
        u32 c = warp_count[w][d];
        warp_count[w][d] = total;
        total += c;
    }
    digit_start[d] = block_exclusive(total, warp_sums);
    if (d < (1u << bits)) global_start[d] = offsets[(u64)d * tiles + blockIdx.x];
    __syncthreads();

    // The tile in digit order, in shared memory.
#pragma unroll
    for (u32 r = 0; r < RS_ITEMS; r++) {
        u64 i = base + r * 32 + lane;
        if (i < n) {
            u32 dk = rs_digit(key[r], shift, bits);
            u32 at = digit_start[dk] + warp_count[warp][dk] + rank[r];
            tile_keys[at] = key[r];
            tile_vals[at] = val[r];
        }
    }
    __syncthreads();

    // Consecutive threads write consecutive places of each digit's run.
    u64 left = n - tile_base;
    u32 count = left < RS_TILE ? (u32)left : RS_TILE;
    for (u32 j = threadIdx.x; j < count; j += RS_BLOCK) {
        u32 k = tile_keys[j];
        u32 dk = rs_digit(k, shift, bits);
        u32 at = global_start[dk] + (j - digit_start[dk]);
        keys_out[at] = k;
        vals_out[at] = tile_vals[j];
    }
}
