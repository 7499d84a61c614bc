// The collision demo's stages on wgpu: the WGSL twin of kernels/collide/collide.cu
// (src/collide/mod.rs runs the stages in order; src/collide/cpu.rs is the
// CPU twin of each entry point, and src/collide/wgpu.rs dispatches them). All
// arithmetic is common.wgsl's, narrow.wgsl's and solver.wgsl's.
//
// Over 600 lines, kept whole: one entry point per stage of collide.cu, in its
// order, all over one set of bindings; the arithmetic lives in the other files.
//
// Nodes: internal 0..n-1 (root 0), leaf n-1+k for the k-th sorted code. A
// frontier slot holds pack(node, node) or (DEAD, DEAD). Every count of a frame
// is a u64 word of `words` (frontier.wgsl): the pair walk's lengths per level,
// the candidates appended since pairs_init (may exceed the list's capacity;
// word P.cand_word), the contacts (P.contact_word). The host reads them after
// the frame: each dispatch covers a capacity and every invocation reads the
// count from the words, and the stages that move bodies do nothing once the
// frame's status is set (the host then redoes the frame from the same bodies).
//
// Each entry point binds only what it uses (the pipelines' layouts are
// derived from the shader), at most seven storage buffers. The dispatches
// over a length known only on the device (a level's pairs, the candidates,
// the contacts) are indirect: a one-invocation collide_groups_* entry point
// turns the length word into workgroup counts first, so that they cover the
// live length rather than the capacity.

// Invocations per workgroup (src/collide/wgpu.rs `CollideTuning::workgroup`).
override WG: u32 = 256u;

// One dispatch's parameters: keep in sync with src/collide/wgpu/params.rs `Params`.
struct Params {
    // layout.rs `World` as seven vec4 (uniform arrays step by 16 bytes).
    world: array<vec4<f32>, 7>,
    n: u32,
    cap: u32,
    cand_cap: u32,
    contact_cap: u32,
    len_in: u32,
    live_in: u32,
    len_out: u32,
    live_out: u32,
    last: u32,
    write_root: u32,
    prev_count: u32,
    cand_word: u32,
    contact_word: u32,
    table_cap: u32,
    // Always 0: common.wgsl `sqrt_rn`.
    zero: u32,
    // 1 in the first of the restitution passes (collide_restitute), and in
    // a colouring round's first step (collide_colour_pick).
    first: u32,
    // The colouring's colours (collide_colour_*), or the colour a coloured
    // pass solves (collide_solve_colour).
    colour: u32,
    // 1: collide_apply leaves a body with no overflow point (`counts`) as it is (a Jacobi pass).
    split_only: u32,
    // 1: the pass is the relax pass of soft contacts (collide_solve_colour, collide_solve).
    relax: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(2) var<storage, read_write> keys: array<u32>;
@group(0) @binding(3) var<storage, read_write> ids: array<u32>;
@group(0) @binding(4) var<storage, read_write> nodes: array<Node>;
@group(0) @binding(5) var<storage, read_write> parent: array<u32>;
@group(0) @binding(6) var<storage, read_write> words: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read> frontier_in: array<vec2<u32>>;
@group(0) @binding(8) var<storage, read_write> frontier_out: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read_write> candidates: array<vec2<u32>>;
@group(0) @binding(10) var<storage, read_write> contacts: array<Contact>;
// Binding 11, the solver's per-body sums (`acc`, add_sum, load_sum), comes in
// the prelude: sums32.wgsl or, with native 64-bit atomics, sums64.wgsl.
@group(0) @binding(12) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read_write> previous: array<Contact>;
@group(0) @binding(14) var<storage, read_write> table: array<atomic<u32>>;
// The nodes as 8 i32 words each, for refit's atomics (min xyz, left, max xyz, right).
@group(0) @binding(15) var<storage, read_write> bounds: array<atomic<i32>>;
// Indirect dispatch arguments (x, y, z, unused) per slot, written by the collide_groups_* entry points.
@group(0) @binding(16) var<storage, read_write> args: array<u32>;
// The stable sites' tile counter and states (compaction/site.wgsl), cleared
// by the host before each expand that uses them.
@group(0) @binding(17) var<storage, read_write> site_states: array<atomic<u32>>;
// The colouring (colour.wgsl): each contact's colour; per body its pick of a
// round (rank, other side) and its colours as bits; the coloured manifolds by
// colour as (first point, end); the colour table (counts, starts, cursors).
@group(0) @binding(18) var<storage, read_write> colour: array<u32>;
@group(0) @binding(19) var<storage, read_write> picks: array<atomic<u32>>;
@group(0) @binding(20) var<storage, read_write> used: array<u32>;
@group(0) @binding(21) var<storage, read_write> order: array<vec2<u32>>;
@group(0) @binding(22) var<storage, read_write> colour_table: array<atomic<u32>>;
// Morton order (collide_reorder): the bodies in their new order, and each body's new place.
@group(0) @binding(23) var<storage, read_write> moved: array<Body>;
@group(0) @binding(24) var<storage, read_write> places: array<u32>;

fn world() -> W {
    let p = P.world;
    return W(p[0].xyz, p[0].w, p[1].xyz, p[1].w, p[2].xyz, p[2].w, p[3].xyz, p[3].w, p[4].x, p[4].y, p[4].z, p[4].w,
             p[5].x, p[5].y, p[5].z, p[5].w, p[6].x, p[6].w);
}

// The invocation's index over the dispatch (workgroups spread over x and y past 65,535).
fn index(wid: vec3<u32>, nw: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nw.x) * WG + lid;
}

