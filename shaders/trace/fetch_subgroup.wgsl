// How trace_depth_first_wide's lanes take rays where the device has
// subgroups (wgpu.rs puts this file before wavefront.wgsl when
// `Device::subgroups`): wavefront.cu's warp fetch, one atomicAdd on the
// dispatch's fetch counter for every idle lane of a subgroup, made when
// WIDE_FETCH lanes are idle or none is busy. fetch_lane.wgsl is the
// fallback. Every lane of a subgroup calls these together (the kernel's loop
// keeps them in step: its only exit is when all of them are done).

// The dispatch's counter of queue entries handed out (wgpu.rs clears it before each dispatch).
@group(0) @binding(13) var<storage, read_write> fetch: array<atomic<u32>>;
// Idle lanes a subgroup gathers before it fetches (wavefront.cu WIDE_FETCH).
override WIDE_FETCH: u32 = 8u;

// Whether the subgroup fetches now.
fn lanes_fetch(idle: bool, busy: bool) -> bool {
    let idles = subgroupAdd(u32(idle));
    return idles != 0u && (idles >= WIDE_FETCH || !subgroupAny(busy));
}

// The queue entry an idle lane takes: its rank among the idle lanes past
// the counter's old value, which the first idle lane fetched for all.
fn lanes_take(idle: bool) -> u32 {
    let want = u32(idle);
    let count = subgroupAdd(want);
    let rank = subgroupExclusiveAdd(want);
    var base = 0u;
    if idle && rank == 0u { base = atomicAdd(&fetch[0], count); }
    // Only the fetching lane holds a nonzero base.
    return subgroupMax(base) + rank;
}

fn lanes_all(b: bool) -> bool { return subgroupAll(b); }
