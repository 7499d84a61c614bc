// The collision demo's stages on the GPU (src/collide/mod.rs runs them in
// order; src/collide/cpu.rs is the CPU twin of each kernel, and
// src/collide/cuda.rs launches them). All arithmetic is common.cuh's
// `physics`, compiled with --fmad=false so that it matches the CPU bit for bit.
//
// Nodes: internal 0..n-1 (root 0), leaf n-1+k for the k-th sorted code. A
// frontier slot holds pack(node, node) or COLLIDE_DEAD64. Every count of a
// frame is a word of the frame's u64 array (`words`, frontier.cuh): the pair
// walk's lengths per level, the candidates appended since pairs_init (may
// exceed the list's capacity; word `cand_word`), the contacts (`contact_word`).
// The host reads them after the frame: kernels over a count read it here and
// loop over it with a grid sized from the capacity (grid-stride), and the
// stages that move bodies do nothing once the frame's status is set (the
// host then redoes the frame from the same bodies).
//
// Over 600 lines, kept whole: one kernel per stage, in the order the engines
// run them; the arithmetic is in the .cuh files.
#include "common.cuh"
#include "narrow.cuh"
#include "solver.cuh"
#include "colour.cuh"
#include "../frontier.cuh"
#include "../warp.cuh"
#include "../compaction/site.cuh"

// The pair frontier's compaction site (src/collide/cuda.rs picks it): a
// REAP_SITE_* of compaction/site.cuh. SEPARATE: expand writes four slots per
// pair, dead ones included, and the library's pass compacts them after it.
#ifndef REAP_SITE_PAIRS
#define REAP_SITE_PAIRS REAP_SITE_SEPARATE
#endif
#define COLLIDE_BLOCK 256

// Reserves `count` consecutive entries of the list behind `counter`, one
// atomic per warp: returns the lane's first index. Every lane must call it.
__device__ __forceinline__ u64 warp_append(u64* counter, u32 count) {
    u32 incl = reap_warp_inclusive(count);
    u32 total = __shfl_sync(0xffffffffu, incl, 31);
    u64 base = 0;
    if (reap_lane() == 31 && total) base = atomicAdd(counter, (u64)total);
    base = __shfl_sync(0xffffffffu, base, 31);
    return base + incl - count;
}

// Appends a thread's `found` contacts behind `counter` (every lane must call
// it): true when some fall past `capacity`, for the status.
__device__ __forceinline__ bool append_contacts(const Contact* c, u32 found, u64* counter, Contact* contacts,
                                                u64 capacity) {
    u64 at = warp_append(counter, found);
    bool lost = false;
    for (u32 k = 0; k < found; k++) {
        if (at + k < capacity) {
            contacts[at + k] = c[k];
        } else {
            lost = true;
        }
    }
    return lost;
}

// codes(): the Morton code of each body's centre, ids = 0..n.
extern "C" __global__ void collide_codes(const Body* bodies, u32 n, World w, u32* keys, u32* ids) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    keys[i] = physics::morton(physics::v3(bodies[i].pos), w);
    ids[i] = i;
}

// reorder(), first step: the bodies in the sorted codes' order into `moved`
// (body ids[i] to place i), each body's new place into `places`, and ids =
// 0..n (each thread reads and writes only its own id). The host copies
// `moved` back over the bodies.
extern "C" __global__ void collide_reorder(const Body* bodies, u32 n, u32* ids, Body* moved, u32* places) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 id = ids[i];
    moved[i] = bodies[id];
    places[id] = i;
    ids[i] = i;
}

// build(): thread k makes leaf n-1+k (the body ids[k] and its box) and, for
// k < n-1, internal node k (Karras 2012: its children, and their parent
// links). It also clears internal node k's arrival flag for refit.
extern "C" __global__ void collide_build(const u32* codes, const u32* ids, const Body* bodies, u32 n, World w,
                                         Node* nodes, u32* parent, u32* flags) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    u32 id = ids[k];
    physics::V3 lo, hi;
    physics::aabb(bodies[id], w, &lo, &hi);
    Node leaf;
    physics::store(leaf.min, lo);
    physics::store(leaf.max, hi);
    leaf.left = id;
    leaf.right = COLLIDE_LEAF;
    nodes[n - 1 + k] = leaf;
    if (k == 0) parent[0] = COLLIDE_NONE;  // the root: node 0, internal, or the only leaf when n == 1
    if (k + 1 < n) {
        u32 l, r;
        physics::karras_node(codes, (i64)n, (i64)k, &l, &r);
        Node in;
        in.min[0] = in.min[1] = in.min[2] = 0.0f;  // refit writes the box
        in.max[0] = in.max[1] = in.max[2] = 0.0f;
        in.left = l;
        in.right = r;
        nodes[k] = in;
        parent[l] = k;
        parent[r] = k;
        flags[k] = 0;
    }
}

