// Over 600 lines, kept whole: one NVRTC module, every stage over the same Scene and Paths.
// The wavefront path tracer's stages (src/trace/mod.rs runs them in order;
// src/trace/cpu/ is the CPU twin of each kernel). One path per pixel of the
// engine's shard (src/trace/shard.rs: path i is pixel base + i) per sample;
// state in structure-of-arrays indexed by path id; the live-path queue holds
// path ids, TRACE_DEAD32 marks a dead slot, and the library's
// compaction removes dead slots between bounces. Breadth-first traversal works
// on a frontier of (path << 32 | node) items, TRACE_DEAD64 marking dead ones,
// through the shared level loop (frontier.cuh, src/frontier.rs).
//
// Nothing here takes a length from the host: every kernel over a queue or a
// frontier reads it from a word of the frame's u64 array (`words`) and is
// launched for the buffer's capacity with a grid-stride loop, so threads past
// the length do nothing and the host never waits inside a frame.
#include "common.cuh"
#include "texture.cuh"
#include "bsdf.cuh"
#include "wide.cuh"
#include "../frontier.cuh"
#include "../compaction/site.cuh"

// The compaction sites compiled in (src/trace/cuda.rs picks them per render):
// REAP_SITE_FRONTIER for the breadth-first frontier (init and expand),
// REAP_SITE_PATHS for the path queue after shading. REAP_SITE_SEPARATE: the
// kernel writes every slot, dead ones included, and the library's pass runs
// after it. TRACE_DESCEND is the expansion's descent when the frontier's site
// is fused (its candidates are a register array of 2^TRACE_DESCEND).
#ifndef REAP_SITE_FRONTIER
#define REAP_SITE_FRONTIER REAP_SITE_SEPARATE
#endif
#ifndef REAP_SITE_PATHS
#define REAP_SITE_PATHS REAP_SITE_SEPARATE
#endif
#ifndef TRACE_DESCEND
#define TRACE_DESCEND 2
#endif
#define TRACE_BLOCK 256

#define STACK 64
// A descent of at most 5 levels keeps at most one pending sibling per level
// plus the node in hand (shading.rs DESCEND_STACK).
#define DESCEND_STACK 8

// The grid-stride loop every kernel over a device length uses.
#define FOR_EACH(i, n) for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)

// A queue's or frontier's length: its word, clamped to the buffer's capacity.
__device__ __forceinline__ u64 length(const u64* words, u64 word, u64 capacity) {
    u64 n = words[word];
    return n < capacity ? n : capacity;
}

// Adds the calling warp's sum of `v` to *word with one atomic per warp. No
// shared memory and no barrier: callers may have lanes that already left.
__device__ __forceinline__ void warp_add(u64* word, u32 v) {
    u32 lanes = __activemask();
    u32 warp = __reduce_add_sync(lanes, v);
    if ((threadIdx.x & 31) == __ffs(lanes) - 1 && warp) atomicAdd(word, (u64)warp);
}

__device__ __forceinline__ float3 inv_dir(float3 d) { return make_float3(1.0f / d.x, 1.0f / d.y, 1.0f / d.z); }

// Camera rays for one sample over the shard [base, base + count) of the
// image: path i is pixel base + i; the queue holds every path and its length
// word becomes the shard's pixel count. The sample index is a device word the
// host sets before the frame (camera and shade read it), so that a frame
// recorded as a CUDA graph draws a new sample each time it is replayed.
extern "C" __global__ void trace_camera(Paths p, Camera cam, u32 width, u32 height, u32 base, u32 count,
                                        const u32* sample_word, u32 seed, u32* queue, u64* words, u64 queue_len) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    u32 sample = *sample_word;
    if (i == 0) words[queue_len] = count;
    if (i >= count) return;
    u32 pixel = base + i;
    float x = ((float)(pixel % width) + rnd(pixel, sample, 0, 60, seed)) / (float)width;
    float y = ((float)(pixel / width) + rnd(pixel, sample, 0, 61, seed)) / (float)height;
    float3 d = normalize(f3(cam.forward) + f3(cam.right) * (2.0f * x - 1.0f) + f3(cam.up) * (1.0f - 2.0f * y));
    p.origin[i] = f4(f3(cam.origin), 0.0f);
    p.dir[i] = f4(d, 0.0f);
    p.throughput[i] = make_float4(1.0f, 1.0f, 1.0f, 0.0f);
    p.radiance[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    p.flags[i] = PATH_SPECULAR;  // an emitter seen directly counts
    queue[i] = i;
}

__device__ __forceinline__ bool leaf(const Scene& s, const Node& n, float3 o, float3 d, float tmax, bool any_hit,
                                     u64* best) {
    return leaf_range(s.tris, n.first, n.count, o, d, tmax, any_hit, best);
}

