// `chained`: the single-pass "streaming" scan of seed 001 module 10.4. Tiles
// take dynamic ids; each waits until its predecessor has published its
// inclusive prefix, adds its own count and publishes in turn. The wait is a
// chain through every tile: the latency `lookback` removes.
//
// The protocol alone (no element type): single_pass.cuh's tiles and fused
// producers (site.cuh) both run it.
#pragma once
#include "../warp.cuh"
#include "tile_state.cuh"

struct Chained {
    // Nothing to publish before the prefix: successors wait for the inclusive one.
    static __device__ __forceinline__ void publish(u64*, u32, u64, u32) {}

    static __device__ __forceinline__ u64 resolve(u64* state, u32 tile, u64 aggregate, u32 epoch) {
        return prefix(state, tile, aggregate, epoch);
    }

    static __device__ __forceinline__ u64 prefix(u64* state, u32 tile, u64 aggregate, u32 epoch) {
        u64 exclusive = 0;
        if (reap_lane() == 0) {
            if (tile > 0) {
                u64 w;
                while (st_status(w = reap_load_relaxed(state + tile - 1), epoch) != ST_PREFIX) reap_backoff();
                exclusive = ST_VALUE(w);
            }
            reap_store_relaxed(state + tile, ST_WORD(ST_PREFIX, epoch, exclusive + aggregate));
        }
        return __shfl_sync(0xffffffffu, exclusive, 0);
    }

    template <typename T>
    static __device__ __forceinline__ void scan_publish(u32*, u64*, u32, T) {}

    template <typename T>
    static __device__ __forceinline__ T scan_resolve(u32* flags, u64* values, u32 tile, T aggregate) {
        return scan_prefix(flags, values, tile, aggregate);
    }

    template <typename T>
    static __device__ __forceinline__ T scan_prefix(u32* flags, u64* values, u32 tile, T aggregate) {
        T exclusive = 0;
        if (reap_lane() == 0) {
            if (tile > 0) {
                while (reap_load_acquire(flags + tile - 1) != (u32)ST_PREFIX) reap_backoff();
                exclusive = (T)values[2 * (tile - 1)];
            }
            values[2 * tile] = (u64)(T)(exclusive + aggregate);
            reap_store_release(flags + tile, (u32)ST_PREFIX);
        }
        return __shfl_sync(0xffffffffu, exclusive, 0);
    }
};