// A node read around L1: another SM may have written it during this launch.
__device__ __forceinline__ Node load_cg(const Node* p) {
    const float4* q = (const float4*)p;
    float4 a = __ldcg(q), b = __ldcg(q + 1);
    Node nd;
    nd.min[0] = a.x;
    nd.min[1] = a.y;
    nd.min[2] = a.z;
    nd.left = __float_as_uint(a.w);
    nd.max[0] = b.x;
    nd.max[1] = b.y;
    nd.max[2] = b.z;
    nd.right = __float_as_uint(b.w);
    return nd;
}

// refit(): one thread per leaf walks up; at each internal node the first
// arrival stops and the second computes the union of both children's boxes
// and goes on. Min and max are exact, so the result does not depend on
// which child arrives first.
//
// Memory ordering: the first arrival's child box (a leaf from collide_build,
// an earlier launch, or a box this launch computed) is stored before its
// __threadfence() and its atomicAdd on the node's flag; the second arrival's
// atomicAdd returns 1, so it follows the first's in the flag's order, and
// its __threadfence() after the atomic orders its loads of the children
// after that. Fence, atomic / atomic, fence is the PTX memory model's
// fence-fence synchronisation, so the second arrival sees both boxes; the
// loads also bypass L1 (ld.cg), which is not coherent across SMs.
extern "C" __global__ void collide_refit(const u32* parent, Node* nodes, u32* flags, u32 n) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    u32 node = parent[n - 1 + k];
    while (node != COLLIDE_NONE) {
        __threadfence();  // publish the box below before arriving
        if (atomicAdd(&flags[node], 1u) == 0) return;  // the sibling's thread finishes this node
        __threadfence();  // the sibling's box is visible from here on
        Node in = load_cg(&nodes[node]);
        Node a = load_cg(&nodes[in.left]), b = load_cg(&nodes[in.right]);
        physics::V3 mn, mx;
        physics::union_(a, b, &mn, &mx);
        physics::store(in.min, mn);
        physics::store(in.max, mx);
        nodes[node] = in;
        node = parent[node];
    }
}

// pairs_init(): level 0 of the walk is [(root, root)], length and live count
// 1 (0 under two bodies). The frame's memset emptied the candidate list.
extern "C" __global__ void collide_pairs_init(u64* frontier, u32 write_root, u64* words, u64 len_word,
                                              u64 live_word) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    if (write_root) frontier[0] = pack(0, 0);
    words[len_word] = write_root;
    words[live_word] = write_root;
}

// One box test of expand: DEAD64 when the boxes miss; a leaf-leaf pair goes
// to the thread's candidates (bodies in increasing order) and leaves its slot
// dead; any other overlapping pair stays in the frontier.
__device__ __forceinline__ u64 test(u32 x, const Node& nx, u32 y, const Node& ny, u64* cand, u32* nc) {
    if (!physics::overlap(nx, ny)) return COLLIDE_DEAD64;
    if (nx.right == COLLIDE_LEAF && ny.right == COLLIDE_LEAF) {
        u32 bx = nx.left, by = ny.left;
        cand[(*nc)++] = pack(bx < by ? bx : by, bx < by ? by : bx);
        return COLLIDE_DEAD64;
    }
    return pack(x, y);
}

// What node x (its node nx) is tested by against another node: its two
// children if internal (the CPU twin's `children`), else the leaf itself.
// Writes them and their nodes to c and nc; returns how many.
__device__ __forceinline__ u32 children(const Node* nodes, u32 x, const Node& nx, u32 c[2], Node nc[2]) {
    if (nx.right == COLLIDE_LEAF) {
        c[0] = x;
        nc[0] = nx;
        return 1;
    }
    c[0] = nx.left;
    c[1] = nx.right;
    nc[0] = nodes[c[0]];
    nc[1] = nodes[c[1]];
    return 2;
}