// Depth-first traversal with a per-ray stack, nearer child first: the
// baseline. Closest hit into p.hit, or (shadow) the shadow ray's occlusion.
__device__ void depth_first_one(const Scene& s, Paths& p, u32 path, u32 shadow) {
    float3 o = f3(p.origin[path]);
    float3 d;
    float tmax;
    if (shadow) {
        float4 sd = p.shadow_dir[path];
        if (sd.w <= 0.0f) return;
        d = f3(sd);
        tmax = sd.w;
    } else {
        d = f3(p.dir[path]);
        tmax = TRACE_INF;
    }
    float3 inv = inv_dir(d);
    u64 best = TRACE_DEAD64;
    bool occluded = false;
    u32 stack[STACK];
    u32 sp = 0;
    if (hit_box(s.nodes[0], o, inv, tmax) >= 0.0f) stack[sp++] = 0;
    while (sp > 0) {
        Node nd = s.nodes[stack[--sp]];
        float limit = key_dist(best, tmax);
        if (nd.count > 0) {
            if (leaf(s, nd, o, d, limit, shadow != 0, &best)) {
                occluded = true;
                break;
            }
            continue;
        }
        float t0 = hit_box(s.nodes[nd.first], o, inv, limit);
        float t1 = hit_box(s.nodes[nd.first + 1], o, inv, limit);
        // Push the farther child first so the nearer is taken next.
        if (t0 >= 0.0f && t1 >= 0.0f) {
            bool near0 = t0 <= t1;
            stack[sp++] = near0 ? nd.first + 1 : nd.first;
            stack[sp++] = near0 ? nd.first : nd.first + 1;
        } else if (t0 >= 0.0f) {
            stack[sp++] = nd.first;
        } else if (t1 >= 0.0f) {
            stack[sp++] = nd.first + 1;
        }
    }
    if (shadow) p.occluded[path] = occluded;
    else p.hit[path] = best;
}

// Depth-first on the 8-wide BVH, after Ylitie et al.: the hit children of a
// node become a group, (the node's first wide child, its hit bits << 24 |
// the slots the children are counted by), and the stack holds groups, one
// per level at most, not children; the next node is the group's highest
// bit, about the nearest child. A node's leaves are intersected at once.
//
// Warps fetch rays as their lanes finish (Aila & Laine 2009, as Ylitie et
// al. run it): rays' walks differ in length by several times, and a warp
// that took 32 at once idles most lanes until its longest ends (ncu: 5 of 32
// lanes active on sphereflake). A lane without a ray takes the queue's next
// entry; one atomic on `next` serves every idle lane of a warp, and waits
// for WIDE_FETCH of them unless none is busy. `next` is zeroed before the launch.
// H100, sphereflake 1080p 8 bounces, WIDE_FETCH 1, 8, 16, 32 (32: warps take
// rays only when all lanes are done, as without fetching): 1320.5, 1366.4,
// 1338.1, 1058.3 Mrays/s by wall clock; binary depth-first 1038.
#define WIDE_FETCH 8
struct WideRay {
    float3 o, d, inv;
    float tmax;
    u32 oct;
};

// No minimum of resident blocks: asking for 5 or 6 a SM (48 or 40 registers)
// spilled and cost 3 % and 18 % on sphereflake (H100: 1525.1, 1473.6, 1257.2 Mrays/s).
extern "C" __global__ void __launch_bounds__(TRACE_BLOCK)
    trace_depth_first_wide(Scene s, Paths p, const u32* queue, u64 capacity, u32 shadow, const u64* words,
                           u64 queue_len, u32* next) {
    u64 n = length(words, queue_len, capacity);
    const u32 lane = threadIdx.x & 31;
    enum { IDLE, BUSY, DONE };
    u32 state = IDLE, path = 0;
    WideRay r;
    u64 best = TRACE_DEAD64;
    uint2 group = make_uint2(0u, 0u), stack[WIDE_STACK];
    int sp = 0;
    while (true) {
        u32 idle = __ballot_sync(~0u, state == IDLE), busy = __ballot_sync(~0u, state == BUSY);
        if (idle && (__popc(idle) >= WIDE_FETCH || !busy)) {
            u32 leader = __ffs(idle) - 1, base = 0;
            if (lane == leader) base = atomicAdd(next, __popc(idle));
            base = __shfl_sync(~0u, base, leader);
            if (state == IDLE) {
                u64 i = (u64)base + __popc(idle & ((1u << lane) - 1u));
                if (i >= n) {
                    state = DONE;
                } else if ((path = queue[i]) != TRACE_DEAD32) {
                    r.o = f3(p.origin[path]);
                    r.tmax = TRACE_INF;
                    if (shadow) {
                        float4 sd = p.shadow_dir[path];
                        r.d = f3(sd);
                        r.tmax = sd.w;
                    } else {
                        r.d = f3(p.dir[path]);
                    }
                    if (r.tmax > 0.0f) {
                        r.inv = inv_dir(r.d);
                        r.oct = octant(r.d);
                        best = TRACE_DEAD64;
                        sp = 0;
                        // The root: a group of one wide child, slot oct ^ 7 (its bit, 31, maps back to slot
                        // 7 ^ oct; no mask bits below it, so it is child 0 of base 0).
                        group = make_uint2(0u, 0x80000000u);
                        state = BUSY;
                    }
                }
            }
        }
        if (__all_sync(~0u, state == DONE)) break;
        if (state != BUSY) continue;
        // One node: its children tested, its leaves intersected.
        u32 bit = 31 - __clz(group.y & 0xff000000u);
        group.y &= ~(1u << bit);
        u32 e = group.x + wide_rank(group.y & 0xffu, bit - 24, r.oct);
        if (group.y & 0xff000000u) stack[sp++] = group;
        WideHits h = wide_children(s, e, r.o, r.inv, r.oct, key_dist(best, r.tmax));
        bool occluded = wide_leaves(s, h, r.oct, r.o, r.d, r.tmax, shadow != 0, &best);
        group = make_uint2(h.child_base, (h.nodes << 24) | h.internal);
        if (!occluded && !(group.y & 0xff000000u) && sp > 0) group = stack[--sp];
        if (occluded || !(group.y & 0xff000000u)) {
            if (shadow) p.occluded[path] = occluded;
            else p.hit[path] = best;
            state = IDLE;
        }
    }
}

extern "C" __global__ void trace_depth_first(Scene s, Paths p, const u32* queue, u64 capacity, u32 shadow,
                                             const u64* words, u64 queue_len) {
    u64 n = length(words, queue_len, capacity);
    FOR_EACH(i, n) {
        u32 path = queue[i];
        if (path != TRACE_DEAD32) depth_first_one(s, p, path, shadow);
    }
}

