// Warm starting on wgpu, the twin of collide.cu's collide_warm_* kernels:
// the last frame's contacts (`previous`, in the order they were appended, as
// P.prev_count of them) by key (a, b, slot), open addressing over mask + 1
// slots (a power of two, at least twice the contacts), each slot the
// contact's index + 1 (0: empty). Keys are unique within a frame, so what a
// lookup finds does not depend on the order of the inserts: the CPU's binary
// search finds the same contact. Every probe loop is bounded by the table's
// slots (a free slot always comes first).

fn contact_hash(a: u32, b: u32, slot: u32) -> u32 {
    var h = (a * 0x9e3779b1u) ^ (b * 0x85ebca77u + slot * 0xc2b2ae3du);
    h ^= h >> 16u;
    h *= 0x7feb352du;
    h ^= h >> 15u;
    return h;
}

// The table's mask for `count` previous contacts (warm.rs `table_slots`).
fn warm_mask(count: u32) -> u32 {
    var slots = 1u;
    for (var g = 0u; g < 31u && slots < 2u * count; g++) {
        slots <<= 1u;
    }
    return slots - 1u;
}

// The previous contact with c's key: its index + 1, or 0 for none.
fn find_previous(c: Contact, mask: u32) -> u32 {
    var h = contact_hash(c.a, c.b, c.slot) & mask;
    for (var probe = 0u; probe <= mask; probe++) {
        let e = atomicLoad(&table[h]);
        if (e == 0u) {
            return 0u;
        }
        let p = previous[e - 1u];
        if (p.a == c.a && p.b == c.b && p.slot == c.slot) {
            return e;
        }
        h = (h + 1u) & mask;
    }
    return 0u;
}

// reorder(), last step: the last frame's contacts (P.prev_count of them)
// name their bodies' new places (`places`, collide_reorder's). A pair keeps
// its orientation: contacts name the lower spawn number first.
@compute @workgroup_size(WG)
fn collide_warm_follow(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i >= P.prev_count) {
        return;
    }
    previous[i].a = places[previous[i].a];
    if (!is_wall(previous[i].b)) {
        previous[i].b = places[previous[i].b];
    }
}

// solve(), warm start: the table's used slots cleared (the table holds at
// least that many: src/collide/wgpu.rs sizes it).
@compute @workgroup_size(WG)
fn collide_warm_clear(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (i <= warm_mask(P.prev_count) && i < P.table_cap) {
        atomicStore(&table[i], 0u);
    }
}

// solve(), warm start's first step: the last frame's contacts into the table
// (the CPU sorts them instead). Nothing when the frame is redone.
@compute @workgroup_size(WG)
fn collide_warm_table(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= P.prev_count) {
        return;
    }
    let mask = warm_mask(P.prev_count);
    let p = previous[i];
    var h = contact_hash(p.a, p.b, p.slot) & mask;
    // The table has more slots than contacts: a free one comes. A weak
    // exchange may fail spuriously: the same slot is tried again then.
    for (var probe = 0u; probe <= 2u * mask + 1u; probe++) {
        let r = atomicCompareExchangeWeak(&table[h], 0u, i + 1u);
        if (r.exchanged) {
            break;
        }
        if (r.old_value != 0u) {
            h = (h + 1u) & mask;
        }
    }
}

// solve(), warm start: each contact that the last frame had takes the
// impulses it held in that frame's last substep; the first substep's
// collide_hold applies them.
@compute @workgroup_size(WG)
fn collide_warm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = index(wid, nw, lid);
    if (!frontier_ok() || i >= count_below(P.contact_word, P.contact_cap)) {
        return;
    }
    var c = contacts[i];
    let e = find_previous(c, warm_mask(P.prev_count));
    if (e == 0u) {
        return; // the narrow phase left its impulses at zero
    }
    warm_start(&c, previous[e - 1u]);
    contacts[i] = c;
}