// One pair of expand: pair i of n (none past n: the lane still takes part
// in the warp's appends) fills its four slots, appends its candidates and
// adds its live slots to `live`; a candidate past the list sets `lost`.
__device__ __forceinline__ void expand_one(const Node* nodes, const u64* frontier, u64 n, u64 i, u64 (&slot)[4],
                                           u64* candidates, u64 cand_capacity, u64* cand_count, u32* live,
                                           bool* lost) {
#pragma unroll
    for (u32 k = 0; k < 4; k++) slot[k] = COLLIDE_DEAD64;
    u64 cand[4];
    u32 nc = 0;
    u64 p = i < n ? frontier[i] : COLLIDE_DEAD64;
    if (p != COLLIDE_DEAD64) {
        u32 a = unpack_a(p), b = unpack_b(p);
        Node na = nodes[a];
        if (a == b) {
            // An internal node against itself: each internal child against
            // itself, and the two children against each other.
            u32 l = na.left, r = na.right;
            Node nl = nodes[l], nr = nodes[r];
            slot[0] = nl.right != COLLIDE_LEAF ? pack(l, l) : COLLIDE_DEAD64;
            slot[1] = nr.right != COLLIDE_LEAF ? pack(r, r) : COLLIDE_DEAD64;
            slot[2] = test(l, nl, r, nr, cand, &nc);
        } else {
            Node nb = nodes[b];
            u32 ca[2], cb[2];
            Node nca[2], ncb[2];
            u32 ka = children(nodes, a, na, ca, nca), kb = children(nodes, b, nb, cb, ncb);
#pragma unroll
            for (u32 k = 0; k < 4; k++) {
                u32 x = k / 2, y = k % 2;
                if (x < ka && y < kb) slot[k] = test(ca[x], nca[x], cb[y], ncb[y], cand, &nc);
            }
        }
    }
    u64 first = warp_append(cand_count, nc);
    for (u32 c = 0; c < nc; c++) {
        if (first + c < cand_capacity) {
            candidates[first + c] = cand[c];
        } else {
            *lost = true;
        }
    }
#pragma unroll
    for (u32 k = 0; k < 4; k++) *live += slot[k] != COLLIDE_DEAD64;
}

// expand(): one level of the pair walk (frontier.cuh's rules). Its n input
// pairs (n from the words) each write their child pairs to out[4i..4i+4] by
// the spec's slot rules (src/collide/mod.rs `Engine::expand`), or nothing at
// all when 4n slots do not fit `capacity`; the candidates found are appended
// to `candidates` (written only below `cand_capacity`, counted always, an
// overflow flagged in the status), and the live slots written are counted.
// Grid-stride over n; the loop's bound is the same for a whole block, so
// whole warps run every pass (warp-aggregated atomics) and every thread
// reaches frontier_count_live. Through a fused site the live child pairs go
// straight to their compacted positions (in slot order) and no pass follows.
extern "C" __global__ void __launch_bounds__(COLLIDE_BLOCK)
    collide_expand(const Node* nodes, const u64* frontier, u64 capacity, FrontierLevel at, u64* out,
                   u64* candidates, u64 cand_capacity, u64* words, u64 cand_word, Site site) {
    u64 n = frontier_n(words, at);
    if (n > capacity) n = capacity;
    u32 live = 0;
    bool lost = false;
#if REAP_SITE_PAIRS == REAP_SITE_SEPARATE
    if (!frontier_fits(words, at, n, 4, capacity)) return;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < n; base += stride) {
        u64 i = base + threadIdx.x;
        u64 slot[4];
        expand_one(nodes, frontier, n, i, slot, candidates, cand_capacity, &words[cand_word], &live, &lost);
        if (i < n) {
            // 32-byte aligned: two 16-byte stores.
            ulonglong2* o = (ulonglong2*)(out + 4 * i);
            o[0] = make_ulonglong2(slot[0], slot[1]);
            o[1] = make_ulonglong2(slot[2], slot[3]);
        }
    }
    if (lost) atomicOr(&words[FRONTIER_STATUS], FRONTIER_CANDIDATES);
    frontier_count_live(words, at, live);
#else
    SiteLoop l = site_loop<REAP_SITE_PAIRS, COLLIDE_BLOCK>(n);
    for (u32 t = site_first<REAP_SITE_PAIRS>(site, l); t < l.tiles; t = site_next<REAP_SITE_PAIRS>(site, l, t)) {
        u64 i = (u64)t * COLLIDE_BLOCK + threadIdx.x;
        u64 slot[4];
        expand_one(nodes, frontier, n, i, slot, candidates, cand_capacity, &words[cand_word], &live, &lost);
        u32 keep = 0;
#pragma unroll
        for (u32 k = 0; k < 4; k++) keep |= (u32)(slot[k] != COLLIDE_DEAD64) << k;
        site_emit<REAP_SITE_PAIRS, COLLIDE_BLOCK, 4>(site, l, t, slot, keep, out);
    }
    if (lost) atomicOr(&words[FRONTIER_STATUS], FRONTIER_CANDIDATES);
    u64 total;
    if (site_finish<REAP_SITE_PAIRS, COLLIDE_BLOCK, 4>(site, l, out, &total)) frontier_close(words, at, total, capacity);
#endif
}