// Breadth-first, level 0, one queue entry: the item (path, root) if the
// path's ray enters the root's box, dead otherwise. Resets the per-path result.
__device__ u64 bf_init_one(const Scene& s, Paths& p, u32 path, u32 shadow) {
    if (path == TRACE_DEAD32) return TRACE_DEAD64;
    float3 o = f3(p.origin[path]);
    float3 d;
    float tmax = TRACE_INF;
    bool ray = true;
    if (shadow) {
        float4 sd = p.shadow_dir[path];
        d = f3(sd);
        tmax = sd.w;
        ray = sd.w > 0.0f;
        p.occluded[path] = 0;
    } else {
        d = f3(p.dir[path]);
        p.hit[path] = TRACE_DEAD64;
    }
    return ray && hit_box(s.nodes[0], o, inv_dir(d), tmax) >= 0.0f ? (u64)path << 32 : TRACE_DEAD64;
}

// Level 0 of the loop: n = the queue's length (`at.input_len`), written to
// frontier[0, n) with the length and live count into the level's words; an
// n past the capacity writes nothing and sets the overflow (frontier_fits).
// Through a fused site only the live items are written, compacted.
extern "C" __global__ void __launch_bounds__(TRACE_BLOCK)
    trace_bf_init(Scene s, Paths p, const u32* queue, u32 shadow, u64* frontier, u64 capacity, u64* words,
                  FrontierLevel at, Site site) {
    u64 n = frontier_n(words, at);
#if REAP_SITE_FRONTIER == REAP_SITE_SEPARATE
    if (!frontier_fits(words, at, n, 1, capacity)) return;
    u32 live = 0;
    FOR_EACH(i, n) {
        u64 item = bf_init_one(s, p, queue[i], shadow);
        frontier[i] = item;
        live += item != TRACE_DEAD64;
    }
    frontier_count_live(words, at, live);
#else
    SiteLoop l = site_loop<REAP_SITE_FRONTIER, TRACE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_FRONTIER>(site, l); t < l.tiles; t = site_next<REAP_SITE_FRONTIER>(site, l, t)) {
        u64 i = (u64)t * TRACE_BLOCK + threadIdx.x;
        u64 item[1] = {TRACE_DEAD64};
        if (i < n) item[0] = bf_init_one(s, p, queue[i], shadow);
        site_emit<REAP_SITE_FRONTIER, TRACE_BLOCK, 1>(site, l, t, item, item[0] != TRACE_DEAD64, frontier);
    }
    u64 total;
    if (site_finish<REAP_SITE_FRONTIER, TRACE_BLOCK, 1>(site, l, frontier, &total)) frontier_close(words, at, total, capacity);
#endif
}

// A breadth-first item's ray and the distance past which it culls: the
// path's closest hit so far, or the shadow ray's length. False when another
// item of the path has already found the shadow ray's blocker.
__device__ __forceinline__ bool bf_ray(Paths& p, u32 path, u32 shadow, float3* o, float3* d, float* limit) {
    *o = f3(p.origin[path]);
    if (shadow) {
        if (*(volatile u32*)&p.occluded[path] != 0) return false;
        float4 sd = p.shadow_dir[path];
        *d = f3(sd);
        *limit = sd.w;
    } else {
        *d = f3(p.dir[path]);
        *limit = key_dist(*(volatile u64*)&p.hit[path], TRACE_INF);
    }
    return true;
}

// Breadth-first, one frontier item: descends `descend` BVH levels below the
// item's node, nearer child first, culling boxes the ray enters only past
// the path's closest hit so far. A leaf met on the way is intersected at
// once and merges its hit with an atomic min on the key (a shadow ray's
// blocker sets the occlusion and ends the item), which keeps the result
// independent of the order items run in; an internal node reached at depth
// `descend` goes to the slot of out[0, 2^descend) named by its left/right
// turns (first turn highest), every other slot is dead. Returns the live slots.
//
// An item past level 0 names its node by the node's children (TRACE_PAIR |
// first child), read when its parent tested the node's box, so a level
// starts with the child boxes and never waits for a load of the node itself;
// level 0 (init) names the root by its index. The stack holds nodes already
// loaded (children or leaf range), so no node is read twice.
#define TRACE_PAIR 0x80000000u
__device__ u32 bf_expand_one(const Scene& s, Paths& p, u64 item, u32 shadow, u32 descend, u64* out) {
    u32 fan = 1u << descend;
    for (u32 j = 0; j < fan; j++) out[j] = TRACE_DEAD64;
    if (item == TRACE_DEAD64) return 0;
    u32 path = (u32)(item >> 32);
    float3 o, d;
    float limit;
    if (!bf_ray(p, path, shadow, &o, &d, &limit)) return 0;
    float3 inv = inv_dir(d);
    u64 base = (u64)path << 32;
    u64 best = TRACE_DEAD64;
    u32 live = 0;
    // (first child or triangle, triangle count (0: internal), depth below the item << 8 | turns taken)
    u32 st_first[DESCEND_STACK], st_count[DESCEND_STACK], st_at[DESCEND_STACK];
    u32 named = (u32)item;
    if (named & TRACE_PAIR) {
        st_first[0] = named & ~TRACE_PAIR;
        st_count[0] = 0;
    } else {
        Node root = s.nodes[named];
        st_first[0] = root.first;
        st_count[0] = root.count;
    }
    st_at[0] = 0;
    u32 sp = 1;
    while (sp > 0) {
        sp--;
        u32 first = st_first[sp], count = st_count[sp], depth = st_at[sp] >> 8, turns = st_at[sp] & 0xff;
        float lim = key_dist(best, limit);
        if (count > 0) {
            if (leaf_range(s.tris, first, count, o, d, lim, shadow != 0, &best)) {
                p.occluded[path] = 1;
                for (u32 j = 0; j < fan; j++) out[j] = TRACE_DEAD64;
                return 0;
            }
            continue;
        }
        if (depth == descend) {
            out[turns] = base | TRACE_PAIR | first;
            live++;
            continue;
        }
        Node c0 = s.nodes[first], c1 = s.nodes[first + 1];
        float t0 = hit_box(c0, o, inv, lim);
        float t1 = hit_box(c1, o, inv, lim);
        // Push the farther child first so the nearer is taken next.
        bool h0 = t0 >= 0.0f, h1 = t1 >= 0.0f;
        bool near0 = t0 <= t1;
        u32 at = (depth + 1) << 8;
        if (h0 && h1) {
            u32 far = near0 ? 1 : 0;
            st_first[sp] = far ? c1.first : c0.first;
            st_count[sp] = far ? c1.count : c0.count;
            st_at[sp] = at | (2 * turns + far);
            st_first[sp + 1] = far ? c0.first : c1.first;
            st_count[sp + 1] = far ? c0.count : c1.count;
            st_at[sp + 1] = at | (2 * turns + (1 - far));
            sp += 2;
        } else if (h0 || h1) {
            u32 c = h0 ? 0 : 1;
            st_first[sp] = h0 ? c0.first : c1.first;
            st_count[sp] = h0 ? c0.count : c1.count;
            st_at[sp] = at | (2 * turns + c);
            sp++;
        }
    }
    if (!shadow && best != TRACE_DEAD64) atomicMin(&p.hit[path], best);
    return live;
}

