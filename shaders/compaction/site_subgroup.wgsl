// A stable site's rank and walk back (compaction/site.wgsl) through subgroup
// operations: a subgroup scan with the subgroups' totals in workgroup
// memory, and the subgroup holding invocation 0 reading a window of
// predecessors per poll, one lane a tile, so a walk over k aggregates takes
// k / subgroup-size loads instead of k dependent ones. Assumes subgroups are
// contiguous ranges of local_invocation_index, as workgroup_subgroup.wgsl.

var<workgroup> site_sums: array<u32, WG>;
var<workgroup> site_total: u32;

// (inclusive rank, the tile's total) of `kept` over the workgroup.
fn site_rank(lid: u32, kept: u32) -> vec2<u32> {
    let size = subgroupAdd(1u);
    let incl = subgroupInclusiveAdd(kept);
    let sg = lid / size;
    if subgroupExclusiveAdd(1u) == size - 1u {
        site_sums[sg] = incl;
    }
    workgroupBarrier();
    if lid == 0u {
        var acc = 0u;
        for (var k = 0u; k < WG / size; k++) {
            let t = site_sums[k];
            site_sums[k] = acc;
            acc += t;
        }
        site_total = acc;
    }
    workgroupBarrier();
    // The next writes to site_sums follow the next tile's draw, a barrier.
    return vec2<u32>(site_sums[sg] + incl, site_total);
}

fn site_walker(lid: u32) -> bool {
    return subgroupMin(lid) == 0u;
}

// The lowest lane whose bit is set, or 128 when none is.
fn site_first_lane(b: vec4<u32>) -> u32 {
    if b.x != 0u { return firstTrailingBit(b.x); }
    if b.y != 0u { return 32u + firstTrailingBit(b.y); }
    if b.z != 0u { return 64u + firstTrailingBit(b.z); }
    if b.w != 0u { return 96u + firstTrailingBit(b.w); }
    return 128u;
}

// site_lane.wgsl's walk with a window: lane l reads tile j - l, the lanes
// before the first that holds no aggregate are summed with it (a prefix
// ends the walk; a silent tile is polled again). `chained` polls with lane 0
// alone. Every lane of the walking subgroup calls it; lane 0's result counts.
fn site_walk(tile: u32, kept: u32, alg: u32) -> u32 {
    let lane = subgroupExclusiveAdd(1u);
    if alg == SITE_CHAINED {
        // Only the predecessor can end the wait: one lane polls one word.
        if lane == 0u {
            return site_walk_one(tile, kept, alg);
        }
        return 0u;
    }
    if tile == 0u {
        if lane == 0u {
            site_publish(0u, kept, SITE_FLAG_PREFIX);
        }
        return 0u;
    }
    if lane == 0u {
        site_publish(tile, kept, SITE_FLAG_AGGREGATE);
    }
    let lanes = subgroupAdd(1u);
    var acc = 0u;
    var j = tile - 1u;
    var done = false;
    for (var round = 0u; round < site_rounds() && !done; round++) {
        for (var k = 0u; k < SITE_MAX_POLLS; k++) {
            // Past tile 0: an inclusive prefix of 0.
            var s = SITE_FLAG_PREFIX;
            if lane <= j {
                s = atomicLoad(&site_states[1u + j - lane]);
            }
            let flag = s & 3u;
            let first = site_first_lane(subgroupBallot(flag != SITE_FLAG_AGGREGATE));
            let take = lane < first || (lane == first && flag == SITE_FLAG_PREFIX);
            acc = site_add(acc, subgroupAdd(select(0u, s >> 2u, take)));
            if any(subgroupBallot(lane == first && flag == SITE_FLAG_PREFIX) != vec4<u32>(0u)) {
                done = true;
                break;
            }
            // The lanes before `first` were aggregates; a window of them all moves on by its width.
            j -= min(first, lanes);
        }
    }
    if !done && lane == 0u {
        atomicOr(&words[0], SITE_STALLED);
    }
    if lane == 0u {
        site_publish(tile, site_add(acc, kept), SITE_FLAG_PREFIX);
    }
    return acc;
}