// narrow(): the exact shape test of each stored candidate (those counted in
// words[cand_word], up to the list's capacity); its contact points are
// appended to `contacts` and counted in words[contact_word]. Points past
// `contact_capacity` are counted, not written, and set the candidates' status
// (the host makes room and redoes the frame). Skipped when the frame is
// redone. Grid-stride with a block-uniform bound, for the warp-aggregated append.
extern "C" __global__ void collide_narrow(const Body* bodies, World w, const u64* candidates, u64 cand_capacity,
                                          Contact* contacts, u64 contact_capacity, u64* words, u64 cand_word,
                                          u64 contact_word, u32 lo, u32 hi) {
    if (!frontier_ok(words)) return;
    u64 count = words[cand_word];
    if (count > cand_capacity) count = cand_capacity;
    bool lost = false;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < count; base += stride) {
        u64 i = base + threadIdx.x;
        Contact c[COLLIDE_MAX_POINTS];
        u32 found = 0;
        if (i < count) {
            u64 p = candidates[i];
            u32 a = unpack_a(p), b = unpack_b(p);
            // order.rs `pair_by_id`: the lower spawn number first, so that a pair keeps its orientation.
            if (bodies[b].id < bodies[a].id) {
                u32 t = a;
                a = b;
                b = t;
            }
            // A split rank leaves a pair of two ghosts to their owners.
            if (!(physics::is_ghost(bodies[a], w, lo, hi) && physics::is_ghost(bodies[b], w, lo, hi))) {
                found = physics::collide(a, bodies[a], b, bodies[b], w, c);
            }
        }
        lost |= append_contacts(c, found, &words[contact_word], contacts, contact_capacity);
    }
    if (lost) atomicOr(&words[FRONTIER_STATUS], FRONTIER_CANDIDATES);
}

// narrow(), second step: every body's wall points, appended to the contacts
// as collide_narrow appends (the same capacity rule and status).
extern "C" __global__ void collide_walls(const Body* bodies, u32 n, World w, Contact* contacts, u64 contact_capacity,
                                         u64* words, u64 contact_word, u32 lo, u32 hi) {
    if (!frontier_ok(words)) return;
    bool lost = false;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < n; base += stride) {
        u64 i = base + threadIdx.x;
        Contact c[COLLIDE_MAX_WALL_POINTS];
        u32 found = i < n && !physics::is_ghost(bodies[i], w, lo, hi) ? physics::wall_contacts((u32)i, bodies[i], w, c) : 0u;
        lost |= append_contacts(c, found, &words[contact_word], contacts, contact_capacity);
    }
    if (lost) atomicOr(&words[FRONTIER_STATUS], FRONTIER_CANDIDATES);
}

// solve(), first step: each body's contact points, with bodies and walls
// (its mass is split over them: a pair's points each take a part, or a box
// resting on four corners overshoots four times; World::split keeps that
// from stalling the solver). The host zeroes `counts` before.
extern "C" __global__ void collide_count(const Contact* contacts, const u64* words, u64 contact_word, u32* counts) {
    if (!frontier_ok(words)) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        Contact c = contacts[i];
        atomicAdd(&counts[c.a], 1u);
        if (!physics::is_wall(c.b)) atomicAdd(&counts[c.b], 1u);
    }
}

// solve(), after the library's exclusive scan of the counts into each body's
// first slot (`cursor` starts as a copy of it): every contact's ends go to
// their bodies' runs of `ends`, as (contact << 1) | side (0: a, 1: b; a
// wall's side is not stored). The order within a run is the atomics', which
// the sums do not see (integer addition is associative).
extern "C" __global__ void collide_ends(const Contact* contacts, const u64* words, u64 contact_word, u32* cursor,
                                        u32* ends) {
    if (!frontier_ok(words)) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        Contact c = contacts[i];
        ends[atomicAdd(&cursor[c.a], 1u)] = (u32)i << 1;
        if (!physics::is_wall(c.b)) ends[atomicAdd(&cursor[c.b], 1u)] = ((u32)i << 1) | 1u;
    }
}

// The colouring (physics/colour.rs; the CPU engine's `colour`). `table`
// holds, per colour k < COLOUR_MAX: its manifolds (COLOUR_COUNTS + k), the
// first of them in `order` (COLOUR_STARTS + k, and + COLOUR_MAX the end) and
// the scatter's cursor (COLOUR_CURSORS + k). The host zeroes it and `used`
// before the frame's colouring.
#define COLOUR_COUNTS 0u
#define COLOUR_STARTS (COLOUR_MAX + 1u)
#define COLOUR_CURSORS (2u * (COLOUR_MAX + 1u))
// Per round, whether a body picked (colour_rounds(COLOUR_MAX) of them): a
// round after one where none did has nothing left to colour, and its kernels
// return at once (the CPU engine stops there). A split rank runs every round
// (`every_round`): a ghost's pick comes from its owner, so a round with no
// pick here may still colour a manifold of an owned immovable body and a ghost.
#define COLOUR_PICKED (3u * (COLOUR_MAX + 1u))