fn body(i: u32) -> B {
    return unpack_body(bodies[i]);
}

// Writes back what the stages change (the shape, mass, size and padding stay as they were).
fn store_body(i: u32, b: B) {
    bodies[i].pos = a3(b.pos);
    bodies[i].vel = a3(b.vel);
    bodies[i].rot = array<f32, 4>(b.rot.x, b.rot.y, b.rot.z, b.rot.w);
    bodies[i].omega = a3(b.omega);
}

// codes(): the Morton code of each body's centre, ids = 0..n.
@compute @workgroup_size(WG)
fn collide_codes(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i >= P.n) {
        return;
    }
    keys[i] = morton(v3(bodies[i].pos), world());
    ids[i] = i;
}

// reorder(), first step: the bodies in the sorted codes' order into `moved`
// (body ids[i] to place i), each body's new place into `places`, and ids =
// 0..n (each invocation reads and writes only its own id).
@compute @workgroup_size(WG)
fn collide_reorder(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i >= P.n) {
        return;
    }
    let id = ids[i];
    moved[i] = bodies[id];
    places[id] = i;
    ids[i] = i;
}

// reorder(), second step: the moved bodies back over the bodies.
@compute @workgroup_size(WG)
fn collide_reorder_back(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i < P.n) {
        bodies[i] = moved[i];
    }
}

// build(): invocation k makes leaf n-1+k (the body ids[k] and its box) and,
// for k < n-1, internal node k (Karras 2012: its children, and their parent
// links). Refit writes the internal boxes.
@compute @workgroup_size(WG)
fn collide_build(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let k = index(wid, nw, lid);
    let n = P.n;
    if (k >= n) {
        return;
    }
    let id = ids[k];
    let leaf_box = aabb(body(id), world());
    nodes[n - 1u + k] = Node(a3(leaf_box[0]), id, a3(leaf_box[1]), LEAF);
    if (k == 0u) {
        parent[0] = NONE; // the root: node 0, internal, or the only leaf when n == 1
    }
    if (k + 1u < n) {
        let c = karras_node(i32(n), i32(k));
        nodes[k] = Node(array<f32, 3>(0.0, 0.0, 0.0), c.x, array<f32, 3>(0.0, 0.0, 0.0), c.y);
        parent[c.x] = k;
        parent[c.y] = k;
    }
}

// A float's bits as an i32 whose order is the float's (an involution: it
// also turns such a key back into the float's bits).
fn order_key(bits: i32) -> i32 {
    return bits ^ ((bits >> 31u) & 0x7fffffff);
}

// refit(), first step: every internal box empty (min +inf, max -inf as keys).
@compute @workgroup_size(WG)
fn collide_refit_init(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i + 1u >= P.n) {
        return;
    }
    for (var c = 0u; c < 3u; c++) {
        atomicStore(&bounds[8u * i + c], 0x7fffffff);
        atomicStore(&bounds[8u * i + 4u + c], i32(0x80000000u));
    }
}

// refit(), second step: one invocation per leaf walks up, folding the leaf's
// box into each ancestor with atomic min / max on order keys, and stops at
// the first ancestor its box does not widen.
//
// Why not CUDA's refit (the second arrival at a node unions its children's
// boxes): that needs the first arrival's box store to be visible to the
// second once the flag says so, and WGSL's atomics are relaxed, with no
// fence across workgroups to order a plain store before them. Here every box
// word is only ever changed by atomic min / max, which are order-free, and
// the early stop is safe: an invocation stops at node X only when each of its
// six values was already matched at X by an earlier update, whose own
// invocation carried it further up (or stopped on a still earlier one), so
// every ancestor ends at the exact union. The depth of a tree of 30-bit codes
// with the index tie-break is at most 64, so the loop's bound never cuts.
@compute @workgroup_size(WG)
fn collide_refit(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let k = index(wid, nw, lid);
    let n = P.n;
    if (k >= n) {
        return;
    }
    let leaf = n - 1u + k;
    var lo: array<i32, 3>;
    var hi: array<i32, 3>;
    for (var c = 0u; c < 3u; c++) {
        lo[c] = order_key(atomicLoad(&bounds[8u * leaf + c]));
        hi[c] = order_key(atomicLoad(&bounds[8u * leaf + 4u + c]));
    }
    var node = parent[leaf];
    for (var depth = 0u; depth < 128u && node != NONE; depth++) {
        var widened = false;
        for (var c = 0u; c < 3u; c++) {
            // Both atomics run whatever `widened` already is (no short circuit).
            let was_lo = atomicMin(&bounds[8u * node + c], lo[c]);
            let was_hi = atomicMax(&bounds[8u * node + 4u + c], hi[c]);
            widened = widened || was_lo > lo[c] || was_hi < hi[c];
        }
        if (!widened) {
            break;
        }
        node = parent[node];
    }
}

