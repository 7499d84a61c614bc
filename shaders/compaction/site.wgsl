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