// solve(), colouring's start: a manifold's first point UNCOLOURED, its
// others FOLLOWER; with no colours every point OVERFLOW (Jacobi alone). A
// first point's `names` entry is its manifold by spawn numbers
// (physics::named): the rounds rank and pick by it, read once here rather
// than from both bodies in every round.
extern "C" __global__ void collide_colour_init(const Contact* contacts, const u64* words, u64 contact_word,
                                               u32 colours, u32* colour, const Body* bodies, u64* names) {
    if (!frontier_ok(words)) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        bool first = physics::starts_run(contacts, i);
        colour[i] = colours == 0u ? COLOUR_OVERFLOW : first ? COLOUR_UNCOLOURED : COLOUR_FOLLOWER;
        if (colours != 0u && first) names[i] = physics::named(physics::manifold(contacts[i]), bodies);
    }
}

// One round of the colouring, first step: each movable body picks its
// highest-ranked manifold still uncoloured, by name (NO_PICK: none).
extern "C" __global__ void collide_colour_pick(const Body* bodies, u32 n, const u32* ends, const u32* first,
                                               const u32* counts, const u64* names, const u32* colour,
                                               const u64* words, u64* picks, u32* table, u32 round,
                                               u32 every_round) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !frontier_ok(words)) return;
    if (round > 0u && every_round == 0u && table[COLOUR_PICKED + round - 1u] == 0u) return;
    // A body that picked nothing has nothing left: colours are only ever
    // taken, so it picks nothing again (and its ends are not read again).
    if (round > 0u && picks[i] == COLOUR_NO_PICK) return;
    u64 best = COLOUR_NO_PICK;
    if (bodies[i].inv_mass > 0.0f) {
        u32 me = bodies[i].id;
        for (u32 e = first[i], to = first[i] + counts[i]; e < to; e++) {
            u32 c = ends[e] >> 1;
            if (colour[c] != COLOUR_UNCOLOURED) continue;
            u64 name = names[c];
            if (best == COLOUR_NO_PICK || physics::outranks_at(me, name, best)) best = name;
        }
    }
    picks[i] = best;
    if (best != COLOUR_NO_PICK) {
        // One store per warp, not one per body on a single word.
        u32 lanes = __activemask();
        if ((threadIdx.x & 31u) == (u32)__ffs(lanes) - 1u && table[COLOUR_PICKED + round] == 0u) {
            table[COLOUR_PICKED + round] = 1u;
        }
    }
}

// One round, second step: a manifold both its movable bodies picked takes
// the lowest colour neither has (OVERFLOW past `colours`), on all its points.
// The winners share no movable body: each reads and sets only its own
// bodies' bits, and writes only its own run (never another's first point).
extern "C" __global__ void collide_colour_take(const Contact* contacts, const u64* words, u64 contact_word,
                                               const Body* bodies, const u64* names, const u64* picks, u32 colours,
                                               u32* colour, u32* used, const u32* table, u32 round,
                                               u32 every_round) {
    if (!frontier_ok(words)) return;
    if (round > 0u && every_round == 0u && table[COLOUR_PICKED + round - 1u] == 0u) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        if (colour[i] != COLOUR_UNCOLOURED) continue;
        u64 m = physics::manifold(contacts[i]);
        u32 a = unpack_a(m), b = unpack_b(m);
        bool fa = physics::is_wall_or_immovable(a, bodies), fb = physics::is_wall_or_immovable(b, bodies);
        u64 name = names[i];
        if (!(fa || picks[a] == name) || !(fb || picks[b] == name)) continue;
        u32 k = physics::first_free((fa ? 0u : used[a]) | (fb ? 0u : used[b]), colours);
        colour[i] = k;
        for (u64 j = i + 1; j < count && !physics::starts_run(contacts, j); j++) colour[j] = k;
        if (k != COLOUR_OVERFLOW) {
            if (!fa) used[a] |= 1u << k;
            if (!fb) used[b] |= 1u << k;
        }
    }
}

// Colouring's end: what no round coloured goes to the overflow, and each
// colour counts its manifolds.
// Counted per warp first (lanes of one colour add once): a million
// manifolds' atomics on 24 words queue at the L2 (0.4 ms at 1M bodies).
extern "C" __global__ void collide_colour_finish(const Contact* contacts, const u64* words, u64 contact_word,
                                                 u32* colour, u32* table) {
    if (!frontier_ok(words)) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        u32 k = colour[i];
        if (k >= COLOUR_FOLLOWER) {
            colour[i] = COLOUR_OVERFLOW;
        } else if (physics::starts_run(contacts, i)) {
            u32 peers = __match_any_sync(__activemask(), k);
            if ((threadIdx.x & 31u) == (u32)__ffs(peers) - 1u) atomicAdd(&table[COLOUR_COUNTS + k], __popc(peers));
        }
    }
}

// Each colour's first place in `order` (one thread: COLOUR_MAX counts).
extern "C" __global__ void collide_colour_scan(u32* table) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    u32 sum = 0;
    for (u32 k = 0; k <= COLOUR_MAX; k++) {
        table[COLOUR_STARTS + k] = sum;
        table[COLOUR_CURSORS + k] = sum;
        if (k < COLOUR_MAX) sum += table[COLOUR_COUNTS + k];
    }
}