// refit(), last step: the internal boxes' keys back into floats.
@compute @workgroup_size(WG)
fn collide_refit_finish(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i + 1u >= P.n) {
        return;
    }
    for (var c = 0u; c < 3u; c++) {
        atomicStore(&bounds[8u * i + c], order_key(atomicLoad(&bounds[8u * i + c])));
        atomicStore(&bounds[8u * i + 4u + c], order_key(atomicLoad(&bounds[8u * i + 4u + c])));
    }
}

// Indirect arguments in slot `slot` for one invocation per item of `items`
// (at least `least` workgroups), spread over x and y as index() reads them:
// the dispatches that follow cover the live length, not the capacity.
fn write_groups(slot: u32, items: u32, least: u32) {
    let groups = max(items / WG + select(0u, 1u, items % WG != 0u), least);
    let x = min(groups, 65535u);
    var y = 0u;
    if (x > 0u) {
        y = (groups + x - 1u) / x;
    }
    args[4u * slot] = x;
    args[4u * slot + 1u] = y;
    args[4u * slot + 2u] = 1u;
}

// expand()'s workgroups: one invocation per input pair that fits (never fewer
// than one workgroup: its first invocation writes the level's length word).
@compute @workgroup_size(1)
fn collide_groups_expand() {
    write_groups(ARGS_EXPAND, min(frontier_n(), P.cap / 4u), 1u);
}

// collide_expand_atomic's workgroups: one invocation per input pair, whatever
// their children (a kept total past the capacity is an overflow).
@compute @workgroup_size(1)
fn collide_groups_expand_fused() {
    write_groups(ARGS_EXPAND, min(frontier_n(), P.cap), 1u);
}

// narrow()'s workgroups: one invocation per stored candidate.
@compute @workgroup_size(1)
fn collide_groups_candidates() {
    var count = 0u;
    if (frontier_ok()) {
        count = count_below(P.cand_word, P.cand_cap);
    }
    write_groups(ARGS_CANDIDATES, count, 0u);
}

// The solver's workgroups over the contacts (solve() and every substep()): one
// invocation per stored contact.
@compute @workgroup_size(1)
fn collide_groups_contacts() {
    var count = 0u;
    if (frontier_ok()) {
        count = count_below(P.contact_word, P.contact_cap);
    }
    write_groups(ARGS_CONTACTS, count, 0u);
}

// The slots of `args` (src/collide/wgpu/engine.rs ARGS_*); colour k's
// manifolds take slot ARGS_COLOURS + k (collide_colour_scan).
const ARGS_EXPAND: u32 = 0u;
const ARGS_CANDIDATES: u32 = 1u;
const ARGS_CONTACTS: u32 = 2u;
const ARGS_COLOURS: u32 = 3u;

// pairs_init(): level 0 of the walk is [(root, root)], length and live count
// 1 (0 under two bodies). The frame's clear emptied the candidate count.
@compute @workgroup_size(1)
fn collide_pairs_init() {
    if (P.write_root != 0u) {
        frontier_out[0] = pack(0u, 0u);
    }
    store64(P.len_out, vec2<u32>(P.write_root, 0u));
    store64(P.live_out, vec2<u32>(P.write_root, 0u));
}

// One box test of expand: dead when the boxes miss; a leaf-leaf pair goes to
// the invocation's candidates (bodies in increasing order) and leaves its
// slot dead; any other overlapping pair stays in the frontier.
fn test(x: u32, nx: Node, y: u32, ny: Node, cand: ptr<function, array<vec2<u32>, 4>>, nc: ptr<function, u32>)
    -> vec2<u32> {
    if (!overlap(nx, ny)) {
        return vec2<u32>(DEAD, DEAD);
    }
    if (nx.right == LEAF && ny.right == LEAF) {
        let bx = nx.left;
        let by = ny.left;
        (*cand)[*nc] = pack(min(bx, by), max(bx, by));
        *nc += 1u;
        return vec2<u32>(DEAD, DEAD);
    }
    return pack(x, y);
}

