// The colouring of the contacts: src/collide/physics/colour.rs, function for
// function (the module says how the colours come out the same on every
// backend). Without 64-bit atomics a body's pick is two u32 maxima: the rank,
// then the other side among the manifolds of that rank (colour.rs `outranks_at`).

const COLOUR_WALLS: u32 = 0xffffffffu;
const COLOUR_OVERFLOW: u32 = 0xffffffffu;
const COLOUR_UNCOLOURED: u32 = 0xfffffffeu;
const COLOUR_FOLLOWER: u32 = 0xfffffffdu;
const COLOUR_MAX: u32 = 24u;

// colour.rs `manifold`.
fn manifold(c: Contact) -> vec2<u32> {
    return vec2<u32>(c.a, select(c.b, COLOUR_WALLS, is_wall(c.b)));
}

// colour.rs `rank`.
fn rank(m: vec2<u32>) -> u32 {
    var h = (m.x * 0x9e3779b1u) ^ (m.y * 0x85ebca77u + 0x27d4eb2fu);
    h ^= h >> 16u;
    h *= 0x7feb352du;
    h ^= h >> 15u;
    h *= 0x846ca68bu;
    return h ^ (h >> 16u);
}

// colour.rs `first_free`.
fn first_free(used: u32, colours: u32) -> u32 {
    let c = firstTrailingBit(~used);  // ~used has a bit below 32 set: at most COLOUR_MAX bits are used
    return select(COLOUR_OVERFLOW, c, c < colours);
}
