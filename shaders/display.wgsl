// The viewer's image: one fullscreen triangle that copies the path tracer's
// image, already 8-bit sRGB (src/trace/tonemap.rs, on a GPU
// kernels/trace/tonemap.cu), into `rect`, the part of the window left of the
// overlay. The texture is Rgba8Unorm where the target is a unorm format (its
// bytes are written as they are) and Rgba8UnormSrgb where the target is sRGB
// (the load decodes, the target encodes again): the window shows the bytes
// `reap render` writes to a PNG either way.

// Keep in sync with src/viewer/gpu.rs `DisplayUniform`.
struct Display {
    // x, y, width, height of the image in framebuffer pixels.
    rect: vec4<f32>,
    // Outside the image.
    background: vec4<f32>,
}

@group(0) @binding(0) var<uniform> display: Display;
// Texel for texel (nearest), as before the image was 8-bit: textureLoad.
@group(0) @binding(1) var image: texture_2d<f32>;

@vertex
fn vs_main(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    // (0,0), (2,0), (0,2): one triangle that covers the screen.
    let p = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(p * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs_main(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
    let uv = (pos.xy - display.rect.xy) / display.rect.zw;
    if (any(uv < vec2<f32>(0.0)) || any(uv >= vec2<f32>(1.0))) {
        return display.background;
    }
    let size = vec2<f32>(textureDimensions(image));
    let texel = min(vec2<i32>(uv * size), vec2<i32>(size) - vec2<i32>(1));
    return vec4<f32>(textureLoad(image, texel, 0).rgb, 1.0);
}