// One input pair `p` of expand(): its child pairs into `slot` (the CPU
// twin's slot rules, src/collide/mod.rs `Engine::expand`; dead where none),
// the candidates it finds into `cand` (`nc` of them).
fn expand_pair(p: vec2<u32>, slot: ptr<function, array<vec2<u32>, 4>>, cand: ptr<function, array<vec2<u32>, 4>>,
               nc: ptr<function, u32>) {
    if (is_dead(p)) {
        return;
    }
    let a = p.y;
    let b = p.x;
    let na = nodes[a];
    if (a == b) {
        // An internal node against itself: each internal child against
        // itself, and the two children against each other.
        let l = na.left;
        let r = na.right;
        let nl = nodes[l];
        let nr = nodes[r];
        if (nl.right != LEAF) {
            (*slot)[0] = pack(l, l);
        }
        if (nr.right != LEAF) {
            (*slot)[1] = pack(r, r);
        }
        (*slot)[2] = test(l, nl, r, nr, cand, nc);
    } else {
        // Each node's children if internal (the CPU twin's `children`), else the leaf itself.
        let nb = nodes[b];
        var ca = array<u32, 2>(a, a);
        var cb = array<u32, 2>(b, b);
        var nca = array<Node, 2>(na, na);
        var ncb = array<Node, 2>(nb, nb);
        var ka = 1u;
        var kb = 1u;
        if (na.right != LEAF) {
            ca = array<u32, 2>(na.left, na.right);
            nca = array<Node, 2>(nodes[na.left], nodes[na.right]);
            ka = 2u;
        }
        if (nb.right != LEAF) {
            cb = array<u32, 2>(nb.left, nb.right);
            ncb = array<Node, 2>(nodes[nb.left], nodes[nb.right]);
            kb = 2u;
        }
        for (var k = 0u; k < 4u; k++) {
            let x = k / 2u;
            let y = k % 2u;
            if (x < ka && y < kb) {
                (*slot)[k] = test(ca[x], nca[x], cb[y], ncb[y], cand, nc);
            }
        }
    }
}

// expand(): one level of the pair walk (frontier.wgsl's rules). Its n input
// pairs (n from the words) each write their child pairs to out[4i..4i+4]
// (the CPU twin's slot rules, src/collide/mod.rs `Engine::expand`), or
// nothing at all when 4n slots do not fit the capacity P.cap; the candidates
// found are appended to `candidates` (written only below P.cand_cap, counted
// always, an overflow flagged in the status), and the live slots written are
// counted. One invocation per input pair (an indirect dispatch sized by
// collide_groups_expand); every invocation reaches the workgroup's appends.
@compute @workgroup_size(WG)
fn collide_expand(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    var n = min(frontier_n(), P.cap);
    if (!frontier_fits(i == 0u, n, 4u, P.cap)) {
        n = 0u; // nothing is written; the level's output is empty
    }
    let dead = vec2<u32>(DEAD, DEAD);
    var slot = array<vec2<u32>, 4>(dead, dead, dead, dead);
    var cand: array<vec2<u32>, 4>;
    var nc = 0u;
    var p = dead;
    if (i < n) {
        p = frontier_in[i];
    }
    if (!is_dead(p)) {
        expand_pair(p, &slot, &cand, &nc);
    }
    let lost = append_candidates(lid, &cand, nc);
    var live = 0u;
    if (i < n) {
        for (var k = 0u; k < 4u; k++) {
            frontier_out[4u * i + k] = slot[k];
            live += select(0u, 1u, !is_dead(slot[k]));
        }
    }
    if (lost) {
        set_status(CANDIDATES);
    }
    frontier_count_live(lid, live);
}

// expand() through the fused `atomic` site (compaction/site.wgsl): only the
// live child pairs are written, compacted, and the level's length word ends
// as their count (past P.cap: an overflow, the frame redone, as frontier.cuh's
// `frontier_close`). One invocation per input pair, up to P.cap of them
// (collide_groups_expand_fused).
@compute @workgroup_size(WG)
fn collide_expand_atomic(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                         @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    let n = site_uniform(lid, min(frontier_n(), P.cap));
    let dead = vec2<u32>(DEAD, DEAD);
    var slot = array<vec2<u32>, 4>(dead, dead, dead, dead);
    var cand: array<vec2<u32>, 4>;
    var nc = 0u;
    if (i < n) {
        expand_pair(frontier_in[i], &slot, &cand, &nc);
    }
    let kept = append_and_pack(lid, &slot, &cand, nc);
    let r = site_reserve(lid, kept, P.len_out);
    for (var k = 0u; k < kept; k++) {
        if (!r.wrapped && r.first + k < P.cap) {
            frontier_out[r.first + k] = slot[k];
        }
    }
    if (lid == 0u && r.kept != 0u) {
        add64(P.live_out, r.kept);
        if (r.wrapped) {
            set_status(OVERFLOW);
            atomicMax(&words[2u * NEEDED + 1u], 1u);
        } else if (r.end > P.cap) {
            set_status(OVERFLOW);
            atomicMax(&words[2u * NEEDED], r.end);
        }
        if (P.last != 0u) {
            set_status(UNFINISHED);
        }
    }
}