// One level of the loop: n items (frontier_n) each write 2^descend slots of
// `output`; nothing is written when they would not fit the capacity. Through
// a fused site each item's live slots go straight to their compacted
// positions (in slot order, as the separate select would leave them), so the
// level's output holds only live items and no compaction pass follows.
extern "C" __global__ void __launch_bounds__(TRACE_BLOCK)
    trace_bf_expand(Scene s, Paths p, const u64* input, u64* output, u64 capacity, u32 shadow, u32 descend,
                    u64* words, FrontierLevel at, Site site) {
    u64 n = frontier_n(words, at);
    if (n > capacity) n = capacity;
#if REAP_SITE_FRONTIER == REAP_SITE_SEPARATE
    u64 fan = 1ull << descend;
    if (!frontier_fits(words, at, n, fan, capacity)) return;
    u32 live = 0;
    FOR_EACH(i, n) live += bf_expand_one(s, p, input[i], shadow, descend, output + i * fan);
    frontier_count_live(words, at, live);
#else
    SiteLoop l = site_loop<REAP_SITE_FRONTIER, TRACE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_FRONTIER>(site, l); t < l.tiles; t = site_next<REAP_SITE_FRONTIER>(site, l, t)) {
        u64 i = (u64)t * TRACE_BLOCK + threadIdx.x;
        u64 slots[1u << TRACE_DESCEND];
        u32 keep = 0;
        if (i < n) {
            bf_expand_one(s, p, input[i], shadow, TRACE_DESCEND, slots);
#pragma unroll
            for (u32 j = 0; j < (1u << TRACE_DESCEND); j++) keep |= (u32)(slots[j] != TRACE_DEAD64) << j;
        }
        site_emit<REAP_SITE_FRONTIER, TRACE_BLOCK, (1u << TRACE_DESCEND)>(site, l, t, slots, keep, output);
    }
    u64 total;
    if (site_finish<REAP_SITE_FRONTIER, TRACE_BLOCK, (1u << TRACE_DESCEND)>(site, l, output, &total))
        frontier_close(words, at, total, capacity);
#endif
}

// Breadth-first on the 8-wide BVH, one frontier item (path, wide node):
// tests the node's children, intersects its hit leaves at once (nearest
// first; the hit merges with an atomic min, a shadow ray's blocker sets the
// occlusion and ends the item) and writes the hit wide children to out[0, 8),
// nearest first, every other slot dead. Returns the live slots. Init's root
// item names wide node 0 (both BVHs share the root's box).
__device__ u32 bf_expand_wide_one(const Scene& s, Paths& p, u64 item, u32 shadow, u64* out) {
#pragma unroll
    for (u32 j = 0; j < 8; j++) out[j] = TRACE_DEAD64;
    if (item == TRACE_DEAD64) return 0;
    u32 path = (u32)(item >> 32);
    float3 o, d;
    float limit;
    if (!bf_ray(p, path, shadow, &o, &d, &limit)) return 0;
    u32 oct = octant(d);
    u64 best = TRACE_DEAD64;
    WideHits h = wide_children(s, (u32)item, o, inv_dir(d), oct, limit);
    if (wide_leaves(s, h, oct, o, d, limit, shadow != 0, &best)) {
        p.occluded[path] = 1;
        return 0;
    }
    u64 base = (u64)path << 32;
    u32 bits = h.nodes;
    // Static slots (registers, not local memory): slot j takes the j-th nearest hit child.
#pragma unroll
    for (u32 j = 0; j < 8; j++) {
        if (bits) {
            u32 bit = 31 - __clz(bits);
            bits &= ~(1u << bit);
            out[j] = base | (h.child_base + wide_rank(h.internal, bit, oct));
        }
    }
    if (!shadow && best != TRACE_DEAD64) atomicMin(&p.hit[path], best);
    return __popc(h.nodes);
}

