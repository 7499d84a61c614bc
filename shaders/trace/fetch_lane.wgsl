// How trace_depth_first_wide's lanes take rays where the device has no
// subgroups (fetch_subgroup.wgsl is the one with them): each idle lane takes
// the next queue entry with an atomicAdd of its own, and leaves the loop
// alone once the queue is spent.

// The dispatch's counter of queue entries handed out (wgpu.rs clears it before each dispatch).
@group(0) @binding(13) var<storage, read_write> fetch: array<atomic<u32>>;

fn lanes_fetch(idle: bool, busy: bool) -> bool { return idle; }

fn lanes_take(idle: bool) -> u32 {
    if idle { return atomicAdd(&fetch[0], 1u); }
    return 0u;
}

fn lanes_all(b: bool) -> bool { return b; }
