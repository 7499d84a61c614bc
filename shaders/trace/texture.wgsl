// Texture lookups (kernels/trace/texture.cuh's twin; CPU twin:
// src/trace/texture.rs, same names, same arithmetic in the same order).
// Bilinear on linear texels with repeat addressing; v is flipped.

// Repeat addressing: i modulo n in [0, n), negative i included.
fn wrap_texel(i: i32, n: i32) -> i32 { return ((i % n) + n) % n; }

// Texture t's record: first texel (vec4 units past the texels' section), width, height.
fn sample_bilinear(t: u32, u: f32, v: f32) -> vec3<f32> {
    let rec = sc[info.at_a.w + t];
    let w = i32(rec.z);
    let h = i32(rec.w);
    let fv = 1.0 - v;
    let x = (u - floor(u)) * f32(w) - 0.5;
    let y = (fv - floor(fv)) * f32(h) - 0.5;
    let x0 = floor(x);
    let y0 = floor(y);
    let ax = x - x0;
    let ay = y - y0;
    let xa = wrap_texel(i32(x0), w);
    let xb = wrap_texel(i32(x0) + 1, w);
    let ya = wrap_texel(i32(y0), h);
    let yb = wrap_texel(i32(y0) + 1, h);
    let row = info.at_b.x + rec.x;
    let t_aa = bitcast<vec4<f32>>(sc[row + u32(ya * w + xa)]).xyz;
    let t_ab = bitcast<vec4<f32>>(sc[row + u32(ya * w + xb)]).xyz;
    let t_ba = bitcast<vec4<f32>>(sc[row + u32(yb * w + xa)]).xyz;
    let t_bb = bitcast<vec4<f32>>(sc[row + u32(yb * w + xb)]).xyz;
    let row_a = t_aa * (1.0 - ax) + t_ab * ax;
    let row_b = t_ba * (1.0 - ax) + t_bb * ax;
    return row_a * (1.0 - ay) + row_b * ay;
}

// The diffuse albedo at barycentrics (u, v) of triangle k (BVH order).
fn albedo_at(m: Material, k: u32, u: f32, v: f32) -> vec3<f32> {
    if m.texture == NO_TEXTURE { return m.albedo; }
    let uv = info.at_w.y + 6u * k;
    let tu = swf(uv) * (1.0 - u - v) + swf(uv + 2u) * u + swf(uv + 4u) * v;
    let tv = swf(uv + 1u) * (1.0 - u - v) + swf(uv + 3u) * u + swf(uv + 5u) * v;
    return sample_bilinear(m.texture, tu, tv);
}
