// Shared by every compaction kernel. NVRTC compiles each kernel file with
// REAP_ELEM_BYTES (4, 8, 16, 32), REAP_KEEP (the keep rule) and REAP_KEY_BYTES
// defined (`Variant` in src/compaction/cuda/runtime.rs; src/gpu/compile.rs
// `translation_unit` assembles the source); a user's predicate source is
// inserted right after this header.
#pragma once
#include "../warp.cuh"
#include "tile_state.cuh"

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

// A 32-byte element (a ray record, say): two 16-byte halves, which loads and
// stores move with two vector instructions.
struct __align__(16) Elem32 {
    uint4 lo, hi;
};

#if REAP_ELEM_BYTES == 4
typedef u32 Elem;
#elif REAP_ELEM_BYTES == 8
typedef u64 Elem;
#elif REAP_ELEM_BYTES == 16
typedef uint4 Elem;
#elif REAP_ELEM_BYTES == 32
typedef Elem32 Elem;
#else
#error "REAP_ELEM_BYTES must be 4, 8, 16 or 32"
#endif

// The unit of a vector load: 16 bytes, or one element when it is larger.
// REAP_VEC elements make one Vec; loads and stores move whole Vecs.
#if REAP_ELEM_BYTES <= 16
typedef uint4 Vec;
#define REAP_VEC (16 / REAP_ELEM_BYTES)
#else
typedef Elem Vec;
#define REAP_VEC 1
#endif
#define REAP_VEC_BYTES (REAP_VEC * REAP_ELEM_BYTES)

// A read-only load through the non-coherent cache, of any Elem or Vec.
__device__ __forceinline__ u32 reap_ldg(const u32* p) { return __ldg(p); }
__device__ __forceinline__ u64 reap_ldg(const u64* p) { return __ldg(p); }
__device__ __forceinline__ uint4 reap_ldg(const uint4* p) { return __ldg(p); }
__device__ __forceinline__ Elem32 reap_ldg(const Elem32* p) {
    Elem32 r;
    r.lo = __ldg(&p->lo);
    r.hi = __ldg(&p->hi);
    return r;
}

#define REAP_KEEP_FLAGS 0
#define REAP_KEEP_SENTINEL 1
#define REAP_KEEP_PREDICATE 2
#define REAP_KEEP_BIT 3

// Keep in sync with `KeepArgs` in src/compaction/cuda/mod.rs.
struct KeepArgs {
    const u8* flags;
    u32 sentinel[8];
    u64 param[2];
};

// How many elements a kernel works on. `cap` is what the host sized the
// launch and the buffers for; a counted call (`select_counted`, …) also
// passes `len`, the device word holding the length, so the host never reads
// it: threads and tiles past it exit early. The host-length calls pass a null
// `len`. Keep in sync with `Extent` in src/compaction/cuda/mod.rs.
struct Extent {
    u64 cap;
    const u64* len;
};

// The length: the device word clamped to the capacity, or the capacity.
__device__ __forceinline__ u64 extent_n(const Extent& e) {
    if (e.len == nullptr) return e.cap;
    u64 n = *e.len;
    return n < e.cap ? n : e.cap;
}

__device__ __forceinline__ u32 reap_word0(const u32& x) { return x; }
__device__ __forceinline__ u32 reap_word0(const u64& x) { return (u32)x; }
__device__ __forceinline__ u32 reap_word0(const uint4& x) { return x.x; }
__device__ __forceinline__ u32 reap_word0(const Elem32& x) { return x.lo.x; }

// The radix-sort key: the first REAP_KEY_BYTES bytes of the element.
__device__ __forceinline__ u64 reap_key(const u32& x) { return x; }
__device__ __forceinline__ u64 reap_key(const u64& x) { return REAP_KEY_BYTES == 8 ? x : (x & 0xffffffffull); }
__device__ __forceinline__ u64 reap_key(const uint4& x) {
    return REAP_KEY_BYTES == 8 ? (((u64)x.y << 32) | x.x) : x.x;
}
__device__ __forceinline__ u64 reap_key(const Elem32& x) { return reap_key(x.lo); }

__device__ __forceinline__ bool reap_same(const u32& x, const u32* s) { return x == s[0]; }
__device__ __forceinline__ bool reap_same(const u64& x, const u32* s) { return x == (((u64)s[1] << 32) | s[0]); }
__device__ __forceinline__ bool reap_same(const uint4& x, const u32* s) {
    return x.x == s[0] && x.y == s[1] && x.z == s[2] && x.w == s[3];
}
__device__ __forceinline__ bool reap_same(const Elem32& x, const u32* s) {
    return reap_same(x.lo, s) && reap_same(x.hi, s + 4);
}

#if REAP_KEEP == REAP_KEEP_PREDICATE
// Defined by the caller's source, inserted after this header.
__device__ bool reap_predicate(const Elem& x, const unsigned long long* p);
#endif

// Whether element i (value x) survives.
__device__ __forceinline__ bool reap_keep(const Elem& x, u64 i, const KeepArgs& k) {
#if REAP_KEEP == REAP_KEEP_FLAGS
    return k.flags[i] != 0;
#elif REAP_KEEP == REAP_KEEP_SENTINEL
    return !reap_same(x, k.sentinel);
#elif REAP_KEEP == REAP_KEEP_PREDICATE
    return reap_predicate(x, k.param);
#else
    return ((reap_key(x) >> k.param[0]) & 1) == 0;
#endif
}

// Grid-stride loop over k < n: the host sizes the grid to fill the device
// (CudaBackend::grid_stride), each thread takes every grid's-width-th item.
#define REAP_GRID_STRIDE(k, n) \
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < (n); k += (u64)gridDim.x * blockDim.x)

// x(k) of a scanned sequence: the input itself, or (shift) the input moved
// right by one slot, whose inclusive scan is the input's exclusive scan.
template <typename In>
__device__ __forceinline__ In reap_shifted(const In* x, u64 k, u32 shift) {
    return shift ? (k ? x[k - 1] : (In)0) : x[k];
}


// Combines a block's per-warp totals, `totals[0..W)` in shared memory and
// synchronised: the sum of those of the warps before `warp`, and of all W.
template <u32 W, typename T>
__device__ __forceinline__ void reap_warp_totals(const T* totals, u32 warp, T& before, T& total) {
    before = 0;
    total = 0;
#pragma unroll
    for (u32 w = 0; w < W; w++) {
        T t = totals[w];
        if (w < warp) before += t;
        total += t;
    }
}
