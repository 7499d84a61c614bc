// The split collider's own kernels (src/collide/split/cuda/; the protocol
// is src/collide/split/mod.rs's). A rank's engine runs collide.cu's stages
// over its bodies and ghosts; these move bodies and contacts between ranks
// and keep, between frames, what each rank owns, all on the device: the
// host reads only counts.
//
// What moves is chosen by flags (u8, one per body or contact) that the
// library's select compacts into a list of places; collide_pack then
// gathers the records at those places.
#include "common.cuh"

typedef unsigned char u8;

#define SPLIT_MISSING 0xffffffffu

// Grid-stride loop over `count` items.
#define FOR_EACH(i, count) \
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (u64)(count); i += (u64)gridDim.x * blockDim.x)

// An exchange's records (split/cuda/ `Lockstep::share`), and every other
// move of bodies or contacts: a record holds `stride` u32s; a field of
// `width` u32s per item sits at `offset` in it. collide_pack copies the field
// of the items at `places` into records 0..count; collide_unpack copies
// records 0..count into the field of the items at `places`.
extern "C" __global__ void collide_pack(const u32* field, u32 width, const u32* places, u32 count, u32* records,
                                        u32 stride, u32 offset) {
    FOR_EACH(t, (u64)count * width) {
        u64 j = t / width, k = t % width;
        records[j * stride + offset + k] = field[(u64)places[j] * width + k];
    }
}

extern "C" __global__ void collide_unpack(u32* field, u32 width, const u32* places, u32 count, const u32* records,
                                          u32 stride, u32 offset) {
    FOR_EACH(t, (u64)count * width) {
        u64 j = t / width, k = t % width;
        field[(u64)places[j] * width + k] = records[j * stride + offset + k];
    }
}

// A rank's share of the frame's counts (cpu/rank.rs `kept`), after narrow
// and before the solver moves a body: out[0] the candidates with a body it
// owns, out[1] those of them with a ghost (the ghost's owner counts them
// too), out[2] its contacts, out[3] those between an owned body and a ghost.
// The host zeroes `out`.
extern "C" __global__ void collide_kept(const Body* bodies, World w, const u64* candidates, u64 cand_capacity,
                                        const Contact* contacts, const u64* words, u64 cand_word, u64 contact_word,
                                        u32 lo, u32 hi, u64* out) {
    u64 pairs = words[cand_word], count = words[contact_word];
    if (pairs > cand_capacity) pairs = cand_capacity;
    u64 k[4] = {0, 0, 0, 0};
    FOR_EACH(i, pairs > count ? pairs : count) {
        if (i < pairs) {
            u64 p = candidates[i];
            u32 ghosts = physics::is_ghost(bodies[unpack_a(p)], w, lo, hi) +
                         physics::is_ghost(bodies[unpack_b(p)], w, lo, hi);
            k[0] += ghosts < 2u;
            k[1] += ghosts == 1u;
        }
        if (i < count) {
            Contact c = contacts[i];
            k[2] += 1;
            k[3] += !physics::is_wall(c.b) &&
                    physics::is_ghost(bodies[c.a], w, lo, hi) != physics::is_ghost(bodies[c.b], w, lo, hi);
        }
    }
    for (int j = 0; j < 4; j++) {
        if (k[j] != 0) atomicAdd(&out[j], k[j]);
    }
}

// After narrow (the bodies where the frame began): whether the rank owns
// each body. The solver moves bodies, not places, so after it the flags
// still say which of the engine's bodies the rank keeps.
extern "C" __global__ void collide_mine(const Body* bodies, u32 n, World w, u32 lo, u32 hi, u8* mine) {
    FOR_EACH(i, n) { mine[i] = !physics::is_ghost(bodies[i], w, lo, hi); }
}

// 0, 1, ..., n - 1: what the select of places compacts.
extern "C" __global__ void collide_iota(u32* out, u32 n) {
    FOR_EACH(i, n) { out[i] = (u32)i; }
}

// Migration: whether each owned body's Morton code (its place now) lies in
// rank d's range [cuts[d], cuts[d + 1]) (the last range ends at u32::MAX).
extern "C" __global__ void collide_bound_for(const Body* bodies, u32 n, World w, const u32* cuts, u32 d, u8* flags) {
    u32 lo = cuts[d], hi = cuts[d + 1];
    FOR_EACH(i, n) {
        u32 code = physics::morton(physics::v3(bodies[i].pos), w);
        flags[i] = code >= lo && code < hi;
    }
}

// The largest reach of a body's box past its centre, on any axis (as float
// bits: non-negative floats order as their bits). The host zeroes `most`.
extern "C" __global__ void collide_reach(const Body* bodies, u32 n, World w, u32* most) {
    float m = 0.0f;
    FOR_EACH(i, n) {
        physics::V3 lo, hi, p = physics::v3(bodies[i].pos);
        physics::aabb(bodies[i], w, &lo, &hi);
        for (int k = 0; k < 3; k++) m = fmaxf(m, fmaxf(p[k] - lo[k], hi[k] - p[k]));
    }
    if (m > 0.0f) atomicMax(most, __float_as_uint(m));
}

