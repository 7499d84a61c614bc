// The wavefront stages on wgpu, kernels/trace/wavefront.cu's
// twin, in its order (src/trace/mod.rs runs them; src/trace/cpu/ is the CPU
// twin of each). One path per pixel of the engine's shard (path i is pixel
// base + i) per sample; state in structure-of-arrays indexed by path id; the
// live-path queue holds path ids, TRACE_DEAD32 marking a dead slot, and the
// library's compaction removes dead slots between bounces. Breadth-first
// traversal works on a frontier of (node, path) items (lo, hi), all ones
// marking a dead one, through the shared level loop (frontier.wgsl).
//
// Nothing here takes a length from the host: every stage over a queue or a
// frontier reads it from a word of the frame's word array and is dispatched
// for the buffer's capacity with a grid-stride loop (`prm.stride`), so
// invocations past the length do nothing and the host never waits inside a
// frame. Every loop is bounded (lavapipe stops a shader's loops silently
// after 65,535 iterations in all).

// One file past 600 lines, as its twin wavefront.cu: every entry shares the
// bindings, the per-item helpers and the module's compilation (one shader
// module a device), and its separate and fused (`*_atomic`) entries sit
// beside each other so that they read as the pairs they are.

// Invocations per workgroup (wgpu.rs `TraceTuning::workgroup`).
override WG: u32 = 128u;
// trace_depth_first's stack (wavefront.cu STACK).
const STACK: u32 = 64u;
// A descent of at most 5 levels keeps at most one pending sibling per level plus the node in hand.
const DESCEND_STACK: u32 = 8u;
// Slots of one binary expansion: 2^5, the deepest descent.
const MAX_FAN: u32 = 32u;
// A breadth-first item past level 0 names its node by the node's children (wavefront.cu TRACE_PAIR).
const TRACE_PAIR: u32 = 0x80000000u;
const ITEM_DEAD: vec2<u32> = vec2<u32>(0xffffffffu, 0xffffffffu);

var<workgroup> wg_alive: atomic<u32>;
var<workgroup> wg_shadows: atomic<u32>;

fn inv_dir(d: vec3<f32>) -> vec3<f32> { return vec3<f32>(1.0) / d; }

// Camera rays for one sample over the shard [base, base + count): path i is
// pixel base + i; the queue holds every path and its length word becomes
// the shard's pixel count.
@compute @workgroup_size(WG)
fn trace_camera(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x == 0u { word_set(prm.queue_len, vec2<u32>(prm.count, 0u)); }
    let width = info.dims.x;
    let height = info.dims.y;
    let seed = info.dims.z;
    for (var i = gid.x; i < prm.count; i += prm.stride) {
        let pixel = prm.base + i;
        let x = (f32(pixel % width) + rnd(pixel, prm.sample, 0u, 60u, seed)) / f32(width);
        let y = (f32(pixel / width) + rnd(pixel, prm.sample, 0u, 61u, seed)) / f32(height);
        let d = normalize(info.cam_forward.xyz + info.cam_right.xyz * (2.0 * x - 1.0) + info.cam_up.xyz * (1.0 - 2.0 * y));
        pset(F_ORIGIN, i, vec4<f32>(info.cam_origin.xyz, 0.0));
        pset(F_DIR, i, vec4<f32>(d, 0.0));
        pset(F_THROUGHPUT, i, vec4<f32>(1.0, 1.0, 1.0, 0.0));
        pset(F_RADIANCE, i, vec4<f32>(0.0));
        wset(W_FLAGS, i, PATH_SPECULAR);  // an emitter seen directly counts
        queue[i] = i;
    }
}

// A path's ray for traversal: origin, direction, the distance it ends at.
struct Ray {
    o: vec3<f32>,
    d: vec3<f32>,
    tmax: f32,
}
fn path_ray(path: u32, shadow: bool) -> Ray {
    let o = pget(F_ORIGIN, path).xyz;
    if shadow {
        let sd = pget(F_SHADOW_DIR, path);
        return Ray(o, sd.xyz, sd.w);
    }
    return Ray(o, pget(F_DIR, path).xyz, trace_inf());
}