// One level over the wide BVH: trace_bf_expand with eight slots an item.
// Five resident blocks a SM (at most 51 registers; 56 left room for four):
// H200, 1080p, 8 bounces, lookback fused, 1, 5 and 6 blocks: sphereflake
// 1003.4, 1031.3, 888.6 Mrays/s by wall clock, sphereflake-10m 755.7, 792.6,
// 638.9 (six spill); docs/render/bf-block-h200.
extern "C" __global__ void __launch_bounds__(TRACE_BLOCK, 5)
    trace_bf_expand_wide(Scene s, Paths p, const u64* input, u64* output, u64 capacity, u32 shadow, u64* words,
                         FrontierLevel at, Site site) {
    u64 n = frontier_n(words, at);
    if (n > capacity) n = capacity;
#if REAP_SITE_FRONTIER == REAP_SITE_SEPARATE
    if (!frontier_fits(words, at, n, 8, capacity)) return;
    u32 live = 0;
    FOR_EACH(i, n) live += bf_expand_wide_one(s, p, input[i], shadow, output + i * 8);
    frontier_count_live(words, at, live);
#else
    SiteLoop l = site_loop<REAP_SITE_FRONTIER, TRACE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_FRONTIER>(site, l); t < l.tiles; t = site_next<REAP_SITE_FRONTIER>(site, l, t)) {
        u64 i = (u64)t * TRACE_BLOCK + threadIdx.x;
        u64 slots[8];
        u32 keep = 0;
        if (i < n) {
            // The live slots come first, so the keep mask is their count's low bits.
            keep = (1u << bf_expand_wide_one(s, p, input[i], shadow, slots)) - 1u;
        } else {
#pragma unroll
            for (u32 j = 0; j < 8; j++) slots[j] = TRACE_DEAD64;
        }
        site_emit<REAP_SITE_FRONTIER, TRACE_BLOCK, 8>(site, l, t, slots, keep, output);
    }
    u64 total;
    if (site_finish<REAP_SITE_FRONTIER, TRACE_BLOCK, 8>(site, l, output, &total)) frontier_close(words, at, total, capacity);
#endif
}

// Breadth-first on the 8-wide BVH: one step of up to `levels` wide levels per
// tile of TRACE_BLOCK frontier items, the block keeping the tile's rays in
// shared memory across the levels (issue 47: an item used to gather its
// path's ray and hit key at every level, ~40 bytes of DRAM each). A tile's
// local frontier is a ring of (ray slot << 24 | wide node) items; a level
// expands its items in rounds of up to a block, each hit wide child (nearest
// first, in item order) joining the next level. Leaves are intersected where
// met, against the ray's closest hit the block knew when the round began
// (hits merge in shared memory after each round); they merge into the path's
// key with one atomic min per ray at the tile's end, and a shadow ray's
// blocker ends its ray's items from the next round on.
//
// A tile emits at most 8 items per input item, the fan-out the frontier is
// sized for: a round that could pass that is not started, and the step emits
// what it holds (the level's unexpanded items, then the children made so
// far). A level's first round is the whole tile (8 - 1 new items per item
// fit), so every step takes every item at least one wide level down and the
// host's bound of one wide level a step still holds. One level a step is
// trace_bf_expand_wide's expansion, which needs no block machinery for it.
#define BF_LOCAL (8 * TRACE_BLOCK)  // ring slots: at most 8 items in flight per input item
#define BF_NODE_BITS 24             // trace/cuda.rs WIDE_NODE_LIMIT
struct BfTile {
    float4 o[TRACE_BLOCK];  // origin, the culling distance the ray was loaded with
    float4 d[TRACE_BLOCK];  // direction, the path id's bits
    u64 best[TRACE_BLOCK];  // the closest hit this block found; a shadow ray's 0: blocked
    u32 ring[BF_LOCAL];
    u32 warp[TRACE_BLOCK / 32];
};
static_assert(sizeof(BfTile) == 18464, "BfTile: keep in sync with trace/cuda.rs BF_TILE_BYTES");

// Exclusive scan of c over the block (every thread calls it); *total gets the sum.
__device__ __forceinline__ u32 bf_block_scan(BfTile& T, u32 c, u32* total) {
    u32 incl = reap_warp_inclusive(c);
    u32 w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 31) T.warp[w] = incl;
    __syncthreads();
    u32 before = 0, all = 0;
#pragma unroll
    for (u32 k = 0; k < TRACE_BLOCK / 32; k++) {
        u32 t = T.warp[k];
        if (k < w) before += t;
        all += t;
    }
    *total = all;
    __syncthreads();  // every thread read the sums before the next scan writes them
    return before + incl - c;
}

// One local item: its wide node's hit children into kids (nearest first),
// their count; *found gets what its leaves found (the ray's closest hit so
// far, or a shadow ray's 0: blocked), which the caller merges after the
// round's barrier, so that no thread reads a ray's hit while another writes it.
__device__ __forceinline__ u32 bf_wide_local(const Scene& s, BfTile& T, u32 item, u32 shadow, u32 (&kids)[8],
                                             u64* found) {
    u32 slot = item >> BF_NODE_BITS, e = item & ((1u << BF_NODE_BITS) - 1u);
    u64 b = T.best[slot];
    *found = b;
    if (shadow && b == 0) return 0;
    float4 o4 = T.o[slot], d4 = T.d[slot];
    float3 o = f3(o4), d = f3(d4);
    u32 oct = octant(d);
    u64 best = shadow ? TRACE_DEAD64 : b;
    WideHits h = wide_children(s, e, o, inv_dir(d), oct, key_dist(b, o4.w));
    if (wide_leaves(s, h, oct, o, d, o4.w, shadow != 0, &best)) {
        *found = 0;
        return 0;
    }
    if (!shadow) *found = best;
    u32 bits = h.nodes, c = 0;
#pragma unroll
    for (u32 j = 0; j < 8; j++) {
        if (bits) {
            u32 bit = 31 - __clz(bits);
            bits &= ~(1u << bit);
            kids[j] = (slot << BF_NODE_BITS) | (h.child_base + wide_rank(h.internal, bit, oct));
            c++;
        }
    }
    return c;
}

