// The colouring of the contacts: physics/colour.rs, function for function
// (the module says how the colours come out the same on every backend).
#pragma once
#include "common.cuh"

#define COLOUR_WALLS 0xffffffffu       // colour.rs WALLS
#define COLOUR_OVERFLOW 0xffffffffu    // colour.rs OVERFLOW
#define COLOUR_UNCOLOURED 0xfffffffeu  // colour.rs UNCOLOURED
#define COLOUR_FOLLOWER 0xfffffffdu    // colour.rs FOLLOWER
#define COLOUR_MAX 24u                 // colour.rs MAX_COLOURS
#define COLOUR_NO_PICK 0xffffffffffffffffull

namespace physics {

// colour.rs `manifold`, packed as colour.rs `pick` packs it.
__device__ __forceinline__ u64 manifold(const Contact& c) { return pack(c.a, is_wall(c.b) ? COLOUR_WALLS : c.b); }

// colour.rs `starts_run` over the first `count` contacts.
__device__ __forceinline__ bool starts_run(const Contact* contacts, u64 i) {
    return i == 0 || manifold(contacts[i - 1]) != manifold(contacts[i]);
}

// colour.rs `is_wall_or_immovable`.
__device__ __forceinline__ bool is_wall_or_immovable(u32 body, const Body* bodies) {
    return is_wall(body) || bodies[body].inv_mass <= 0.0f;
}

// colour.rs `named`: a manifold (engine places) by its bodies' spawn numbers.
__device__ __forceinline__ u64 named(u64 m, const Body* bodies) {
    u32 b = unpack_b(m);
    return pack(bodies[unpack_a(m)].id, b == COLOUR_WALLS ? COLOUR_WALLS : bodies[b].id);
}

// colour.rs `rank`.
__device__ __forceinline__ u32 rank(u64 m) {
    u32 a = unpack_a(m), b = unpack_b(m);
    u32 h = (a * 0x9e3779b1u) ^ (b * 0x85ebca77u + 0x27d4eb2fu);
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    return h ^ (h >> 16);
}

// colour.rs `other`.
__device__ __forceinline__ u32 other(u64 m, u32 body) { return unpack_a(m) == body ? unpack_b(m) : unpack_a(m); }

// colour.rs `outranks_at`: (rank, other side) compared in that order.
__device__ __forceinline__ bool outranks_at(u32 body, u64 x, u64 y) {
    u32 rx = rank(x), ry = rank(y);
    return rx != ry ? rx > ry : other(x, body) > other(y, body);
}

// colour.rs `first_free`.
__device__ __forceinline__ u32 first_free(u32 used, u32 colours) {
    u32 c = __ffs(~used) - 1u;  // ~used has a bit below 32 set: at most MAX_COLOURS bits are used
    return c < colours ? c : COLOUR_OVERFLOW;
}

// colour.rs `rounds`.
__device__ __host__ __forceinline__ u32 colour_rounds(u32 colours) { return 2u * colours; }

}  // namespace physics