// Depth-first traversal with a per-ray stack, nearer child first: the
// baseline. Closest hit into the path's key, or (shadow) its occlusion.
fn depth_first_one(path: u32, shadow: bool) {
    let r = path_ray(path, shadow);
    if shadow && r.tmax <= 0.0 { return; }
    let inv = inv_dir(r.d);
    var best = KEY_DEAD;
    var occluded = false;
    // An empty scene has no root to enter.
    let scene = info.counts.w > 0u;
    var stack: array<u32, STACK>;
    var sp = 0u;
    if scene && hit_box(node(0u), r.o, inv, r.tmax) >= 0.0 {
        stack[0] = 0u;
        sp = 1u;
    }
    // Each node is popped once: the loop ends within the BVH's node count.
    while sp > 0u {
        sp -= 1u;
        let nd = node(stack[sp]);
        let limit = key_dist(best, r.tmax);
        if nd.count > 0u {
            if leaf_range(info.at_a.y, nd.first, nd.count, r.o, r.d, limit, shadow, &best) {
                occluded = true;
                break;
            }
            continue;
        }
        let t0 = hit_box(node(nd.first), r.o, inv, limit);
        let t1 = hit_box(node(nd.first + 1u), r.o, inv, limit);
        // Push the farther child first so the nearer is taken next.
        if t0 >= 0.0 && t1 >= 0.0 {
            let near0 = t0 <= t1;
            stack[sp] = select(nd.first, nd.first + 1u, near0);
            stack[sp + 1u] = select(nd.first + 1u, nd.first, near0);
            sp += 2u;
        } else if t0 >= 0.0 {
            stack[sp] = nd.first;
            sp += 1u;
        } else if t1 >= 0.0 {
            stack[sp] = nd.first + 1u;
            sp += 1u;
        }
    }
    if shadow {
        wset(W_OCCLUDED, path, u32(occluded));
    } else {
        key_set(path, best);
    }
}

@compute @workgroup_size(WG)
fn trace_depth_first(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = length_of(prm.queue_len, prm.capacity);
    for (var i = gid.x; i < n; i += prm.stride) {
        let path = queue[i];
        if path != TRACE_DEAD32 { depth_first_one(path, prm.shadow != 0u); }
    }
}

// Depth-first on the 8-wide BVH (wavefront.cu trace_depth_first_wide, after
// Ylitie et al.): the hit children of a node become a group (the node's
// first wide child, its hit bits << 24 | the slots the children are
// counted by), and the stack holds groups, one per level at most.
//
// Lanes take rays as they finish (Aila & Laine 2009; wavefront.cu says why:
// rays' walks differ in length by several times): an idle lane takes the
// queue's next entry through the lanes_* helpers of the prelude
// (fetch_subgroup.wgsl or fetch_lane.wgsl), so the dispatch is sized by the
// lanes the GPU holds at once (wgpu.rs `TraceTuning::fetch_groups`), not by
// the queue. Each iteration takes rays or visits one node, and every ray's
// walk ends, so the loop does.
const LANE_IDLE: u32 = 0u;
const LANE_BUSY: u32 = 1u;
const LANE_DONE: u32 = 2u;

