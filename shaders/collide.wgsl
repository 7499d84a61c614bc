// The collision view: every body drawn as an instance of a unit mesh (an
// icosphere for spheres, a cube for boxes) placed by its `Body` record,
// lit with Lambert plus a little ambient, and the container's outline as
// lines. The instance buffer holds the engine's bodies as they are, 80 bytes
// each (src/collide/layout.rs `Body`), grouped by shape (on the CPU, or by
// collide_group.wgsl on the device), so nothing is repacked.

// Keep in sync with src/viewer/bodies.rs `SceneUniform`.
struct Scene {
    view_proj: mat4x4<f32>,
    // Towards the light, world space; w unused.
    light: vec4<f32>,
    // Speed (world units per second) drawn in the hottest colour.
    hot_speed: f32,
    // 1: encode sRGB here (the target is a linear-unorm format); 0: the target encodes.
    encode_srgb: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> scene: Scene;

// Locations 0-1: src/viewer/mesh.rs `Vertex`; 2-7: src/collide/layout.rs `Body`.
struct MeshIn {
    @location(0) pos: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) centre: vec3<f32>,
    @location(3) shape: u32,
    @location(4) vel: vec3<f32>,
    @location(5) inv_mass: f32,
    @location(6) half: vec3<f32>,
    @location(7) rot: vec4<f32>,
}

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) color: vec3<f32>,
}

// q v q*, for a unit quaternion (x, y, z, w): the same rotation as
// src/collide/physics.rs `axes`.
fn rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

const SPHERE: u32 = 0u;

@vertex
fn vs_body(in: MeshIn) -> MeshOut {
    var out: MeshOut;
    var local: vec3<f32>;
    var normal: vec3<f32>;
    // Slow to fast: spheres orange to yellow, boxes blue to cyan, so the
    // shape stays readable at any speed.
    var slow: vec3<f32>;
    var fast: vec3<f32>;
    if (in.shape == SPHERE) {
        local = in.pos * in.half.x;
        normal = in.normal;
        slow = vec3<f32>(0.85, 0.3, 0.06);
        fast = vec3<f32>(1.0, 0.8, 0.2);
    } else {
        // A face normal of the unit cube stays a face normal under the
        // per-axis scale, so only the rotation applies to it.
        local = rotate(in.rot, in.pos * in.half);
        normal = rotate(in.rot, in.normal);
        slow = vec3<f32>(0.08, 0.2, 0.75);
        fast = vec3<f32>(0.2, 0.6, 1.0);
    }
    let t = clamp(length(in.vel) / scene.hot_speed, 0.0, 1.0);
    out.color = mix(slow, fast, t);
    if (in.inv_mass <= 0.0) {
        out.color = vec3<f32>(0.35, 0.35, 0.35);
    }
    out.clip = scene.view_proj * vec4<f32>(in.centre + local, 1.0);
    out.normal = normal;
    return out;
}

fn srgb(linear: vec3<f32>) -> vec3<f32> {
    let c = clamp(linear, vec3<f32>(0.0), vec3<f32>(1.0));
    let lo = 12.92 * c;
    let hi = 1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - 0.055;
    return select(hi, lo, c <= vec3<f32>(0.0031308));
}

fn finish(linear: vec3<f32>) -> vec4<f32> {
    if (scene.encode_srgb == 1u) {
        return vec4<f32>(srgb(linear), 1.0);
    }
    return vec4<f32>(linear, 1.0);
}

@fragment
fn fs_body(in: MeshOut) -> @location(0) vec4<f32> {
    let n = normalize(in.normal);
    let key = max(dot(n, scene.light.xyz), 0.0);
    // A dim light from below-behind keeps the shadowed side readable.
    let fill = max(dot(n, -scene.light.xyz), 0.0) * 0.15;
    return finish(in.color * (0.12 + 0.88 * key + fill));
}

// src/viewer/mesh.rs `LineVertex`.
struct LineIn {
    @location(0) pos: vec3<f32>,
    @location(1) color: vec4<f32>,
}

struct LineOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) color: vec4<f32>,
}

@vertex
fn vs_line(in: LineIn) -> LineOut {
    var out: LineOut;
    out.clip = scene.view_proj * vec4<f32>(in.pos, 1.0);
    out.color = in.color;
    return out;
}

@fragment
fn fs_line(in: LineOut) -> @location(0) vec4<f32> {
    return finish(in.color.rgb);
}
