// `lookback`: single-pass compaction with decoupled look-back (Merrill &
// Garland 2016, "Single-pass Parallel Prefix Scan with Decoupled Look-back").
// A tile publishes its aggregate as soon as it has counted, then warp 0 walks
// back over its predecessors 32 at a time, summing aggregates until it meets
// a published inclusive prefix. No tile waits for a chain of predecessors to
// finish in turn, only for each to have counted.
//
// The protocol alone (no element type): single_pass.cuh's tiles and fused
// producers (site.cuh) both run it.
#pragma once
#include "../warp.cuh"
#include "tile_state.cuh"

struct Decoupled {
    // Called by one thread as soon as the tile has counted: tile 0's count is
    // already its inclusive prefix.
    static __device__ __forceinline__ void publish(u64* state, u32 tile, u64 aggregate, u32 epoch) {
        reap_store_relaxed(state + tile, ST_WORD(tile == 0 ? ST_PREFIX : ST_AGGREGATE, epoch, aggregate));
    }

    // Called by the 32 lanes of warp 0 after `publish`; returns the exclusive
    // prefix and publishes the inclusive one.
    static __device__ __forceinline__ u64 resolve(u64* state, u32 tile, u64 aggregate, u32 epoch) {
        u32 lane = reap_lane();
        if (tile == 0) return 0;
        u64 exclusive = 0;
        long long window = (long long)tile - 1;  // predecessor that lane 0 inspects
        while (true) {
            long long mine = window - lane;
            u64 w = 0, st = ST_PREFIX;
            // Spin until every predecessor in the window has at least counted.
            while (true) {
                if (mine >= 0) {
                    w = reap_load_relaxed(state + mine);
                    st = st_status(w, epoch);
                }
                if (!__any_sync(0xffffffffu, st == ST_INVALID)) break;
                reap_backoff();
            }
            u32 prefixes = __ballot_sync(0xffffffffu, st == ST_PREFIX);
            // The nearest predecessor with an inclusive prefix ends the walk; the
            // lanes nearer than it contribute their aggregates.
            u32 stop = prefixes ? __ffs(prefixes) - 1 : 32;
            u64 v = (mine >= 0 && lane <= stop) ? ST_VALUE(w) : 0;
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
            exclusive += v;
            if (prefixes) break;
            window -= 32;
        }
        if (lane == 0) reap_store_relaxed(state + tile, ST_WORD(ST_PREFIX, epoch, exclusive + aggregate));
        return exclusive;
    }

    // Called by the 32 lanes of warp 0; returns the exclusive prefix.
    static __device__ __forceinline__ u64 prefix(u64* state, u32 tile, u64 aggregate, u32 epoch) {
        if (reap_lane() == 0) publish(state, tile, aggregate, epoch);
        return resolve(state, tile, aggregate, epoch);
    }

    // The same protocol for scans, whose values need all 64 bits: flags and
    // values in separate words, published with release and read with acquire.
    // Aggregates go to the odd words, inclusive prefixes to the even ones, so
    // a published aggregate is never overwritten under a reader. One thread.
    template <typename T>
    static __device__ __forceinline__ void scan_publish(u32* flags, u64* values, u32 tile, T aggregate) {
        values[tile == 0 ? 0 : 2 * tile + 1] = (u64)aggregate;
        reap_store_release(flags + tile, (u32)(tile == 0 ? ST_PREFIX : ST_AGGREGATE));
    }

    template <typename T>
    static __device__ __forceinline__ T scan_resolve(u32* flags, u64* values, u32 tile, T aggregate) {
        u32 lane = reap_lane();
        if (tile == 0) return 0;
        T exclusive = 0;
        long long window = (long long)tile - 1;
        while (true) {
            long long mine = window - lane;
            u32 st;
            while (true) {
                st = mine >= 0 ? reap_load_acquire(flags + mine) : (u32)ST_PREFIX;
                if (!__any_sync(0xffffffffu, st == ST_INVALID)) break;
                reap_backoff();
            }
            u32 prefixes = __ballot_sync(0xffffffffu, st == ST_PREFIX);
            u32 stop = prefixes ? __ffs(prefixes) - 1 : 32;
            T v = 0;
            if (mine >= 0 && lane <= stop) v = (T)values[2 * mine + (st == ST_PREFIX ? 0 : 1)];
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
            exclusive += v;
            if (prefixes) break;
            window -= 32;
        }
        if (lane == 0) {
            values[2 * tile] = (u64)(T)(exclusive + aggregate);
            reap_store_release(flags + tile, (u32)ST_PREFIX);
        }
        return exclusive;
    }

    template <typename T>
    static __device__ __forceinline__ T scan_prefix(u32* flags, u64* values, u32 tile, T aggregate) {
        if (reap_lane() == 0) scan_publish(flags, values, tile, aggregate);
        return scan_resolve(flags, values, tile, aggregate);
    }
};