@compute @workgroup_size(WG)
fn trace_depth_first_wide() {
    let n = length_of(prm.queue_len, prm.capacity);
    let shadow = prm.shadow != 0u;
    var state = LANE_IDLE;
    var path = 0u;
    var r = Ray(vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
    var inv = vec3<f32>(0.0);
    var oct = 0u;
    var best = KEY_DEAD;
    var stack: array<vec2<u32>, WIDE_STACK>;
    var sp = 0u;
    var group = vec2<u32>(0u, 0u);
    loop {
        if lanes_fetch(state == LANE_IDLE, state == LANE_BUSY) {
            let i = lanes_take(state == LANE_IDLE);
            if state == LANE_IDLE {
                if i >= n {
                    state = LANE_DONE;
                } else {
                    path = queue[i];
                    if path != TRACE_DEAD32 {
                        r = path_ray(path, shadow);
                        if r.tmax > 0.0 && info.counts.w == 0u {  // an empty scene: every ray misses
                            if shadow { wset(W_OCCLUDED, path, 0u); } else { key_set(path, KEY_DEAD); }
                        } else if r.tmax > 0.0 {
                            inv = inv_dir(r.d);
                            oct = octant(r.d);
                            best = KEY_DEAD;
                            sp = 0u;
                            // The root: a group of one wide child, slot oct ^ 7 (its bit, 31).
                            group = vec2<u32>(0u, 0x80000000u);
                            state = LANE_BUSY;
                        }
                    }
                }
            }
        }
        if lanes_all(state == LANE_DONE) { break; }
        if state == LANE_BUSY {
            // One node: its children tested, its leaves intersected.
            let bit = firstLeadingBit(group.y & 0xff000000u);
            group.y &= ~(1u << bit);
            let e = group.x + wide_rank(group.y & 0xffu, bit - 24u, oct);
            if (group.y & 0xff000000u) != 0u && sp < WIDE_STACK {
                stack[sp] = group;
                sp += 1u;
            }
            let h = wide_children(e, r.o, inv, oct, key_dist(best, r.tmax));
            let occluded = wide_leaves(h, oct, r.o, r.d, r.tmax, shadow, &best);
            group = vec2<u32>(h.child_base, (h.nodes << 24u) | h.internal);
            if !occluded && (group.y & 0xff000000u) == 0u && sp > 0u {
                sp -= 1u;
                group = stack[sp];
            }
            if occluded || (group.y & 0xff000000u) == 0u {
                if shadow { wset(W_OCCLUDED, path, u32(occluded)); } else { key_set(path, best); }
                state = LANE_IDLE;
            }
        }
    }
}

// Breadth-first, level 0, one queue entry: the item (root, path) if the
// path's ray enters the root's box, dead otherwise. Resets the per-path result.
fn bf_init_one(path: u32, shadow: bool) -> vec2<u32> {
    if path == TRACE_DEAD32 { return ITEM_DEAD; }
    let r = path_ray(path, shadow);
    var ray = true;
    if shadow {
        ray = r.tmax > 0.0;
        wset(W_OCCLUDED, path, 0u);
    } else {
        key_set(path, KEY_DEAD);
    }
    if ray && info.counts.w > 0u && hit_box(node(0u), r.o, inv_dir(r.d), r.tmax) >= 0.0 { return vec2<u32>(0u, path); }
    return ITEM_DEAD;
}

// Level 0 of the loop: n = the queue's length (`input_len`), written to
// fout[0, n) with the length and live count into the level's words; an n
// past the capacity writes nothing and sets the overflow.
@compute @workgroup_size(WG)
fn trace_bf_init(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // The queue's length, clamped to the queue, not to the frontier: a queue
    // longer than the frontier is an overflow, never a silent cut.
    let n = frontier_n(arrayLength(&queue));
    let fits = frontier_fits(gid.x == 0u, n, 1u, prm.capacity);
    var live = 0u;
    if fits {
        for (var i = gid.x; i < n; i += prm.stride) {
            let item = bf_init_one(queue[i], prm.shadow != 0u);
            fout[i] = item;
            live += u32(item.y != 0xffffffffu);
        }
    }
    frontier_count_live(lid, live);
}

// trace_bf_init through the fused `atomic` site: only the items whose ray
// enters the root are written, compacted; level 0's length word ends as their count.
@compute @workgroup_size(WG)
fn trace_bf_init_atomic(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = site_uniform(lid, frontier_n(arrayLength(&queue)));
    for (var round = wg.x * WG; round < n; round += prm.stride) {
        let i = round + lid;
        var item = ITEM_DEAD;
        if i < n { item = bf_init_one(queue[i], prm.shadow != 0u); }
        let live = item.y != 0xffffffffu;
        let at = frontier_reserve(lid, u32(live), prm.capacity);
        if live && at < prm.capacity { fout[at] = item; }
    }
}

// trace_bf_init through a stable site (`lookback`, `chained`): the items
// whose ray enters the root, compacted in queue order.
fn bf_init_stable(lid: u32, alg: u32) {
    let n = site_uniform(lid, frontier_n(arrayLength(&queue)));
    let tiles = site_tiles(n);
    loop {
        let t = site_draw(lid);
        if t >= tiles { break; }
        let i = t * WG + lid;
        var item = ITEM_DEAD;
        if i < n { item = bf_init_one(queue[i], prm.shadow != 0u); }
        let live = item.y != 0xffffffffu;
        let at = frontier_stable(lid, t, tiles, u32(live), prm.capacity, alg);
        if live && at < prm.capacity { fout[at] = item; }
    }
}
@compute @workgroup_size(WG)
fn trace_bf_init_lookback(@builtin(local_invocation_index) lid: u32) { bf_init_stable(lid, SITE_LOOKBACK); }
@compute @workgroup_size(WG)
fn trace_bf_init_chained(@builtin(local_invocation_index) lid: u32) { bf_init_stable(lid, SITE_CHAINED); }

// A breadth-first item's ray and the distance past which it culls: the
// path's closest hit so far, or the shadow ray's length. `ok` false when
// another item of the path has already found the shadow ray's blocker.
struct BfRay {
    ok: bool,
    o: vec3<f32>,
    d: vec3<f32>,
    limit: f32,
}
fn bf_ray(path: u32, shadow: bool) -> BfRay {
    let o = pget(F_ORIGIN, path).xyz;
    if shadow {
        if wget(W_OCCLUDED, path) != 0u { return BfRay(false, o, vec3<f32>(0.0), 0.0); }
        let sd = pget(F_SHADOW_DIR, path);
        return BfRay(true, o, sd.xyz, sd.w);
    }
    // The high word alone bounds the hit (a locked key reads as no bound).
    return BfRay(true, o, pget(F_DIR, path).xyz, key_dist(vec2<u32>(0u, atomicLoad(&pw[key_at(path) + 1u])), trace_inf()));
}

// Breadth-first, one frontier item into its `fan` slots: descends `descend`
// BVH levels below the item's node, nearer child first, culling boxes the
// ray enters only past the path's closest hit so far. A leaf met on the way
// is intersected at once and merges its hit into the path's key; an internal
// node reached at depth `descend` goes to the slot named by its left/right
// turns (first turn highest). Returns the keep mask: bit j set where slots[j]
// holds a live item (the other slots are not written).
fn bf_expand_one(item: vec2<u32>, shadow: bool, descend: u32, slots: ptr<function, array<vec2<u32>, MAX_FAN>>) -> u32 {
    if item.y == 0xffffffffu { return 0u; }
    let path = item.y;
    let r = bf_ray(path, shadow);
    if !r.ok { return 0u; }
    let inv = inv_dir(r.d);
    var best = KEY_DEAD;
    var keep = 0u;
    // (first child or triangle, triangle count (0: internal), depth below the item << 8 | turns taken)
    var st_first: array<u32, DESCEND_STACK>;
    var st_count: array<u32, DESCEND_STACK>;
    var st_at: array<u32, DESCEND_STACK>;
    let named = item.x;
    if (named & TRACE_PAIR) != 0u {
        st_first[0] = named & ~TRACE_PAIR;
        st_count[0] = 0u;
    } else {
        let root = node(named);
        st_first[0] = root.first;
        st_count[0] = root.count;
    }
    st_at[0] = 0u;
    var sp = 1u;
    // At most 2^(descend + 1) entries are pushed in all.
    while sp > 0u {
        sp -= 1u;
        let first = st_first[sp];
        let count = st_count[sp];
        let depth = st_at[sp] >> 8u;
        let turns = st_at[sp] & 0xffu;
        let lim = key_dist(best, r.limit);
        if count > 0u {
            if leaf_range(info.at_a.y, first, count, r.o, r.d, lim, shadow, &best) {
                wset(W_OCCLUDED, path, 1u);
                return 0u;
            }
            continue;
        }
        if depth == descend {
            (*slots)[turns] = vec2<u32>(TRACE_PAIR | first, path);
            keep |= 1u << turns;
            continue;
        }
        let c0 = node(first);
        let c1 = node(first + 1u);
        let t0 = hit_box(c0, r.o, inv, lim);
        let t1 = hit_box(c1, r.o, inv, lim);
        // Push the farther child first so the nearer is taken next.
        let h0 = t0 >= 0.0;
        let h1 = t1 >= 0.0;
        let near0 = t0 <= t1;
        let d = (depth + 1u) << 8u;
        if h0 && h1 {
            let far = select(0u, 1u, near0);
            st_first[sp] = select(c0.first, c1.first, far == 1u);
            st_count[sp] = select(c0.count, c1.count, far == 1u);
            st_at[sp] = d | (2u * turns + far);
            st_first[sp + 1u] = select(c1.first, c0.first, far == 1u);
            st_count[sp + 1u] = select(c1.count, c0.count, far == 1u);
            st_at[sp + 1u] = d | (2u * turns + (1u - far));
            sp += 2u;
        } else if h0 || h1 {
            let c = select(1u, 0u, h0);
            st_first[sp] = select(c1.first, c0.first, h0);
            st_count[sp] = select(c1.count, c0.count, h0);
            st_at[sp] = d | (2u * turns + c);
            sp += 1u;
        }
    }
    if !shadow && best.y != 0xffffffffu { hit_merge(path, best); }
    return keep;
}

// One level of the loop: n items (frontier_n) each write 2^descend slots of
// fout, dead ones included; nothing is written when they would not fit the capacity.
@compute @workgroup_size(WG)
fn trace_bf_expand(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = frontier_n(prm.capacity);
    let fan = 1u << prm.descend;
    let fits = frontier_fits(gid.x == 0u, n, fan, prm.capacity);
    var live = 0u;
    if fits {
        for (var i = gid.x; i < n; i += prm.stride) {
            var slots: array<vec2<u32>, MAX_FAN>;
            let keep = bf_expand_one(fin[i], prm.shadow != 0u, prm.descend, &slots);
            for (var j = 0u; j < fan; j++) {
                fout[i * fan + j] = select(ITEM_DEAD, slots[j], (keep & (1u << j)) != 0u);
            }
            live += countOneBits(keep);
        }
    }
    frontier_count_live(lid, live);
}

// trace_bf_expand through the fused `atomic` site: only the live slots are
// written, compacted, and the level's length word ends as their count.
@compute @workgroup_size(WG)
fn trace_bf_expand_atomic(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = site_uniform(lid, frontier_n(prm.capacity));
    for (var round = wg.x * WG; round < n; round += prm.stride) {
        let i = round + lid;
        var slots: array<vec2<u32>, MAX_FAN>;
        var keep = 0u;
        if i < n { keep = bf_expand_one(fin[i], prm.shadow != 0u, prm.descend, &slots); }
        var at = frontier_reserve(lid, countOneBits(keep), prm.capacity);
        // At most 32 bits, one a pass.
        for (var bits = keep; bits != 0u; bits &= bits - 1u) {
            if at < prm.capacity { fout[at] = slots[firstTrailingBit(bits)]; }
            at += 1u;
        }
    }
}

// trace_bf_expand through a stable site: the live slots, compacted in
// (item, slot) order, as the separate select of trace_bf_expand's output.
fn bf_expand_stable(lid: u32, alg: u32) {
    let n = site_uniform(lid, frontier_n(prm.capacity));
    let tiles = site_tiles(n);
    loop {
        let t = site_draw(lid);
        if t >= tiles { break; }
        let i = t * WG + lid;
        var slots: array<vec2<u32>, MAX_FAN>;
        var keep = 0u;
        if i < n { keep = bf_expand_one(fin[i], prm.shadow != 0u, prm.descend, &slots); }
        var at = frontier_stable(lid, t, tiles, countOneBits(keep), prm.capacity, alg);
        for (var bits = keep; bits != 0u; bits &= bits - 1u) {
            if at < prm.capacity { fout[at] = slots[firstTrailingBit(bits)]; }
            at += 1u;
        }
    }
}
@compute @workgroup_size(WG)
fn trace_bf_expand_lookback(@builtin(local_invocation_index) lid: u32) { bf_expand_stable(lid, SITE_LOOKBACK); }
@compute @workgroup_size(WG)
fn trace_bf_expand_chained(@builtin(local_invocation_index) lid: u32) { bf_expand_stable(lid, SITE_CHAINED); }

// Breadth-first on the 8-wide BVH, one item (wide node, path): tests the
// node's children, intersects its hit leaves at once (a shadow ray's blocker
// sets the occlusion and ends the item) and writes the hit wide children to
// slots[0, live), nearest first; returns `live` (the other slots are not written).
fn bf_expand_wide_one(item: vec2<u32>, shadow: bool, slots: ptr<function, array<vec2<u32>, 8>>) -> u32 {
    if item.y == 0xffffffffu { return 0u; }
    let path = item.y;
    let r = bf_ray(path, shadow);
    if !r.ok { return 0u; }
    let oct = octant(r.d);
    var best = KEY_DEAD;
    let h = wide_children(item.x, r.o, inv_dir(r.d), oct, r.limit);
    if wide_leaves(h, oct, r.o, r.d, r.limit, shadow, &best) {
        wset(W_OCCLUDED, path, 1u);
        return 0u;
    }
    var bits = h.nodes;
    for (var j = 0u; j < 8u && bits != 0u; j++) {
        let bit = firstLeadingBit(bits);
        bits &= ~(1u << bit);
        (*slots)[j] = vec2<u32>(h.child_base + wide_rank(h.internal, bit, oct), path);
    }
    if !shadow && best.y != 0xffffffffu { hit_merge(path, best); }
    return countOneBits(h.nodes);
}

@compute @workgroup_size(WG)
fn trace_bf_expand_wide(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = frontier_n(prm.capacity);
    let fits = frontier_fits(gid.x == 0u, n, 8u, prm.capacity);
    var live = 0u;
    if fits {
        for (var i = gid.x; i < n; i += prm.stride) {
            var slots: array<vec2<u32>, 8>;
            let kept = bf_expand_wide_one(fin[i], prm.shadow != 0u, &slots);
            for (var j = 0u; j < 8u; j++) { fout[i * 8u + j] = select(ITEM_DEAD, slots[j], j < kept); }
            live += kept;
        }
    }
    frontier_count_live(lid, live);
}

// trace_bf_expand_wide through the fused `atomic` site (trace_bf_expand_atomic's twin).
@compute @workgroup_size(WG)
fn trace_bf_expand_wide_atomic(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = site_uniform(lid, frontier_n(prm.capacity));
    for (var round = wg.x * WG; round < n; round += prm.stride) {
        let i = round + lid;
        var slots: array<vec2<u32>, 8>;
        var kept = 0u;
        if i < n { kept = bf_expand_wide_one(fin[i], prm.shadow != 0u, &slots); }
        let at = frontier_reserve(lid, kept, prm.capacity);
        for (var j = 0u; j < kept; j++) {
            if at + j < prm.capacity { fout[at + j] = slots[j]; }
        }
    }
}

// trace_bf_expand_wide through a stable site (bf_expand_stable's twin).
fn bf_expand_wide_stable(lid: u32, alg: u32) {
    let n = site_uniform(lid, frontier_n(prm.capacity));
    let tiles = site_tiles(n);
    loop {
        let t = site_draw(lid);
        if t >= tiles { break; }
        let i = t * WG + lid;
        var slots: array<vec2<u32>, 8>;
        var kept = 0u;
        if i < n { kept = bf_expand_wide_one(fin[i], prm.shadow != 0u, &slots); }
        let at = frontier_stable(lid, t, tiles, kept, prm.capacity, alg);
        for (var j = 0u; j < kept; j++) {
            if at + j < prm.capacity { fout[at + j] = slots[j]; }
        }
    }
}
@compute @workgroup_size(WG)
fn trace_bf_expand_wide_lookback(@builtin(local_invocation_index) lid: u32) {
    bf_expand_wide_stable(lid, SITE_LOOKBACK);
}
@compute @workgroup_size(WG)
fn trace_bf_expand_wide_chained(@builtin(local_invocation_index) lid: u32) {
    bf_expand_wide_stable(lid, SITE_CHAINED);
}

// What shading one path decided.
struct Shaded {
    alive: bool,
    shadow: bool,
}

// One vertex of one path (wavefront.cu `shade_one`): the emission found
// (weighted by the estimator), then, below max_bounces, a next-event shadow
// ray on diffuse and glossy surfaces, the scattered ray and Russian roulette.
fn shade_one(path: u32, sample: u32, bounce: u32, max_bounces: u32, estimator: u32, seed: u32, base: u32) -> Shaded {
    // Random numbers follow the pixel, not the path slot, so shards sum to the whole image.
    let pixel = base + path;
    var out = Shaded(false, false);
    var T = pget(F_THROUGHPUT, path).xyz;
    var L = pget(F_RADIANCE, path).xyz;
    let key = key_get(path);
    pset(F_SHADOW_DIR, path, vec4<f32>(0.0));
    if key.y == 0xffffffffu {  // escaped: the environment is never sampled by next-event estimation
        pset(F_RADIANCE, path, vec4<f32>(L + T * info.env.xyz, 0.0));
        return out;
    }
    let d4 = pget(F_DIR, path);
    let o = pget(F_ORIGIN, path).xyz;
    let d = d4.xyz;
    let pdf_bsdf = d4.w;
    let k = key.x;
    let tr = tri(k);
    let m = material(tr.material);
    let hit = hit_tri(tr, o, d);  // again, for the barycentrics
    let u = hit.u;
    let v = hit.v;
    let t = key_dist(key, 0.0);
    let x = o + d * t;
    var ng = normalize(cross(tr.e1, tr.e2));
    let nv = info.at_w.x + 9u * k;
    var ns = normalize(sw3(nv) * (1.0 - u - v) + sw3(nv + 3u) * u + sw3(nv + 6u) * v);
    // Emitters emit on the side e1 x e2 points to (counter-clockwise winding) only.
    let cos_light = -dot(ng, d);
    let front = cos_light > 0.0;
    if !front {
        ng = -ng;
        ns = -ns;
    }
    if dot(ns, d) >= 0.0 { ns = ng; }  // a shading normal facing away would leak light
    if m.emissive != 0u && front {
        let le = m.emission;
        let w = emission_weight(le, wget(W_FLAGS, path), pdf_bsdf, t, cos_light, estimator);
        L = L + T * le * w;
    }
    if bounce >= max_bounces {
        pset(F_RADIANCE, path, vec4<f32>(L, 0.0));
        return out;
    }

    let albedo = albedo_at(m, k, u, v);
    let wo = -d;
    let delta = m.kind == MAT_MIRROR || m.kind == MAT_GLASS;
    if !delta && estimator != ESTIMATOR_BSDF && info.counts.x > 0u {
        // next-event estimation: one point on one emitter, by power
        let ls = sample_light(rnd(pixel, sample, bounce, 0u, seed), rnd(pixel, sample, bounce, 1u, seed),
                              rnd(pixel, sample, bounce, 2u, seed));
        let xo = x + ng * info.env.w;
        var w = ls.p - xo;
        let dist2 = dot(w, w);
        let dist = sqrt(dist2);
        w = w * (1.0 / dist);
        let cx = dot(ns, w);
        let cl = -dot(ls.nl, w);  // cl > 0: the shading point sees the emitter's lit side
        if cx > 0.0 && cl > 0.0 && dot(ng, w) > 0.0 {
            let pdf_light = light_pdf(ls.le) * dist2 / cl;
            let ev = bsdf_eval(m, albedo, ns, wo, w);
            var mis = 1.0;
            if estimator == ESTIMATOR_MIS { mis = power_heuristic(pdf_light, ev.pdf); }
            pset(F_SHADOW_DIR, path, vec4<f32>(w, dist * (1.0 - 1e-4)));
            pset(F_SHADOW_RADIANCE, path, vec4<f32>(T * ev.f * ls.le * (mis / pdf_light), 0.0));
            out.shadow = true;
        }
    }
    var wi: vec3<f32>;
    var weight = albedo;  // f * cos / pdf of the sampled direction
    var pdf = 0.0;  // its solid-angle pdf; 0 for a delta bounce
    var above = true;  // the new ray leaves on the side the ray came from
    if m.kind == MAT_DIFFUSE {
        wi = cosine_around(ns, rnd(pixel, sample, bounce, 3u, seed), rnd(pixel, sample, bounce, 4u, seed));
        pdf = max(dot(ns, wi), 0.0) * TRACE_PI_INV;
    } else if m.kind == MAT_GLOSSY {
        let s = glossy_sample(m, ns, wo, rnd(pixel, sample, bounce, 3u, seed), rnd(pixel, sample, bounce, 4u, seed));
        wi = s.wi;
        weight = s.weight;
        pdf = s.pdf;
    } else if m.kind == MAT_MIRROR {
        wi = reflect_about(d, ns);
    } else {  // glass: reflect or refract by Fresnel (Schlick)
        let eta = select(m.ior, 1.0 / m.ior, front);
        let cosi = -dot(d, ns);
        let sin2t = eta * eta * (1.0 - cosi * cosi);
        var r0 = (1.0 - m.ior) / (1.0 + m.ior);
        r0 = r0 * r0;
        let c = 1.0 - cosi;
        let fresnel = r0 + (1.0 - r0) * c * c * c * c * c;
        if sin2t >= 1.0 || rnd(pixel, sample, bounce, 5u, seed) < fresnel {
            wi = reflect_about(d, ns);
        } else {
            wi = normalize(d * eta + ns * (eta * cosi - sqrt(1.0 - sin2t)));
            above = false;
        }
    }
    T = T * weight;
    var alive = max3(weight) > 0.0 && select(dot(wi, ng) < 0.0, dot(wi, ng) > 0.0, above);
    if alive && bounce >= 3u {  // Russian roulette
        let q = min(max3(T), 0.95);
        if rnd(pixel, sample, bounce, 6u, seed) >= q {
            alive = false;
        } else {
            T = T * (1.0 / q);
        }
    }
    pset(F_RADIANCE, path, vec4<f32>(L, 0.0));
    pset(F_THROUGHPUT, path, vec4<f32>(T, 0.0));
    pset(F_ORIGIN, path, vec4<f32>(x + ng * select(-info.env.w, info.env.w, above), 0.0));
    pset(F_DIR, path, vec4<f32>(wi, pdf));
    wset(W_FLAGS, path, select(0u, PATH_SPECULAR, delta));
    out.alive = alive;
    return out;
}

// Shading of every queued path: next[i] keeps the path id while the path
// lives, TRACE_DEAD32 once it escaped, was absorbed or was terminated.
// words[alive] counts the paths still alive, words[shadows] the shadow rays
// cast (one 64-bit add per workgroup and counter).
@compute @workgroup_size(WG)
fn trace_shade(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = length_of(prm.queue_len, prm.capacity);
    var lives = 0u;
    var casts = 0u;
    for (var i = gid.x; i < n; i += prm.stride) {
        let path = queue[i];
        var r = Shaded(false, false);
        if path != TRACE_DEAD32 {
            r = shade_one(path, prm.sample, prm.bounce, info.dims.w, prm.estimator, info.dims.z, prm.base);
        }
        next[i] = select(TRACE_DEAD32, path, r.alive);
        lives += u32(r.alive);
        casts += u32(r.shadow);
    }
    if lid == 0u {
        atomicStore(&wg_alive, 0u);
        atomicStore(&wg_shadows, 0u);
    }
    workgroupBarrier();
    if lives != 0u { atomicAdd(&wg_alive, lives); }
    if casts != 0u { atomicAdd(&wg_shadows, casts); }
    workgroupBarrier();
    if lid == 0u {
        let a = atomicLoad(&wg_alive);
        let s = atomicLoad(&wg_shadows);
        if a != 0u { word_add(prm.alive, a); }
        if s != 0u { word_add(prm.shadows, s); }
    }
}

// Queue entry i of n, or a dead one past them.
fn queued_path(i: u32, n: u32) -> u32 {
    if i < n { return queue[i]; }
    return TRACE_DEAD32;
}

// A queued path shaded; a dead entry neither lives nor casts.
fn shade_queued(path: u32) -> Shaded {
    if path == TRACE_DEAD32 { return Shaded(false, false); }
    return shade_one(path, prm.sample, prm.bounce, info.dims.w, prm.estimator, info.dims.z, prm.base);
}

// The workgroup's shadow rays cast, one 64-bit add to words[shadows] (every
// invocation calls it).
fn add_shadows(lid: u32, casts: u32) {
    if lid == 0u { atomicStore(&wg_shadows, 0u); }
    workgroupBarrier();
    if casts != 0u { atomicAdd(&wg_shadows, casts); }
    workgroupBarrier();
    if lid == 0u {
        let c = atomicLoad(&wg_shadows);
        if c != 0u { word_add(prm.shadows, c); }
    }
}

// trace_shade through the fused `atomic` site: next[0, total) holds the
// paths still alive, compacted, and words[next_len] their count.
@compute @workgroup_size(WG)
fn trace_shade_atomic(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = site_uniform(lid, length_of(prm.queue_len, prm.capacity));
    var casts = 0u;
    for (var round = wg.x * WG; round < n; round += prm.stride) {
        let i = round + lid;
        let path = queued_path(i, n);
        let r = shade_queued(path);
        casts += u32(r.shadow);
        let s = site_reserve(lid, u32(r.alive), prm.next_len);
        // Every path kept fits: at most n, within the capacity.
        if r.alive && s.first < prm.capacity { next[s.first] = path; }
        if lid == 0u && s.kept != 0u { word_add(prm.alive, s.kept); }
    }
    add_shadows(lid, casts);
}

// trace_shade through a stable site: next[0, total) holds the paths still
// alive in queue order, and words[next_len] their count.
fn shade_stable(lid: u32, alg: u32) {
    let n = site_uniform(lid, length_of(prm.queue_len, prm.capacity));
    let tiles = site_tiles(n);
    var casts = 0u;
    loop {
        let t = site_draw(lid);
        if t >= tiles { break; }
        let i = t * WG + lid;
        let path = queued_path(i, n);
        let r = shade_queued(path);
        casts += u32(r.shadow);
        let s = site_stable(lid, t, u32(r.alive), alg);
        if r.alive && s.first < prm.capacity { next[s.first] = path; }
        if lid == 0u {
            if s.kept != 0u { word_add(prm.alive, s.kept); }
            if t == tiles - 1u { word_set(prm.next_len, vec2<u32>(s.end, 0u)); }
        }
    }
    add_shadows(lid, casts);
}
@compute @workgroup_size(WG)
fn trace_shade_lookback(@builtin(local_invocation_index) lid: u32) { shade_stable(lid, SITE_LOOKBACK); }
@compute @workgroup_size(WG)
fn trace_shade_chained(@builtin(local_invocation_index) lid: u32) { shade_stable(lid, SITE_CHAINED); }

// Next-event estimation, last step: unoccluded shadow rays add their light.
@compute @workgroup_size(WG)
fn trace_nee(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = length_of(prm.queue_len, prm.capacity);
    for (var i = gid.x; i < n; i += prm.stride) {
        let path = queue[i];
        if path == TRACE_DEAD32 || pget(F_SHADOW_DIR, path).w <= 0.0 || wget(W_OCCLUDED, path) != 0u { continue; }
        let L = pget(F_RADIANCE, path);
        let add = pget(F_SHADOW_RADIANCE, path);
        pset(F_RADIANCE, path, vec4<f32>(L.xyz + add.xyz, 0.0));
    }
}

// The sample's radiance into the per-pixel sum, path i into pixel base + i,
// unless the frame failed (a frontier overflow: the host redoes the frame).
@compute @workgroup_size(WG)
fn trace_accumulate(@builtin(global_invocation_id) gid: vec3<u32>) {
    if !frontier_ok() { return; }
    for (var i = gid.x; i < prm.count; i += prm.stride) {
        let s = sums[prm.base + i];
        let L = pget(F_RADIANCE, i);
        sums[prm.base + i] = vec4<f32>(s.xyz + L.xyz, s.w + 1.0);
    }
}
