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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::CpuBackend;
    use crate::scene::{Camera, TWO_COLOURS, load_obj, write_textured_square};
    use crate::trace::cpu::CpuEngine;
    use crate::trace::layout::CameraLayout;
    use crate::trace::{Compaction, DESCEND, Engine, RenderSettings, Traversal, render};

    /// A 2×2 texture after a 1-texel one, so the offset is exercised: its top
    /// row holds 0 and 1, its bottom row 2 and 3 (in every channel, scaled
    /// per channel so a swapped channel shows).
    fn two_by_two() -> (Vec<[f32; 4]>, TextureLayout) {
        let texel = |x: f32| [x, 10.0 * x, 100.0 * x, 1.0];
        let texels = vec![texel(-7.0), texel(0.0), texel(1.0), texel(2.0), texel(3.0)];
        (texels, TextureLayout { offset: 1, width: 2, height: 2 })
    }

    fn at(u: f32, v: f32) -> f32 {
        let (texels, t) = two_by_two();
        let c = sample_bilinear(&texels, &t, u, v);
        assert_eq!((c.y, c.z), (10.0 * c.x, 100.0 * c.x), "channels at ({u}, {v})");
        c.x
    }

    #[test]
    fn texel_centres_return_the_texel_with_v_up_from_the_bottom_row() {
        assert_eq!(at(0.25, 0.75), 0.0, "top left");
        assert_eq!(at(0.75, 0.75), 1.0, "top right");
        assert_eq!(at(0.25, 0.25), 2.0, "bottom left");
        assert_eq!(at(0.75, 0.25), 3.0, "bottom right");
    }

    #[test]
    fn between_centres_the_texels_blend_bilinearly() {
        assert_eq!(at(0.5, 0.5), 1.5, "the mean of all four");
        assert_eq!(at(0.5, 0.75), 0.5, "halfway along the top row");
        assert_eq!(at(0.375, 0.25), 2.25, "a quarter of the way along the bottom row");
        assert_eq!(at(0.25, 0.625), 0.5, "a quarter of the way down the left column");
    }

    #[test]
    fn addressing_repeats_past_every_edge_and_below_zero() {
        // Across the left edge: halfway between the right and left columns.
        assert_eq!(at(0.0, 0.75), 0.5);
        // Across the bottom edge (v = 0 is the image's bottom): bottom and top rows.
        assert_eq!(at(0.25, 0.0), 1.0);
        assert_eq!(at(0.0, 0.0), 1.5);
        // Whole tiles away, on both sides, the same texels.
        assert_eq!(at(-0.75, 0.75), 0.0);
        assert_eq!(at(2.25, -0.25), 0.0);
        assert_eq!(at(-3.25, 5.25), 3.0);
        assert_eq!(at(1.5, -1.5), 1.5);
        assert_eq!(wrap_texel(-1, 2), 1);
        assert_eq!(wrap_texel(-5, 3), 1);
        assert_eq!(wrap_texel(7, 3), 1);
    }

    /// A textured diffuse square facing the camera and filling its view, in
    /// a uniform sky of 1 with nothing else: a camera ray hits the square at
    /// bounce 0 and its cosine-sampled ray escapes, bringing albedo × 1
    /// (`max_bounces` 1 counts that escape, as pbrt's maxdepth 1 does). The view covers one tile exactly, so the
    /// image's mean is the texels' mean; with the 2×1 texture and repeat
    /// addressing the left half of the view averages ¾ left + ¼ right texel.
    #[test]
    fn a_textured_square_renders_its_texture_times_the_sky() {
        let dir = write_textured_square("render");
        let mut scene = load_obj(&dir.join("square.obj")).expect("the square loads");
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(scene.environment, glam::Vec3::ONE);
        // From 1 above the tile's centre, a 2·atan(1/2) field of view sees exactly 0..1.
        let vfov_deg = 2.0 * 0.5f32.atan().to_degrees();
        let centre = glam::Vec3::new(0.5, 0.5, 0.0);
        scene.camera = Camera { position: centre + glam::Vec3::Z, target: centre, up: glam::Vec3::Y, vfov_deg };
        let (w, h, spp) = (32, 32, 4);
        let bvh = crate::bvh::build(&scene.triangles);
        let packed = Packed::new(&scene, &bvh);
        let camera = CameraLayout::new(&scene.camera, w, h);
        let mut e = CpuEngine::new(CpuBackend::new(), packed, camera, w, h, 7, 2);
        let s = RenderSettings {
            width: w,
            height: h,
            spp,
            max_bounces: 1,
            estimator: crate::trace::Estimator::Mis,
            traversal: Traversal::DepthFirst,
            compact_paths: Compaction::None,
            compact_frontier: Compaction::None,
            seed: 7,
            first_sample: 0,
            max_frontier: 1 << 20,
            fusion: Default::default(),
            descend: DESCEND,
            block_levels: crate::trace::BlockLevels::Auto,
            group_levels: 0,
            bvh: crate::trace::BVH,
        };
        render(&mut e, &s, |_| {}).expect("the square renders");
        let image = e.image().expect("the image reads back");
        let means: Vec<Vec3> = image.iter().map(|p| Vec3::new(p[0], p[1], p[2]) / p[3]).collect();

        let [left, right] = [scene.textures[0].texels[0], scene.textures[0].texels[1]];
        let expect_near = |pixels: Vec<Vec3>, want: Vec3, what: &str| {
            let n = pixels.len() as f32;
            let mean = pixels.iter().sum::<Vec3>() / n;
            let var = pixels.iter().map(|p| (*p - mean) * (*p - mean)).sum::<Vec3>() / (n - 1.0);
            let se = (var / n).map(f32::sqrt);
            // A floor on the error for a region whose pixels all agree.
            let tolerance = 3.0 * se + Vec3::splat(1e-4);
            assert!((mean - want).abs().cmple(tolerance).all(), "{what}: mean {mean}, want {want} ± {tolerance}");
        };
        expect_near(means.clone(), scene.textures[0].mean(), "the whole view");
        assert!((scene.textures[0].mean() - 0.5 * (left + right)).abs().max_element() < 1e-6);
        let half = |right_half: bool| -> Vec<Vec3> {
            let column = |i: usize| i % w as usize;
            means
                .iter()
                .enumerate()
                .filter(|(i, _)| (column(*i) >= w as usize / 2) == right_half)
                .map(|(_, p)| *p)
                .collect()
        };
        expect_near(half(false), 0.75 * left + 0.25 * right, "the left half");
        expect_near(half(true), 0.25 * left + 0.75 * right, "the right half");
        // The file's left texel is mostly red, its right mostly blue: the channels and sides held.
        assert!(TWO_COLOURS[0][0] > TWO_COLOURS[0][2] && left.x > left.z && right.z > right.x);
    }
}
