// Fused compaction sites in WGSL: a producer compacts the items it makes in
// the dispatch that makes them, so no dead slot is written and no separate
// pass reads one back. The twin of kernels/compaction/site.cuh, for `atomic`
// (pbrt-v4's queues) so far: each workgroup reserves a round's kept items
// with one 64-bit add to the site's tally word, so the tally ends as the kept
// total and the order of the items is unspecified, as the separate `atomic`
// select's. The including shader declares `words`: u64 words as (lo, hi)
// pairs of atomic<u32>.
//
// How a producer uses it (every invocation of the workgroup makes every call:
// the rounds are workgroup-uniform, so the barriers inside are too):
//
//   let n = site_uniform(lid, <items>);
//   for (var round = wg.x * WG; round < n; round += prm.stride) {
//       let i = round + lid;             // this invocation's item, if i < n
//       ... kept = the items it keeps
//       let r = site_reserve(lid, kept, tally_word);
//       // item j goes to r.first + j, if that is below the capacity
//   }

var<workgroup> site_count: atomic<u32>;
// The round's (first slot, whether the tally passed 2^32, kept items).
var<workgroup> site_round: vec3<u32>;
var<workgroup> site_n: u32;

// `n` as every invocation of the workgroup sees it, for uniform rounds; it
// also clears the round's count (workgroup memory starts undefined where a
// pipeline skips its zeroing, as the workloads' do): call it first.
fn site_uniform(lid: u32, n: u32) -> u32 {
    if lid == 0u {
        site_n = n;
        atomicStore(&site_count, 0u);
    }
    return workgroupUniformLoad(&site_n);
}

// One round's reservation.
struct SiteSlots {
    // This invocation's first output slot.
    first: u32,
    // One past the round's last slot (the tally's low word after the round's add).
    end: u32,
    // The tally passed 2^32 in this round: every slot past it is past any capacity.
    wrapped: bool,
    // The items the workgroup kept in this round.
    kept: u32,
}

// Reserves `kept` consecutive slots for this invocation from the tally word
// `tally`: one atomic add per workgroup and round, none for a round that
// keeps nothing.
fn site_reserve(lid: u32, kept: u32, tally: u32) -> SiteSlots {
    let mine = atomicAdd(&site_count, kept);
    workgroupBarrier();
    if lid == 0u {
        let total = atomicExchange(&site_count, 0u);
        var first = 0u;
        var wrapped = 0u;
        if total != 0u {
            first = atomicAdd(&words[2u * tally], total);
            if first + total < first {
                wrapped = 1u;
                atomicAdd(&words[2u * tally + 1u], 1u);
            }
        }
        site_round = vec3<u32>(first, wrapped, total);
    }
    let r = workgroupUniformLoad(&site_round);
    return SiteSlots(r.x + mine, r.x + r.z, r.y != 0u, r.z);
}

// ---------------------------------------------------------------------------
// The stable sites, `lookback` and `chained` (site.cuh's tiles): the
// producer's input is cut into tiles of WG items in input order, handed out
// by dynamic tile id (so a tile only waits on tiles that running workgroups
// drew before it); a tile ranks its kept items in invocation order, learns
// its prefix through the algorithm's protocol and writes them there. The
// output is exactly the separate select of the producer's slots.
//
// The including shader declares `site_states: array<atomic<u32>>`: [0] the
// tile counter, [1 + t] tile t's state, one word: the value << 2 over a
// 2-bit flag, as single_pass.wgsl's counts (values saturate at 2^30 - 1:
// such a total is past every capacity, an overflow either way). The host
// clears the words a dispatch uses before it (`Engine` site buffers).
//
// Forward progress: WebGPU promises none between workgroups. The library's
// select falls back by reducing a silent predecessor's input itself
// (single_pass.wgsl); a producer cannot: its items depend on what other
// items did meanwhile (the tracer's culling reads closest hits as they
// land), so a second count could differ. So a wait here is bounded instead:
// past site_rounds() x SITE_MAX_POLLS loads the tile takes what it has,
// publishes, and sets SITE_STALLED in the frame's status word (word 0 of
// `words`, frontier.rs `STATUS`); the host then redoes the frame through the
// separate pass and leaves this site off on that device. On a GPU it was never
// seen; on lavapipe a workgroup whose thread the OS deschedules can be waited
// on for milliseconds, hence about a million loads (~10 ms there) before the
// wait gives up. Tests force it with SITE_WITHHOLD.
//
//   let tiles = site_tiles(n);
//   loop {
//       let t = site_draw(lid);
//       if t >= tiles { break; }
//       let i = t * WG + lid;           // this invocation's item, if i < n
//       ... kept = the items it keeps
//       let r = site_stable(lid, t, kept, SITE_LOOKBACK);
//       // item j goes to r.first + j, if that is below the capacity;
//       // the tile t == tiles - 1 knows the total: r.end
//   }

