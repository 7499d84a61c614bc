// The collision view's instances from a wgpu engine's bodies, on the device:
// spheres first, then boxes, so that each mesh draws one run of instances
// (src/viewer/bodies.rs `Grouping`). Within a run the order is whatever the
// atomics give; the depth test makes the picture the same but for ties.
// A body is copied whole: 80 bytes, src/collide/layout.rs `Body`, whose
// `shape` is the fourth word.

struct RawBody {
    words: array<vec4<u32>, 5>,
}

// Keep in sync with src/viewer/bodies.rs `GroupUniform`.
struct Group {
    n: u32,
    // Spheres among the n bodies (the host knows: a frame never changes a shape).
    spheres: u32,
    pad0: u32,
    pad1: u32,
}

const SPHERE: u32 = 0u;
const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> grp: Group;
@group(0) @binding(1) var<storage, read> bodies: array<RawBody>;
@group(0) @binding(2) var<storage, read_write> grouped: array<RawBody>;
// Spheres and boxes placed so far, cleared before the dispatch.
@group(0) @binding(3) var<storage, read_write> placed: array<atomic<u32>, 2>;

@compute @workgroup_size(WG)
fn group_by_shape(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * groups.x + wg.x) * WG + lid;
    if i >= grp.n {
        return;
    }
    let b = bodies[i];
    var slot: u32;
    if b.words[0].w == SPHERE {
        slot = atomicAdd(&placed[0], 1u);
    } else {
        slot = grp.spheres + atomicAdd(&placed[1], 1u);
    }
    // A miscount on the host must not write past the buffer.
    if slot < grp.n {
        grouped[slot] = b;
    }
}
