// The tracer's sums to the viewer's 8-bit sRGB image: kernels/trace/tonemap.cu's
// twin. Keep in sync with src/trace/tonemap.rs (`srgb8`), the one definition
// of the curve. WGSL cannot forbid FMA contraction or ask for IEEE pow, so a
// value on a rounding boundary may land one step off the CPU's.

override WG: u32 = 256u;

struct Tonemap {
    pixels: u32,
    width: u32,
}

@group(0) @binding(0) var<uniform> tm: Tonemap;
@group(0) @binding(1) var<storage, read> sum: array<vec4<f32>>;
@group(0) @binding(2) var target_image: texture_storage_2d<rgba8unorm, write>;

fn srgb8(linear: f32) -> f32 {
    // max before min: a NaN becomes 0, as Rust's `as u8` makes it.
    let c = min(max(linear, 0.0), 1.0);
    var s = 1.055 * pow(c, 1.0 / 2.4) - 0.055;
    if c <= 0.0031308 { s = 12.92 * c; }
    return floor(s * 255.0 + 0.5);
}

// One pixel into the viewer's texture: rgba8unorm stores byte b as b / 255,
// which the store turns back into b exactly.
@compute @workgroup_size(WG)
fn trace_tonemap(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= tm.pixels { return; }
    let s = sum[i];
    // A reciprocal then products, as the CPU twin computes the mean.
    var w = 0.0;
    if s.w > 0.0 { w = 1.0 / s.w; }
    let rgb = vec3<f32>(srgb8(s.x * w), srgb8(s.y * w), srgb8(s.z * w)) / 255.0;
    textureStore(target_image, vec2<u32>(i % tm.width, i / tm.width), vec4<f32>(rgb, 1.0));
}

@group(0) @binding(3) var<storage, read_write> rgba: array<u32>;

// The same pixel as four bytes (R, G, B, A from the lowest), for `rgba8`'s read-back.
@compute @workgroup_size(WG)
fn trace_tonemap_words(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= tm.pixels { return; }
    let s = sum[i];
    var w = 0.0;
    if s.w > 0.0 { w = 1.0 / s.w; }
    rgba[i] = u32(srgb8(s.x * w)) | (u32(srgb8(s.y * w)) << 8u) | (u32(srgb8(s.z * w)) << 16u) | (255u << 24u);
}