// One tile, input items [i0, i0 + r) with r <= TRACE_BLOCK (every thread of
// the block calls it): this thread's share of what the tile emits, the 8
// items at 8 * threadIdx.x of the emitted list, into out (dead past them); their count.
__device__ u32 bf_wide_tile(const Scene& s, Paths& p, BfTile& T, const u64* input, u64 i0, u32 r, u32 shadow,
                            u32 levels, u64 (&out)[8]) {
    const u32 i = threadIdx.x;
    u32 ray = 0, root = 0;
    __syncthreads();  // the tile before read its ring and rays
    if (i < r) {
        u64 item = input[i0 + i];
        float3 o, d;
        float limit;
        if (item != TRACE_DEAD64 && bf_ray(p, (u32)(item >> 32), shadow, &o, &d, &limit)) {
            T.o[i] = f4(o, limit);
            T.d[i] = make_float4(d.x, d.y, d.z, __uint_as_float((u32)(item >> 32)));
            T.best[i] = TRACE_DEAD64;
            ray = 1;
            root = (i << BF_NODE_BITS) | (u32)item;
        }
    }
    u32 hi;
    u32 at = bf_block_scan(T, ray, &hi);
    if (ray) T.ring[at] = root;
    // Ring positions count on; [lo, end) is the level's unexpanded part, [end, hi) the next level.
    u32 lo = 0, end = hi, cap = 8 * r;
    for (u32 level = 0; lo < hi && level < levels; level++) {
        bool full = false;
        while (lo < end) {
            u32 m = min(min((u32)TRACE_BLOCK, end - lo), (cap - (hi - lo)) / 7);
            if (m == 0) {
                full = true;
                break;
            }
            __syncthreads();  // the ring's items and the rays are written
            u32 kids[8], c = 0, slot = 0;
            u64 found = TRACE_DEAD64, had = TRACE_DEAD64;
            if (i < m) {
                u32 item = T.ring[(lo + i) % BF_LOCAL];
                slot = item >> BF_NODE_BITS;
                had = T.best[slot];
                c = bf_wide_local(s, T, item, shadow, kids, &found);
            }
            u32 made;
            u32 pos = hi + bf_block_scan(T, c, &made);  // also: every read of this round's items and hits is done
#pragma unroll
            for (u32 j = 0; j < 8; j++)
                if (j < c) T.ring[(pos + j) % BF_LOCAL] = kids[j];
            // Closest hits merge by an atomic min; a blocked shadow ray's 0 is the least key.
            if (found < had) atomicMin((unsigned long long*)&T.best[slot], (unsigned long long)found);
            lo += m;
            hi += made;
        }
        if (full) break;
        end = hi;
    }
    __syncthreads();  // the ring and the hits are final
    if (ray) {
        u64 b = T.best[i];
        u32 path = __float_as_uint(T.d[i].w);
        if (shadow) {
            if (b == 0) p.occluded[path] = 1;
        } else if (b != TRACE_DEAD64) {
            atomicMin(&p.hit[path], b);
        }
    }
    u32 k = 0;
#pragma unroll
    for (u32 j = 0; j < 8; j++) {
        u32 x = lo + 8 * i + j;
        out[j] = TRACE_DEAD64;
        if (x < hi) {
            u32 item = T.ring[x % BF_LOCAL];
            u32 path = __float_as_uint(T.d[item >> BF_NODE_BITS].w);
            out[j] = ((u64)path << 32) | (item & ((1u << BF_NODE_BITS) - 1u));
            k++;
        }
    }
    return k;
}

// One step over the wide BVH: trace_bf_expand_wide with `levels` wide levels
// (0xffffffff: until the tile's items are done or full), the tile's rays in
// dynamic shared memory (a BfTile).
extern "C" __global__ void __launch_bounds__(TRACE_BLOCK)
    trace_bf_step_wide(Scene s, Paths p, const u64* input, u64* output, u64 capacity, u32 shadow, u32 levels,
                       u64* words, FrontierLevel at, Site site) {
    extern __shared__ __align__(16) unsigned char bf_shared[];
    BfTile& T = *reinterpret_cast<BfTile*>(bf_shared);
    u64 n = frontier_n(words, at);
    if (n > capacity) n = capacity;
#if REAP_SITE_FRONTIER == REAP_SITE_SEPARATE
    if (!frontier_fits(words, at, n, 8, capacity)) return;
    u32 live = 0, tiles = (u32)((n + TRACE_BLOCK - 1) / TRACE_BLOCK);
    for (u32 t = blockIdx.x; t < tiles; t += gridDim.x) {
        u64 i0 = (u64)t * TRACE_BLOCK;
        u32 r = (u32)min((u64)TRACE_BLOCK, n - i0);
        u64 slots[8];
        u32 k = bf_wide_tile(s, p, T, input, i0, r, shadow, levels, slots);
        if (threadIdx.x < r) {
#pragma unroll
            for (u32 j = 0; j < 8; j++) output[(i0 + threadIdx.x) * 8 + j] = slots[j];
        }
        live += k;
    }
    frontier_count_live(words, at, live);
#else
    SiteLoop l = site_loop<REAP_SITE_FRONTIER, TRACE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_FRONTIER>(site, l); t < l.tiles; t = site_next<REAP_SITE_FRONTIER>(site, l, t)) {
        u64 i0 = (u64)t * TRACE_BLOCK;
        u32 r = (u32)min((u64)TRACE_BLOCK, n - i0);
        u64 slots[8];
        u32 k = bf_wide_tile(s, p, T, input, i0, r, shadow, levels, slots);
        site_emit<REAP_SITE_FRONTIER, TRACE_BLOCK, 8>(site, l, t, slots, (1u << k) - 1u, output);
    }
    u64 total;
    if (site_finish<REAP_SITE_FRONTIER, TRACE_BLOCK, 8>(site, l, output, &total)) frontier_close(words, at, total, capacity);