// Each coloured manifold into its colour's part of `order`, as pack(first
// point, end of its run). The order within a colour is the atomics': its
// manifolds share no movable body, so it does not change the result. The
// lanes of a warp with one colour take their places with one atomic.
extern "C" __global__ void collide_colour_order(const Contact* contacts, const u64* words, u64 contact_word,
                                                const u32* colour, u32* table, u64* order) {
    if (!frontier_ok(words)) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        u32 k = colour[i];
        if (k == COLOUR_OVERFLOW || !physics::starts_run(contacts, i)) continue;
        u32 peers = __match_any_sync(__activemask(), k);
        u32 lane = threadIdx.x & 31u, leader = (u32)__ffs(peers) - 1u;
        u32 base = 0u;
        if (lane == leader) base = atomicAdd(&table[COLOUR_CURSORS + k], __popc(peers));
        base = __shfl_sync(peers, base, leader) + __popc(peers & ((1u << lane) - 1u));
        u64 end = i + 1;
        while (end < count && !physics::starts_run(contacts, end)) end++;
        order[base] = pack((u32)i, (u32)end);
    }
}

// solve(), after the colouring: each movable body's points left to the
// Jacobi pass, over which it splits its mass (an immovable body: 0).
extern "C" __global__ void collide_split(const Body* bodies, u32 n, const u32* ends, const u32* first,
                                         const u32* counts, const u32* colour, const u64* words, u32* split) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !frontier_ok(words)) return;
    u32 k = 0;
    if (bodies[i].inv_mass > 0.0f) {
        for (u32 e = first[i], to = first[i] + counts[i]; e < to; e++) k += colour[ends[e] >> 1] == COLOUR_OVERFLOW;
    }
    split[i] = k;
}

// substep(), one pass, colour `k`: each of its manifolds (one thread each)
// takes its points in order, moving its bodies directly (solver.rs
// `coloured_impulse`); no movable body is in two of them. Grid-stride over
// the colour's part of `order`; nothing when the frame is redone.
extern "C" __global__ void collide_solve_colour(Contact* contacts, const u64* words, Body* bodies, const u64* order,
                                                const u32* table, u32 k, World w, u32 relax) {
    if (!frontier_ok(words)) return;
    u32 from = table[COLOUR_STARTS + k], to = table[COLOUR_STARTS + k + 1u];
    for (u32 j = from + blockIdx.x * blockDim.x + threadIdx.x; j < to; j += gridDim.x * blockDim.x) {
        u64 run = order[j];
        u32 head = unpack_a(run), end = unpack_b(run);
        u32 ia = contacts[head].a, ib = contacts[head].b;
        bool wall = physics::is_wall(ib);
        Body a = bodies[ia];
        Body b = {};
        if (!wall) b = bodies[ib];
        // Nothing in a pass turns a body: its inertia holds for every point.
        physics::Inertia ma = physics::inertia(a), mb = physics::inertia(b);
        for (u32 i = head; i < end; i++) {
            Contact c = contacts[i];
            if (wall) {
                b = physics::wall_body(c.b, physics::v3(c.point), w);
                mb = physics::inertia(b);
            }
            physics::coloured_impulse(c, a, ma, b, mb, w, relax != 0u);
            contacts[i] = c;
        }
        // An immovable body, read by many, is never written.
        if (a.inv_mass > 0.0f) bodies[ia] = a;
        if (!wall && b.inv_mass > 0.0f) bodies[ib] = b;
    }
}

// A body's sums of one pass, in 2^-24 fixed point (two's complement in
// unsigned words, wrapping as the CPU's i64 sums do): linear impulse,
// angular impulse, push.
struct Sums {
    u64 linear[3];
    u64 angular[3];
    u64 push[3];
};

__device__ __forceinline__ void add_sums(Sums& s, physics::V3 linear, physics::V3 angular, physics::V3 push) {
#pragma unroll
    for (int k = 0; k < 3; k++) {
        s.linear[k] += (u64)physics::to_fixed(linear[k]);
        s.angular[k] += (u64)physics::to_fixed(angular[k]);
        s.push[k] += (u64)physics::to_fixed(push[k]);
    }
}

__device__ __forceinline__ void apply_sums(Body& b, const Sums& s) {
    physics::V3 linear, angular, push;
#pragma unroll
    for (int k = 0; k < 3; k++) {
        linear[k] = physics::from_fixed((i64)s.linear[k]);
        angular[k] = physics::from_fixed((i64)s.angular[k]);
        push[k] = physics::from_fixed((i64)s.push[k]);
    }
    physics::apply(b, physics::inertia(b), linear, angular, push);
}