// expand() through a stable fused site (`lookback`, `chained`): the live
// child pairs compacted in (pair, slot) order, exactly the separate select
// of collide_expand's output; the level's last tile writes its length word.
// Workgroups draw tiles of WG input pairs until none is left.
fn expand_stable(lid: u32, alg: u32) {
    let n = site_uniform(lid, min(frontier_n(), P.cap));
    let tiles = site_tiles(n);
    let dead = vec2<u32>(DEAD, DEAD);
    loop {
        let t = site_draw(lid);
        if (t >= tiles) {
            break;
        }
        let i = t * WG + lid;
        var slot = array<vec2<u32>, 4>(dead, dead, dead, dead);
        var cand: array<vec2<u32>, 4>;
        var nc = 0u;
        if (i < n) {
            expand_pair(frontier_in[i], &slot, &cand, &nc);
        }
        let kept = append_and_pack(lid, &slot, &cand, nc);
        let r = site_stable(lid, t, kept, alg);
        for (var k = 0u; k < kept; k++) {
            if (r.first + k < P.cap) {
                frontier_out[r.first + k] = slot[k];
            }
        }
        if (lid == 0u && t == tiles - 1u) {
            store64(P.len_out, vec2<u32>(r.end, 0u));
            if (r.end != 0u) {
                add64(P.live_out, r.end);
                if (r.end > P.cap) {
                    set_status(OVERFLOW);
                    atomicMax(&words[2u * NEEDED], r.end);
                }
                if (P.last != 0u) {
                    set_status(UNFINISHED);
                }
            }
        }
    }
}

@compute @workgroup_size(WG)
fn collide_expand_lookback(@builtin(local_invocation_index) lid: u32) {
    expand_stable(lid, SITE_LOOKBACK);
}

@compute @workgroup_size(WG)
fn collide_expand_chained(@builtin(local_invocation_index) lid: u32) {
    expand_stable(lid, SITE_CHAINED);
}

// A fused expand's invocation: its candidates appended (an overflow flagged)
// and its live child pairs moved to the front of `slot`; returns how many.
// Every invocation of the workgroup calls it.
fn append_and_pack(lid: u32, slot: ptr<function, array<vec2<u32>, 4>>, cand: ptr<function, array<vec2<u32>, 4>>,
                   nc: u32) -> u32 {
    if (append_candidates(lid, cand, nc)) {
        set_status(CANDIDATES);
    }
    var kept = 0u;
    for (var k = 0u; k < 4u; k++) {
        if (!is_dead((*slot)[k])) {
            (*slot)[kept] = (*slot)[k];
            kept += 1u;
        }
    }
    return kept;
}

// Appends an invocation's `nc` candidates behind word P.cand_word (every
// invocation must call it): true when some fall past the list's capacity.
fn append_candidates(lid: u32, cand: ptr<function, array<vec2<u32>, 4>>, nc: u32) -> bool {
    let first = wg_append(lid, P.cand_word, nc);
    var lost = false;
    for (var c = 0u; c < nc; c++) {
        let at = first.x + c;
        if (first.y == 0u && at >= first.x && at < P.cand_cap) {
            candidates[at] = (*cand)[c];
        } else {
            lost = true;
        }
    }
    return lost;
}

// Appends an invocation's `found` contacts behind word P.contact_word (every
// invocation must call it): true when some fall past the list's capacity.
fn append_contacts(lid: u32, c: ptr<function, array<Contact, 8>>, found: u32) -> bool {
    let first = wg_append(lid, P.contact_word, found);
    var lost = false;
    for (var k = 0u; k < found; k++) {
        let at = first.x + k;
        if (first.y == 0u && at >= first.x && at < P.contact_cap) {
            contacts[at] = (*c)[k];
        } else {
            lost = true;
        }
    }
    return lost;
}

// A u64 count word as a length of at most `cap`.
fn count_below(w: u32, cap: u32) -> u32 {
    return min(load_len(w), cap);
}

// narrow(): the exact shape test of each stored candidate (those counted in
// word P.cand_word, up to the list's capacity); its contact points are
// appended to `contacts` and counted in word P.contact_word. Points past the
// list are counted, not written, and set the candidates' status (the host
// makes room and redoes the frame). Nothing when the frame is redone.
@compute @workgroup_size(WG)
fn collide_narrow(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    var count = 0u;
    if (frontier_ok()) {
        count = count_below(P.cand_word, P.cand_cap);
    }
    var c: array<Contact, 8>;
    var found = 0u;
    if (i < count) {
        let p = candidates[i];
        // order.rs `pair_by_id`: the lower spawn number first, so that a pair keeps its orientation.
        var a = p.y;
        var b = p.x;
        if (bodies[b].id < bodies[a].id) {
            a = p.x;
            b = p.y;
        }
        var four: array<Contact, 4>;
        found = collide_pair(a, body(a), b, body(b), world(), &four);
        for (var k = 0u; k < found; k++) {
            c[k] = four[k];
        }
    }
    if (append_contacts(lid, &c, found)) {
        set_status(CANDIDATES);
    }
}

