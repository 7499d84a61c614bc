//! Texture lookups: the CPU twin of `kernels/trace/texture.cuh`, same names,
//! same arithmetic in the same order.
//!
//! Filtering is bilinear on the linear texels (the loader decoded sRGB
//! once), with repeat addressing. Texel (i, j) covers [i, i + 1) × [j, j + 1)
//! in texel units, so its centre is at (i + 0.5, j + 0.5). OBJ's v runs up
//! from the image's bottom row while image rows run down from the top, so v
//! is flipped: (u, v) = (0, 0) is the bottom-left corner of the image.

use glam::Vec3;

use crate::trace::layout::{Material, NO_TEXTURE, Packed, TextureLayout};

/// Repeat addressing: `i` modulo `n` in [0, n), negative `i` included.
#[inline]
pub fn wrap_texel(i: i32, n: i32) -> i32 {
    ((i % n) + n) % n
}

/// The bilinear mean of the four texels around (u, v), repeating the image
/// in both directions.
#[inline]
pub fn sample_bilinear(texels: &[[f32; 4]], t: &TextureLayout, u: f32, v: f32) -> Vec3 {
    let (w, h) = (t.width as i32, t.height as i32);
    // Only the fraction of a tile matters; taking it first keeps far-off
    // coordinates (and the float-to-int conversion) in range.
    let fv = 1.0 - v;
    let x = (u - u.floor()) * w as f32 - 0.5;
    let y = (fv - fv.floor()) * h as f32 - 0.5;
    let (x0, y0) = (x.floor(), y.floor());
    let (ax, ay) = (x - x0, y - y0);
    let (xa, xb) = (wrap_texel(x0 as i32, w), wrap_texel(x0 as i32 + 1, w));
    let (ya, yb) = (wrap_texel(y0 as i32, h), wrap_texel(y0 as i32 + 1, h));
    let texel = |x: i32, y: i32| {
        let c = texels[t.offset as usize + (y * w + x) as usize];
        Vec3::new(c[0], c[1], c[2])
    };
    let row_a = texel(xa, ya) * (1.0 - ax) + texel(xb, ya) * ax;
    let row_b = texel(xa, yb) * (1.0 - ax) + texel(xb, yb) * ax;
    row_a * (1.0 - ay) + row_b * ay
}

/// The diffuse albedo at barycentrics (u, v) of triangle `k` (BVH order):
/// the material's texture through the interpolated UVs, weights
/// (1 - u - v, u, v) on vertices 0, 1, 2 as for the normals; or its albedo
/// when it has no texture.
#[inline]
pub fn albedo_at(s: &Packed, m: &Material, k: u32, u: f32, v: f32) -> Vec3 {
    if m.texture == NO_TEXTURE {
        return Vec3::from(m.albedo);
    }
    let uv = &s.uvs[6 * k as usize..6 * k as usize + 6];
    let tu = uv[0] * (1.0 - u - v) + uv[2] * u + uv[4] * v;
    let tv = uv[1] * (1.0 - u - v) + uv[3] * u + uv[5] * v;
    sample_bilinear(&s.texels, &s.textures[m.texture as usize], tu, tv)
}