#endif
}

// What shading one path decided.
struct Shaded {
    bool alive;
    bool shadow;
};

// One vertex of one path: the emission found (weighted by the estimator),
// then, below max_bounces, a next-event shadow ray on diffuse and glossy
// surfaces, the scattered ray and Russian roulette. Stage max_bounces only
// counts the emission or environment the last scattered ray found (pbrt-v4's
// maxdepth).
__device__ Shaded shade_one(const Scene& s, Paths& p, u32 path, u32 sample, u32 bounce, u32 max_bounces,
                            u32 estimator, u32 seed, u32 base) {
    // Random numbers follow the pixel, not the path slot, so shards sum to the whole image.
    u32 pixel = base + path;
    Shaded out = {false, false};
    float3 T = f3(p.throughput[path]);
    float3 L = f3(p.radiance[path]);
    u64 key = p.hit[path];
    p.shadow_dir[path] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (key == TRACE_DEAD64) {  // escaped: the environment is never sampled by next-event estimation
        p.radiance[path] = f4(L + T * f3(s.env), 0.0f);
        return out;
    }
    float4 d4 = p.dir[path];
    float3 o = f3(p.origin[path]), d = f3(d4);
    float pdf_bsdf = d4.w;  // the solid-angle pdf that chose d; 0 after the camera or a delta bounce
    u32 k = (u32)key;
    const Tri& tr = s.tris[k];
    const Material& m = s.materials[tr.material];
    float t, u, v;
    hit_tri(tr, o, d, &t, &u, &v);  // again, for the barycentrics
    t = key_dist(key, 0.0f);
    float3 x = o + d * t;
    float3 ng = normalize(cross(f3(tr.e1), f3(tr.e2)));
    const float* nv = s.normals + 9 * (u64)k;
    float3 ns = normalize(f3(nv) * (1.0f - u - v) + f3(nv + 3) * u + f3(nv + 6) * v);
    // Emitters emit on the side e1 x e2 points to (counter-clockwise winding) only.
    float cos_light = -dot(ng, d);
    bool front = cos_light > 0.0f;
    if (!front) {
        ng = -ng;
        ns = -ns;
    }
    if (dot(ns, d) >= 0.0f) ns = ng;  // a shading normal facing away would leak light
    if (m.emissive && front) {
        float3 le = f3(m.emission);
        float w = emission_weight(s, le, p.flags[path], pdf_bsdf, t, cos_light, estimator);
        L = L + T * le * w;
    }
    if (bounce >= max_bounces) {
        p.radiance[path] = f4(L, 0.0f);
        return out;
    }

    float3 albedo = albedo_at(s, m, k, u, v);
    float3 wo = -d;
    bool delta = m.kind == MAT_MIRROR || m.kind == MAT_GLASS;
    if (!delta && estimator != ESTIMATOR_BSDF && s.light_count > 0) {
        // next-event estimation: one point on one emitter, by power
        float r = rnd(pixel, sample, bounce, 0, seed), r1 = rnd(pixel, sample, bounce, 1, seed),
              r2 = rnd(pixel, sample, bounce, 2, seed);
        float3 nl, le;
        float3 lp = sample_light(s, r, r1, r2, &nl, &le);
        float3 xo = x + ng * s.eps;
        float3 w = lp - xo;
        float dist2 = dot(w, w);
        float dist = sqrtf(dist2);
        w = w * (1.0f / dist);
        float cx = dot(ns, w), cl = -dot(nl, w);  // cl > 0: the shading point sees the emitter's lit side
        if (cx > 0.0f && cl > 0.0f && dot(ng, w) > 0.0f) {
            float pdf_light = light_pdf(s, le) * dist2 / cl;
            float pdf_b;
            float3 f = bsdf_eval(m, albedo, ns, wo, w, &pdf_b);
            float mis = estimator == ESTIMATOR_MIS ? power_heuristic(pdf_light, pdf_b) : 1.0f;
            p.shadow_dir[path] = f4(w, dist * (1.0f - 1e-4f));
            p.shadow_radiance[path] = f4(T * f * le * (mis / pdf_light), 0.0f);
            out.shadow = true;
        }
    }
    float3 wi;
    float3 weight = albedo;  // f * cos / pdf of the sampled direction
    float pdf = 0.0f;  // its solid-angle pdf; 0 for a delta bounce
    bool above = true;  // the new ray leaves on the side the ray came from
    if (m.kind == MAT_DIFFUSE) {
        wi = cosine_around(ns, rnd(pixel, sample, bounce, 3, seed), rnd(pixel, sample, bounce, 4, seed));
        pdf = fmaxf(dot(ns, wi), 0.0f) * TRACE_PI_INV;
    } else if (m.kind == MAT_GLOSSY) {
        wi = glossy_sample(m, ns, wo, rnd(pixel, sample, bounce, 3, seed), rnd(pixel, sample, bounce, 4, seed),
                           &weight, &pdf);
    } else if (m.kind == MAT_MIRROR) {
        wi = reflect(d, ns);
    } else {  // glass: reflect or refract by Fresnel (Schlick)
        float eta = front ? 1.0f / m.ior : m.ior;
        float cosi = -dot(d, ns);
        float sin2t = eta * eta * (1.0f - cosi * cosi);
        float r0 = (1.0f - m.ior) / (1.0f + m.ior);
        r0 = r0 * r0;
        float c = 1.0f - cosi;
        float fresnel = r0 + (1.0f - r0) * c * c * c * c * c;
        if (sin2t >= 1.0f || rnd(pixel, sample, bounce, 5, seed) < fresnel) {
            wi = reflect(d, ns);
        } else {
            wi = normalize(d * eta + ns * (eta * cosi - sqrtf(1.0f - sin2t)));
            above = false;
        }
    }
    T = T * weight;
    bool alive = max3(weight) > 0.0f && (above ? dot(wi, ng) > 0.0f : dot(wi, ng) < 0.0f);
    if (alive && bounce >= 3) {  // Russian roulette
        float q = fminf(max3(T), 0.95f);
        if (rnd(pixel, sample, bounce, 6, seed) >= q) alive = false;
        else T = T * (1.0f / q);
    }
    p.radiance[path] = f4(L, 0.0f);
    p.throughput[path] = f4(T, 0.0f);
    p.origin[path] = f4(x + ng * (above ? s.eps : -s.eps), 0.0f);
    p.dir[path] = f4(wi, pdf);
    p.flags[path] = delta ? PATH_SPECULAR : 0u;
    out.alive = alive;
    return out;
}