// narrow(), second step: every body's wall points, appended to the contacts
// as collide_narrow appends (the same capacity rule and status).
@compute @workgroup_size(WG)
fn collide_walls(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    var c: array<Contact, 8>;
    var found = 0u;
    if (frontier_ok() && i < P.n) {
        found = wall_contacts(i, body(i), world(), &c);
    }
    if (append_contacts(lid, &c, found)) {
        set_status(CANDIDATES);
    }
}

// substep(), first step: gravity for the substep on every body (not when the
// frame is redone).
@compute @workgroup_size(WG)
fn collide_gravity(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i >= P.n || !frontier_ok()) {
        return;
    }
    var b = body(i);
    gravity(&b, world());
    store_body(i, b);
}

// The colouring (physics/colour.rs; the CPU engine's `colour`). The table
// holds, per colour k < COLOUR_MAX: its manifolds (COLOUR_COUNTS + k), the
// first of them in `order` (COLOUR_STARTS + k, and + COLOUR_MAX the end) and
// the scatter's cursor (COLOUR_CURSORS + k). The host clears it and `used`
// before the frame's colouring, and `picks` before each round.
const COLOUR_COUNTS: u32 = 0u;
const COLOUR_STARTS: u32 = 25u;
const COLOUR_CURSORS: u32 = 50u;

// colour.rs `starts_run`.
fn starts_run(i: u32) -> bool {
    return i == 0u || any(manifold(contacts[i - 1u]) != manifold(contacts[i]));
}

// colour.rs `is_wall_or_immovable`.
fn is_wall_or_immovable(body: u32) -> bool {
    return is_wall(body) || bodies[body].inv_mass <= 0.0;
}

// colour.rs `named`: a manifold (engine places) by its bodies' spawn numbers.
fn named(m: vec2<u32>) -> vec2<u32> {
    var b = COLOUR_WALLS;
    if (m.y != COLOUR_WALLS) {
        b = bodies[m.y].id;
    }
    return vec2<u32>(bodies[m.x].id, b);
}

// solve(), colouring's start: a manifold's first point UNCOLOURED, its
// others FOLLOWER; with no colours (P.colour 0) every point OVERFLOW.
@compute @workgroup_size(WG)
fn collide_colour_init(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap)) {
        return;
    }
    if (P.colour == 0u) {
        colour[i] = COLOUR_OVERFLOW;
    } else {
        colour[i] = select(COLOUR_FOLLOWER, COLOUR_UNCOLOURED, starts_run(i));
    }
}

// Whether invocation i of a colouring round has a manifold to colour: the
// first point of one still uncoloured.
fn uncoloured(i: u32) -> bool {
    return frontier_ok() && i < count_below(P.contact_word, P.contact_cap) && colour[i] == COLOUR_UNCOLOURED;
}

// A manifold of rank r offers itself to `body` (one side; `other` the other's spawn number):
// in a round's first step (P.first 1) its rank, of which the highest stays;
// in the second, if that is its rank, the other side, of which the highest
// stays. The pair (rank, other side) is the body's pick (colour.rs `outranks_at`).
fn offer(body: u32, other: u32, r: u32) {
    if (is_wall_or_immovable(body)) {
        return; // an immovable side picks nothing
    }
    if (P.first != 0u) {
        atomicMax(&picks[2u * body], r);
    } else if (atomicLoad(&picks[2u * body]) == r) {
        atomicMax(&picks[2u * body + 1u], other);
    }
}

// One round of the colouring, its first two steps (P.first 1, then 0):
// each uncoloured manifold offers itself to both its bodies.
@compute @workgroup_size(WG)
fn collide_colour_pick(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!uncoloured(i)) {
        return;
    }
    let m = manifold(contacts[i]);
    let name = named(m);
    let r = rank(name);
    offer(m.x, name.y, r);
    offer(m.y, name.x, r);
}

// Whether `body` picked the manifold of rank r whose other side's spawn
// number is `other` (an immovable side picks nothing and constrains nothing).
fn picked(body: u32, other: u32, r: u32) -> bool {
    if (is_wall_or_immovable(body)) {
        return true;
    }
    return atomicLoad(&picks[2u * body]) == r && atomicLoad(&picks[2u * body + 1u]) == other;
}