const SITE_LOOKBACK: u32 = 1u;
const SITE_CHAINED: u32 = 2u;
const SITE_FLAG_AGGREGATE: u32 = 1u;
const SITE_FLAG_PREFIX: u32 = 2u;
const SITE_VALUE_MAX: u32 = 0x3fffffffu;
// frontier.rs `status::STALLED`.
const SITE_STALLED: u32 = 8u;

// Loads of predecessors' states in one round of a wait, and the rounds before
// it gives up: two nested loops, as lavapipe ends every loop after 65,535
// iterations (silently).
override SITE_MAX_POLLS: u32 = 16384u;
override SITE_POLL_ROUNDS: u32 = 64u;
// Testing only (0: off): every SITE_WITHHOLD-th tile publishes nothing, so
// that its successors stall and the frame is redone unfused (after one round).
override SITE_WITHHOLD: u32 = 0u;

fn site_rounds() -> u32 {
    return select(SITE_POLL_ROUNDS, 1u, SITE_WITHHOLD != 0u);
}

var<workgroup> site_tile: u32;
var<workgroup> site_prefix: u32;

// Tiles of n items.
fn site_tiles(n: u32) -> u32 {
    return n / WG + select(0u, 1u, n % WG != 0u);
}

// The workgroup's next tile id, the same to every invocation.
fn site_draw(lid: u32) -> u32 {
    if lid == 0u {
        site_tile = atomicAdd(&site_states[0], 1u);
    }
    return workgroupUniformLoad(&site_tile);
}

fn site_add(a: u32, b: u32) -> u32 {
    return min(a + min(b, SITE_VALUE_MAX), SITE_VALUE_MAX);
}

fn site_publish(tile: u32, value: u32, flag: u32) {
    // max(): a constant 0 divisor is an error once the constants are applied.
    let every = max(SITE_WITHHOLD, 1u);
    if SITE_WITHHOLD != 0u && tile % every == every - 1u {
        return;
    }
    atomicStore(&site_states[1u + tile], (min(value, SITE_VALUE_MAX) << 2u) | flag);
}

// Tile `tile`'s exclusive prefix: `lookback` publishes the tile's count at
// once and walks back over aggregates to the nearest inclusive prefix;
// `chained` waits for its predecessor's inclusive prefix alone. Either
// publishes its own inclusive prefix the moment it has the prefix. One
// invocation calls it: site_lane.wgsl's walk, and `chained`'s in both.
fn site_walk_one(tile: u32, kept: u32, alg: u32) -> u32 {
    if tile == 0u {
        site_publish(0u, kept, SITE_FLAG_PREFIX);
        return 0u;
    }
    if alg == SITE_LOOKBACK {
        site_publish(tile, kept, SITE_FLAG_AGGREGATE);
    }
    var acc = 0u;
    var j = tile - 1u;
    var done = false;
    for (var round = 0u; round < site_rounds() && !done; round++) {
        for (var k = 0u; k < SITE_MAX_POLLS; k++) {
            let s = atomicLoad(&site_states[1u + j]);
            let flag = s & 3u;
            if flag == SITE_FLAG_PREFIX {
                acc = site_add(acc, s >> 2u);
                done = true;
                break;
            }
            // Tile 0 only ever publishes a prefix, so j stays above 0 here.
            if flag == SITE_FLAG_AGGREGATE && alg == SITE_LOOKBACK {
                acc = site_add(acc, s >> 2u);
                j -= 1u;
            }
        }
    }
    if !done {
        atomicOr(&words[0], SITE_STALLED);
    }
    site_publish(tile, site_add(acc, kept), SITE_FLAG_PREFIX);
    return acc;
}

// One tile's slots through a stable site: every invocation of the workgroup
// calls it with its kept count; returns its first slot (SiteSlots as the
// atomic site's: `end` one past the tile's last, `kept` the tile's count).
// The rank and the walk back come from the prelude the engine picked:
// site_subgroup.wgsl (a subgroup scans and a subgroup reads a window of
// predecessors per poll) or site_lane.wgsl (workgroup memory, one invocation).
fn site_stable(lid: u32, tile: u32, kept: u32, alg: u32) -> SiteSlots {
    let r = site_rank(lid, kept);
    let total = r.y;
    if site_walker(lid) {
        let p = site_walk(tile, total, alg);
        if lid == 0u {
            site_prefix = p;
        }
    }
    let prefix = workgroupUniformLoad(&site_prefix);
    return SiteSlots(prefix + r.x - kept, site_add(prefix, total), false, total);
}