// Shading of every queued path (path i is pixel base + i of the image):
// next[i] keeps the path id while the path lives, TRACE_DEAD32 once it
// escaped, was absorbed or was terminated.
// words[alive] counts the paths still alive, words[shadows] the shadow rays cast.
// Through a fused path site, `next` holds only the live paths, compacted, and
// their count goes to words[next_len].
extern "C" __global__ void __launch_bounds__(TRACE_BLOCK)
    trace_shade(Scene s, Paths p, const u32* queue, u32* next, u64 capacity, const u32* sample_word, u32 bounce,
                u32 max_bounces, u32 estimator, u32 seed, u32 base, u64* words, u64 queue_len, u64 alive,
                u64 shadows, u64 next_len, Site site) {
    u64 n = length(words, queue_len, capacity);
    u32 sample = *sample_word;
    u32 lives = 0, casts = 0;
#if REAP_SITE_PATHS == REAP_SITE_SEPARATE
    FOR_EACH(i, n) {
        u32 path = queue[i];
        Shaded r = {false, false};
        if (path != TRACE_DEAD32) r = shade_one(s, p, path, sample, bounce, max_bounces, estimator, seed, base);
        next[i] = r.alive ? path : TRACE_DEAD32;
        lives += r.alive;
        casts += r.shadow;
    }
#else
    SiteLoop l = site_loop<REAP_SITE_PATHS, TRACE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_PATHS>(site, l); t < l.tiles; t = site_next<REAP_SITE_PATHS>(site, l, t)) {
        u64 i = (u64)t * TRACE_BLOCK + threadIdx.x;
        u32 path[1] = {TRACE_DEAD32};
        Shaded r = {false, false};
        if (i < n) {
            path[0] = queue[i];
            if (path[0] != TRACE_DEAD32)
                r = shade_one(s, p, path[0], sample, bounce, max_bounces, estimator, seed, base);
        }
        lives += r.alive;
        casts += r.shadow;
        site_emit<REAP_SITE_PATHS, TRACE_BLOCK, 1>(site, l, t, path, r.alive, next);
    }
    u64 total;
    if (site_finish<REAP_SITE_PATHS, TRACE_BLOCK, 1>(site, l, next, &total)) words[next_len] = total;
#endif
    // One atomic per warp and counter (every thread reaches them).
    warp_add(&words[alive], lives);
    warp_add(&words[shadows], casts);
}

// Next-event estimation, last step: unoccluded shadow rays add their light.
extern "C" __global__ void trace_nee(Paths p, const u32* queue, u64 capacity, const u64* words, u64 queue_len) {
    u64 n = length(words, queue_len, capacity);
    FOR_EACH(i, n) {
        u32 path = queue[i];
        if (path == TRACE_DEAD32 || p.shadow_dir[path].w <= 0.0f || p.occluded[path]) continue;
        float4 L = p.radiance[path], add = p.shadow_radiance[path];
        p.radiance[path] = make_float4(L.x + add.x, L.y + add.y, L.z + add.z, 0.0f);
    }
}

// The sample's radiance into the per-pixel sum, path i into pixel base + i
// (the sum covers the whole image, whatever the shard), unless the frame
// failed (a frontier overflow: the host redoes the frame or reports it).
extern "C" __global__ void trace_accumulate(Paths p, float4* sum, u32 base, u32 count, const u64* words) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count || !frontier_ok(words)) return;
    float4 s = sum[base + i], L = p.radiance[i];
    sum[base + i] = make_float4(s.x + L.x, s.y + L.y, s.z + L.z, s.w + 1.0f);
}

// A split by samples: a rank's sample (its sums of one sample over zero, so
// its radiance and a count of 1) into a band of the held sums, the same
// additions as trace_accumulate, so the image is one GPU's bits.
extern "C" __global__ void trace_add_sample(float4* sum, const float4* part, u64 pixels) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pixels) return;
    float4 s = sum[i], p = part[i];
    sum[i] = make_float4(s.x + p.x, s.y + p.y, s.z + p.z, s.w + p.w);
}
