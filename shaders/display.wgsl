// The viewer's image: one fullscreen triangle that reads the path tracer's
// per-pixel sums (RGB radiance, A = samples) and writes their mean, clamped
// and sRGB-encoded as `reap render` writes PNGs (src/trace/output.rs `srgb`),
// into `rect`, the part of the window left of the overlay.

// Keep in sync with src/viewer/gpu.rs `DisplayUniform`.
struct Display {
    // x, y, width, height of the image in framebuffer pixels.
    rect: vec4<f32>,
    // Outside the image.
    background: vec4<f32>,
    // 1: encode sRGB here (the target is a linear-unorm format); 0: the target encodes.
    encode_srgb: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> display: Display;
// Rgba32Float is not filterable everywhere: texels are read with textureLoad.
@group(0) @binding(1) var sums: texture_2d<f32>;

@vertex
fn vs_main(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    // (0,0), (2,0), (0,2): one triangle that covers the screen.
    let p = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(p * 2.0 - 1.0, 0.0, 1.0);
}

fn srgb(linear: vec3<f32>) -> vec3<f32> {
    let c = clamp(linear, vec3<f32>(0.0), vec3<f32>(1.0));
    let lo = 12.92 * c;
    let hi = 1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - 0.055;
    return select(hi, lo, c <= vec3<f32>(0.0031308));
}

@fragment
fn fs_main(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
    let uv = (pos.xy - display.rect.xy) / display.rect.zw;
    if (any(uv < vec2<f32>(0.0)) || any(uv >= vec2<f32>(1.0))) {
        return display.background;
    }
    let size = vec2<f32>(textureDimensions(sums));
    let texel = min(vec2<i32>(uv * size), vec2<i32>(size) - vec2<i32>(1));
    let s = textureLoad(sums, texel, 0);
    var mean = vec3<f32>(0.0);
    if (s.a > 0.0) {
        mean = clamp(s.rgb / s.a, vec3<f32>(0.0), vec3<f32>(1.0));
    }
    if (display.encode_srgb == 1u) {
        return vec4<f32>(srgb(mean), 1.0);
    }
    return vec4<f32>(mean, 1.0);
}