// What collide_gather does to each body, in this order (cpu.rs `substep`).
#define GATHER_PASS 1u       // takes the sums of its contacts' responses of the pass
#define GATHER_INTEGRATE 2u  // moves: the substep's last pass
#define GATHER_BEGIN 4u      // the next substep's gravity and the impulses its contacts held
#define GATHER_BOUNCES 8u    // takes the sums of its bouncing contacts' responses (a restitution pass)

// One contact's response r added to the sums of its side `side` (0: a, which
// takes the opposite impulse and push; 1: b).
__device__ __forceinline__ void add_response(Sums& s, const physics::Impulse& r, u32 side) {
    if (side) {
        add_sums(s, r.linear, r.angular_b, r.push);
    } else {
        add_sums(s, physics::scale(r.linear, -1.0f), r.angular_a, physics::scale(r.push, -1.0f));
    }
}

// substep(): every body gathers from its run of ends, by `what` above: the
// pass's responses (collide_solve's), then the step, then gravity and the
// held impulses (solver.rs `hold`, from the contacts' impulses and the
// body's position as the step left it). One thread a body, no atomics. A
// restitution pass reads only the responses of bouncing contacts
// (collide_restitute writes no other), and a body with none (`bouncing`)
// reads no end: it takes zero sums, as on the CPU.
extern "C" __global__ void collide_gather(Body* bodies, u32 n, const u32* ends, const u32* first, const u32* counts,
                                          const physics::Impulse* responses, const Contact* contacts, World w,
                                          const u64* words, u32 what, const u32* bouncing, const u32* colour,
                                          const u32* split) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !frontier_ok(words)) return;
    Body b = bodies[i];
    // An immovable body takes nothing and does not move (the ramp: thousands of ends for one thread).
    if (b.inv_mass <= 0.0f) return;
    u32 from = first[i], to = first[i] + counts[i];
    physics::V3 zero = physics::v3(0.0f, 0.0f, 0.0f);
    // A Jacobi pass reads only the overflow's responses (collide_solve writes
    // no other); a body with none takes nothing.
    if ((what & GATHER_PASS) && split[i] > 0u) {
        Sums s = {};
        for (u32 e = from; e < to; e++) {
            u32 end = ends[e];
            if (colour[end >> 1] != COLOUR_OVERFLOW) continue;
            add_response(s, responses[end >> 1], end & 1u);
        }
        apply_sums(b, s);
    }
    if (what & GATHER_BOUNCES) {
        Sums s = {};
        for (u32 e = from, to_ = bouncing[i] > 0u ? to : from; e < to_; e++) {
            u32 end = ends[e];
            if (!physics::bounces(contacts[end >> 1])) continue;
            add_response(s, responses[end >> 1], end & 1u);
        }
        apply_sums(b, s);
    }
    if (what & GATHER_INTEGRATE) physics::integrate(b, w);
    if (what & GATHER_BEGIN) {
        physics::gravity(b, w);
        Sums s = {};
        for (u32 e = from; e < to; e++) {
            u32 end = ends[e];
            physics::V3 linear, angular;
            Contact c = contacts[end >> 1];  // whole: 16-byte loads
            physics::hold_side(c, b, end & 1u, &linear, &angular);
            add_sums(s, linear, angular, zero);
        }
        apply_sums(b, s);
    }
    bodies[i] = b;
}

// Warm starting's table: the last frame's contacts (`previous`, in the
// order they were appended) by key (a, b, slot), open addressing over
// mask + 1 slots (a power of two, at least twice the contacts), each slot
// the contact's index + 1 (0: empty; the host zeroes the slots first).
// Keys are unique within a frame, so what a lookup finds does not depend on
// the order of the inserts: the CPU's binary search finds the same contact.
__device__ __forceinline__ u32 contact_hash(u32 a, u32 b, u32 slot) {
    u32 h = a * 0x9e3779b1u ^ (b * 0x85ebca77u + slot * 0xc2b2ae3du);
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    return h;
}

__device__ __forceinline__ const Contact* find_previous(const Contact& c, const Contact* previous, const u32* table,
                                                        u32 mask) {
    for (u32 h = contact_hash(c.a, c.b, c.slot) & mask;; h = (h + 1) & mask) {
        u32 e = table[h];
        if (e == 0) return nullptr;
        const Contact* p = &previous[e - 1];
        if (p->a == c.a && p->b == c.b && p->slot == c.slot) return p;
    }
}

// The warm-start table's mask for `count` previous contacts: slots are a
// power of two, at least twice the contacts (warm.rs `table_slots`). The count
// is a device word the host sets before the frame, so that a frame recorded
// as a CUDA graph warm starts from whatever the last frame left.
__device__ __forceinline__ u32 warm_mask(u32 count) {
    u64 slots = 1;
    while (slots < 2ull * count) slots <<= 1;
    return (u32)(slots - 1);
}