// Third step: a manifold both its movable bodies picked takes the lowest
// colour neither has (OVERFLOW past P.colour colours), on all its points.
// The winners share no movable body: each reads and sets only its own
// bodies' bits, and writes only its own run (never another's first point).
@compute @workgroup_size(WG)
fn collide_colour_take(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!uncoloured(i)) {
        return;
    }
    let m = manifold(contacts[i]);
    let name = named(m);
    let r = rank(name);
    if (!picked(m.x, name.y, r) || !picked(m.y, name.x, r)) {
        return;
    }
    let fa = is_wall_or_immovable(m.x);
    let fb = is_wall_or_immovable(m.y);
    var bits = 0u;
    if (!fa) {
        bits |= used[m.x];
    }
    if (!fb) {
        bits |= used[m.y];
    }
    let k = first_free(bits, P.colour);
    colour[i] = k;
    let count = count_below(P.contact_word, P.contact_cap);
    for (var j = i + 1u; j < count && !starts_run(j); j++) {
        colour[j] = k;
    }
    if (k != COLOUR_OVERFLOW) {
        if (!fa) {
            used[m.x] |= 1u << k;
        }
        if (!fb) {
            used[m.y] |= 1u << k;
        }
    }
}

// Colouring's end: what no round coloured goes to the overflow, and each
// colour counts its manifolds.
@compute @workgroup_size(WG)
fn collide_colour_finish(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                         @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap)) {
        return;
    }
    let k = colour[i];
    if (k >= COLOUR_FOLLOWER) {
        colour[i] = COLOUR_OVERFLOW;
    } else if (starts_run(i)) {
        atomicAdd(&colour_table[COLOUR_COUNTS + k], 1u);
    }
}

// Each colour's first place in `order`, and its workgroups for the coloured
// passes (slot ARGS_COLOURS + k): one invocation.
@compute @workgroup_size(1)
fn collide_colour_scan() {
    var sum = 0u;
    for (var k = 0u; k <= COLOUR_MAX; k++) {
        atomicStore(&colour_table[COLOUR_STARTS + k], sum);
        atomicStore(&colour_table[COLOUR_CURSORS + k], sum);
        if (k < COLOUR_MAX) {
            // Past P.colour colours the count is 0: no dispatch reads those slots.
            var count = 0u;
            if (k < P.colour) {
                count = atomicLoad(&colour_table[COLOUR_COUNTS + k]);
            }
            write_groups(ARGS_COLOURS + k, count, 0u);
            sum += count;
        }
    }
}

// Each coloured manifold into its colour's part of `order`, as (first point,
// end of its run). The order within a colour is the atomics': its manifolds
// share no movable body, so it does not change the result.
@compute @workgroup_size(WG)
fn collide_colour_order(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    let count = count_below(P.contact_word, P.contact_cap);
    if (!frontier_ok() || i >= count) {
        return;
    }
    let k = colour[i];
    if (k == COLOUR_OVERFLOW || !starts_run(i)) {
        return;
    }
    var end = i + 1u;
    while (end < count && !starts_run(end)) {
        end++;
    }
    order[atomicAdd(&colour_table[COLOUR_CURSORS + k], 1u)] = vec2<u32>(i, end);
}

// solve(), after the colouring: each movable body's points left to the
// Jacobi pass, with bodies and walls (its mass is split over them;
// World::split). The host clears `counts` before.
@compute @workgroup_size(WG)
fn collide_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap) || colour[i] != COLOUR_OVERFLOW) {
        return;
    }
    let c = contacts[i];
    if (bodies[c.a].inv_mass > 0.0) {
        atomicAdd(&counts[c.a], 1u);
    }
    if (!is_wall(c.b) && bodies[c.b].inv_mass > 0.0) {
        atomicAdd(&counts[c.b], 1u);
    }
}

// substep(), one pass, colour P.colour: each of its manifolds (one
// invocation each, dispatched from slot ARGS_COLOURS + P.colour) takes its
// points in order, moving its bodies directly (solver.wgsl
// `coloured_impulse`); no movable body is in two of them.
@compute @workgroup_size(WG)
fn collide_solve_colour(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let j = index(wid, nw, lid);
    let first = atomicLoad(&colour_table[COLOUR_STARTS + P.colour]);
    let end = atomicLoad(&colour_table[COLOUR_STARTS + P.colour + 1u]);
    if (!frontier_ok() || j >= end - first) {
        return;
    }
    let w = world();
    let run = order[first + j];
    let ia = contacts[run.x].a;
    let ib = contacts[run.x].b;
    let wall = is_wall(ib);
    var a = body(ia);
    var b = a;
    if (!wall) {
        b = body(ib);
    }
    // Nothing in a pass turns a body: its inertia holds for every point.
    let ma = inertia(a);
    var mb = inertia(b);
    for (var i = run.x; i < run.y; i++) {
        var c = contacts[i];
        if (wall) {
            b = wall_body(c.b, v3(c.point), w);
            mb = inertia(b);
        }
        coloured_impulse(&c, &a, ma, &b, mb, w, P.relax != 0u);
        contacts[i] = c;
    }
    // An immovable body, read by many, is never written.
    if (a.inv_mass > 0.0) {
        store_body(ia, a);
    }
    if (!wall && b.inv_mass > 0.0) {
        store_body(ib, b);
    }
}