// Cell index of a coordinate on axis k, as physics::morton quantises it
// (monotonic: a point inside a box has its cell inside the box's cells).
__device__ __forceinline__ u32 cell_of(float x, const World& w, int k) {
    float t = (x - w.min[k]) * w.inv_extent[k];
    return __float2uint_rz(physics::clamp(t * 1024.0f, 0.0f, 1023.0f));
}

// The halo: whether each owned body's box, grown by `reach` (the largest
// reach of any body's box past its centre, with a margin), meets rank t's
// range of Morton codes, given as `count` aligned cubes of cells (x, y, z,
// side; split/cuda/ `blocks`). A body of t whose box meets this body's has
// its centre in the grown box, so its cell is in one of the cubes: every
// pair across the two ranks has both bodies on t.
extern "C" __global__ void collide_halo(const Body* bodies, u32 n, World w, float reach, const uint4* blocks,
                                        u32 count, u8* flags) {
    FOR_EACH(i, n) {
        physics::V3 lo, hi;
        physics::aabb(bodies[i], w, &lo, &hi);
        u32 a[3], b[3];
        for (int k = 0; k < 3; k++) {
            a[k] = cell_of(lo[k] - reach, w, k);
            b[k] = cell_of(hi[k] + reach, w, k);
        }
        bool meets = false;
        for (u32 j = 0; j < count && !meets; j++) {
            uint4 c = blocks[j];
            meets = a[0] < c.x + c.w && c.x <= b[0] && a[1] < c.y + c.w && c.y <= b[1] && a[2] < c.z + c.w &&
                    c.z <= b[2];
        }
        flags[i] = meets;
    }
}

// Contacts after the solver, named by spawn number (what the next frame's
// warm start finds): `count` of `contacts` (engine places) into `named`.
extern "C" __global__ void collide_name_contacts(const Contact* contacts, u32 count, const Body* bodies,
                                                 Contact* named) {
    FOR_EACH(i, count) {
        Contact c = contacts[i];
        c.a = bodies[c.a].id;
        if (!physics::is_wall(c.b)) c.b = bodies[c.b].id;
        named[i] = c;
    }
}

// Each body's place by spawn number (`where` holds a slot per spawn number;
// the host fills it with SPLIT_MISSING first).
extern "C" __global__ void collide_where(const Body* bodies, u32 n, u32* where) {
    FOR_EACH(i, n) { where[bodies[i].id] = (u32)i; }
}

// Whether both bodies of each contact (by spawn number) are here.
extern "C" __global__ void collide_found(const Contact* named, u32 count, const u32* where, u8* flags) {
    FOR_EACH(i, count) {
        Contact c = named[i];
        flags[i] = where[c.a] != SPLIT_MISSING && (physics::is_wall(c.b) || where[c.b] != SPLIT_MISSING);
    }
}

// The contacts at `picked` (collide_found's), named by their bodies' places here, into `out`.
extern "C" __global__ void collide_place_contacts(const Contact* named, const u32* picked, u32 count,
                                                  const u32* where, Contact* out) {
    FOR_EACH(j, count) {
        Contact c = named[picked[j]];
        c.a = where[c.a];
        if (!physics::is_wall(c.b)) c.b = where[c.b];
        out[j] = c;
    }
}

// Places of the bodies with spawn numbers `ids`.
extern "C" __global__ void collide_places_of(const u32* where, const u32* ids, u32 count, u32* places) {
    FOR_EACH(j, count) { places[j] = where[ids[j]]; }
}

// Spawn numbers of the bodies at `places` (none: the first `count` bodies).
extern "C" __global__ void collide_ids_of(const Body* bodies, const u32* places, u32 count, u32* ids) {
    FOR_EACH(j, count) { ids[j] = bodies[places != nullptr ? places[j] : (u32)j].id; }
}

// Marks the bodies at `places` with `value` in `mark` (a slot per spawn
// number): migrants with their destination + 1, and 0 again after.
extern "C" __global__ void collide_mark(const Body* bodies, const u32* places, u32 count, u32 value, u32* mark) {
    FOR_EACH(j, count) { mark[bodies[places[j]].id] = value; }
}

// Whether each contact (by spawn number) names a body marked `value`: the
// contacts a migrant takes with it.
extern "C" __global__ void collide_marked_contacts(const Contact* named, u32 count, const u32* mark, u32 value,
                                                   u8* flags) {
    FOR_EACH(i, count) {
        Contact c = named[i];
        flags[i] = mark[c.a] == value || (!physics::is_wall(c.b) && mark[c.b] == value);
    }
}