// solve(), warm start: the table's used slots cleared (the table holds at
// least that many: warm.rs `resize`).
extern "C" __global__ void collide_warm_clear(u32* table, const u32* count_word) {
    u64 slots = (u64)warm_mask(*count_word) + 1;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < slots; i += (u64)gridDim.x * blockDim.x) table[i] = 0;
}

// reorder(), last step: the last frame's contacts (`*count_word` of them)
// name their bodies' new places (`places`, collide_reorder's). A pair keeps
// its orientation: contacts name the lower spawn number first.
extern "C" __global__ void collide_warm_follow(Contact* previous, const u32* count_word, const u32* places) {
    u64 count = *count_word;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        Contact& p = previous[i];
        p.a = places[p.a];
        if (!physics::is_wall(p.b)) p.b = places[p.b];
    }
}

// solve(), warm start's first step: the last frame's contacts (`*count_word`
// of them) into the table (the CPU sorts them instead). Nothing when the
// frame is redone.
extern "C" __global__ void collide_warm_table(const Contact* previous, const u32* count_word, u32* table,
                                              const u64* words) {
    if (!frontier_ok(words)) return;
    u64 count = *count_word;
    u32 mask = warm_mask(*count_word);
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        const Contact& p = previous[i];
        u32 h = contact_hash(p.a, p.b, p.slot) & mask;
        // The table has more slots than contacts: a free one comes.
        while (atomicCAS(&table[h], 0u, (u32)i + 1u) != 0u) h = (h + 1) & mask;
    }
}

// solve(), warm start: each contact that the last frame had takes the
// impulses it held at that frame's end (the first substep applies them).
extern "C" __global__ void collide_warm(Contact* contacts, const u64* words, u64 contact_word,
                                        const Contact* previous, const u32* table, const u32* previous_count) {
    if (!frontier_ok(words)) return;
    u32 mask = warm_mask(*previous_count);
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        Contact& c = contacts[i];
        const Contact* p = find_previous(c, previous, table, mask);
        if (p != nullptr) physics::warm_start(c, *p);
    }
}

// substep(), one pass: each contact of the overflow (words[contact_word]
// contacts in all) updates the impulses it has applied this substep and
// writes its response, which collide_gather sums per body (`counts`: each
// body's overflow points, collide_split's). Reads the bodies from before the pass; each
// contact is one thread's. Grid-stride; nothing when the frame is redone.
extern "C" __global__ void collide_solve(Contact* contacts, const u64* words, u64 contact_word, const Body* bodies,
                                         const u32* counts, World w, physics::Impulse* responses, const u32* colour,
                                         u32 relax) {
    if (!frontier_ok(words)) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        if (colour[i] != COLOUR_OVERFLOW) continue;  // the coloured passes solve it
        Contact& c = contacts[i];
        Body a = bodies[c.a];
        bool wall = physics::is_wall(c.b);
        Body b = wall ? physics::wall_body(c.b, physics::v3(c.point), w) : bodies[c.b];
        responses[i] = physics::contact_impulse(c, a, physics::inertia(a), counts[c.a], b, physics::inertia(b),
                                                wall ? 1u : counts[c.b], w, relax != 0u);
    }
}

// substep(), after the frame's last: each body's contacts that owe a bounce
// (physics::bounces), over which the restitution pass splits its mass.
extern "C" __global__ void collide_bouncing(const Body* bodies, u32 n, const u32* ends, const u32* first,
                                            const u32* counts, const Contact* contacts, const u64* words,
                                            u32* bouncing) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !frontier_ok(words)) return;
    u32 k = 0;
    // An immovable body takes nothing (its count is never read for a share that matters).
    if (bodies[i].inv_mass > 0.0f) {
        for (u32 e = first[i], to = first[i] + counts[i]; e < to; e++) k += physics::bounces(contacts[ends[e] >> 1]);
    }
    bouncing[i] = k;
}

// substep(), after the frame's last: one restitution pass (of
// World::bounce_passes; `first` starts each contact's given impulse), each
// bouncing contact's impulse into its response, which collide_gather sums per body.
// Grid-stride; nothing when the frame is redone.
extern "C" __global__ void collide_restitute(Contact* contacts, const u64* words, u64 contact_word, const Body* bodies,
                                             const u32* bouncing, World w, u32 first,
                                             physics::Impulse* responses) {
    if (!frontier_ok(words)) return;
    u64 count = words[contact_word];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        Contact& c = contacts[i];
        // The gather reads no other contact's response (GATHER_BOUNCES).
        if (!physics::bounces(c)) continue;
        Body a = bodies[c.a];
        bool wall = physics::is_wall(c.b);
        Body b = wall ? physics::wall_body(c.b, physics::v3(c.point), w) : bodies[c.b];
        responses[i] = physics::restitution(c, first != 0u, a, physics::inertia(a), bouncing[c.a], b,
                                            physics::inertia(b), wall ? 1u : bouncing[c.b]);
    }
}