// A contact's impulse r added to both bodies' sums (a wall's side to none).
fn add_impulse(c: Contact, r: Impulse) {
    let wall = is_wall(c.b);
    for (var k = 0u; k < 3u; k++) {
        add_sum(c.a, k, to_fixed(r.linear[k] * -1.0));
        add_sum(c.a, 3u + k, to_fixed(r.angular_a[k]));
        add_sum(c.a, 6u + k, to_fixed(r.push[k] * -1.0));
        if (wall) {
            continue; // the wall does not move
        }
        add_sum(c.b, k, to_fixed(r.linear[k]));
        add_sum(c.b, 3u + k, to_fixed(r.angular_b[k]));
        add_sum(c.b, 6u + k, to_fixed(r.push[k]));
    }
}

// The other side of contact c: a body, or the wall's immovable body at the point.
fn other(c: Contact, w: W) -> B {
    if (is_wall(c.b)) {
        return wall_body(c.b, v3(c.point), w);
    }
    return body(c.b);
}

// substep(), after gravity: each contact (word P.contact_word) adds the
// impulse it held in the last substep (or, in the first, what warm starting
// gave it) to both bodies' sums; collide_apply follows, as after a pass.
// Nothing when the frame is redone.
@compute @workgroup_size(WG)
fn collide_hold(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap)) {
        return;
    }
    let c = contacts[i];
    add_impulse(c, hold(c, body(c.a), other(c, world())));
}

// substep(), one pass: each contact of the overflow (word P.contact_word
// contacts in all) updates the impulses it has applied this substep and adds
// the change to both bodies' sums (`counts`: each body's overflow points). Reads
// the bodies from before the pass (collide_apply runs after); each contact is
// one invocation's. Nothing when the frame is redone.
@compute @workgroup_size(WG)
fn collide_solve(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap)) {
        return;
    }
    if (colour[i] != COLOUR_OVERFLOW) {
        return; // the coloured passes solve it
    }
    let w = world();
    var c = contacts[i];
    var kb = 1u;
    if (!is_wall(c.b)) {
        kb = atomicLoad(&counts[c.b]);
    }
    let a = body(c.a);
    let b = other(c, w);
    let r = contact_impulse(&c, a, inertia(a), atomicLoad(&counts[c.a]), b, inertia(b), kb, w, P.relax != 0u);
    add_impulse(c, r);
    contacts[i] = c;
}

// substep(), after the frame's last: each body's contacts that owe a bounce
// (solver.wgsl `bounces`), counted into `counts` (cleared first: the passes
// are done with the split), over which the restitution pass splits the mass.
@compute @workgroup_size(WG)
fn collide_bouncing(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap)) {
        return;
    }
    let c = contacts[i];
    if (!bounces(c)) {
        return;
    }
    atomicAdd(&counts[c.a], 1u);
    if (!is_wall(c.b)) {
        atomicAdd(&counts[c.b], 1u);
    }
}

// substep(), after collide_bouncing: one restitution pass (of solver.rs
// World::bounce_passes; P.first starts each contact's given impulse), each contact's
// impulse added to both bodies' sums (collide_apply follows).
@compute @workgroup_size(WG)
fn collide_restitute(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                     @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap)) {
        return;
    }
    let w = world();
    var c = contacts[i];
    if (!bounces(c)) {
        return;
    }
    var kb = 1u;
    if (!is_wall(c.b)) {
        kb = atomicLoad(&counts[c.b]);
    }
    let a = body(c.a);
    let b = other(c, w);
    add_impulse(c, restitution(&c, P.first != 0u, a, inertia(a), atomicLoad(&counts[c.a]), b, inertia(b), kb));
    contacts[i] = c;
}

// substep(), after collide_hold and after each pass: every body takes its
// sums (after a Jacobi pass, P.split_only: a body with no overflow point takes nothing).
@compute @workgroup_size(WG)
fn collide_apply(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i >= P.n || !frontier_ok() || (P.split_only != 0u && atomicLoad(&counts[i]) == 0u)) {
        return;
    }
    var linear: vec3<f32>;
    var angular: vec3<f32>;
    var push: vec3<f32>;
    for (var k = 0u; k < 3u; k++) {
        linear[k] = from_fixed(load_sum(i, k));
        angular[k] = from_fixed(load_sum(i, 3u + k));
        push[k] = from_fixed(load_sum(i, 6u + k));
    }
    var b = body(i);
    apply_sums(&b, inertia(b), linear, angular, push);
    store_body(i, b);
}

// substep(), last step: positions and orientations from velocities over the
// substep's dt; walls, floor and drum (not when the frame is redone).
@compute @workgroup_size(WG)
fn collide_integrate(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                     @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i >= P.n || !frontier_ok()) {
        return;
    }
    var b = body(i);
    integrate_body(&b, world());
    store_body(i, b);
}
