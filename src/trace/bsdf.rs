//! The CPU twin of `kernels/trace/bsdf.cuh`: the BSDFs, emitter sampling and
//! the multiple-importance weights that `shading.rs` combines. Same names,
//! same arithmetic in the same order, f32 throughout.
//!
//! Conventions: `wo` points away from the surface towards where the ray came
//! from, `wi` towards where light arrives from; `n` is the shading normal,
//! already turned to `wo`'s side. An "eval" returns f·cos(n, wi) and the
//! solid-angle pdf with which the sampler would have picked `wi`.
//!
//! The glossy lobe is Trowbridge-Reitz (GGX) microfacet reflection with
//! alpha = the material's roughness, Schlick's Fresnel with F0 = its albedo,
//! and Smith's height-correlated masking-shadowing G2 = 1 / (1 + Λ(wo) + Λ(wi))
//! (Heitz 2014, "Understanding the masking-shadowing function", eq. 99). It is
//! sampled by visible normals (Heitz 2018, "Sampling the GGX distribution of
//! visible normals", JCGT 7(4)), so a sample's weight is F·G2/G1(wo) and its
//! pdf G1(wo)·D(h) / (4·cos(n, wo)).

use std::f32::consts::{FRAC_1_PI, TAU};

use glam::Vec3;

use crate::trace::Estimator;
use crate::trace::layout::{Material, Packed};
use crate::trace::shading::{MAT_DIFFUSE, PATH_SPECULAR, normalize};

/// The smallest GGX alpha used: a roughness of 0 would make D a Dirac
/// delta, which this lobe cannot represent (the OBJ loader clamps at 0.01).
pub const ALPHA_MIN: f32 = 1e-3;

#[inline]
fn f3(a: [f32; 3]) -> Vec3 {
    Vec3::from(a)
}

/// Rec. 709 luminance: what lights are picked in proportion to.
#[inline]
pub fn luminance(c: Vec3) -> f32 {
    0.2126 * c.x + 0.7152 * c.y + 0.0722 * c.z
}

#[inline]
pub fn reflect(d: Vec3, n: Vec3) -> Vec3 {
    d - n * (2.0 * d.dot(n))
}

/// Two unit vectors that make (bx, by, n) an orthonormal frame.
#[inline]
pub fn basis(n: Vec3) -> (Vec3, Vec3) {
    let t = if n.x.abs() > 0.9 { Vec3::Y } else { Vec3::X };
    let bx = normalize(t.cross(n));
    let by = n.cross(bx);
    (bx, by)
}

/// A direction around n with density cos / pi.
#[inline]
pub fn cosine_around(n: Vec3, r1: f32, r2: f32) -> Vec3 {
    let phi = TAU * r1;
    let r = r2.sqrt();
    let (bx, by) = basis(n);
    normalize(bx * (r * phi.cos()) + by * (r * phi.sin()) + n * (1.0 - r2).max(0.0).sqrt())
}

/// The power heuristic with β = 2, a² / (a² + b²), written as 1 / (1 + (b/a)²)
/// so that large pdfs cannot overflow the squares. 0 when a is 0.
#[inline]
pub fn power_heuristic(a: f32, b: f32) -> f32 {
    if a <= 0.0 {
        return 0.0;
    }
    let r = b / a;
    1.0 / (1.0 + r * r)
}

/// GGX normal distribution D(h) for cos(n, h) = c.
#[inline]
pub fn ggx_d(alpha: f32, c: f32) -> f32 {
    let a2 = alpha * alpha;
    let k = c * c * (a2 - 1.0) + 1.0;
    a2 * FRAC_1_PI / (k * k)
}

/// Smith's Λ for GGX at cos(n, w) = c > 0.
#[inline]
pub fn ggx_lambda(alpha: f32, c: f32) -> f32 {
    let c2 = c * c;
    let tan2 = (1.0 - c2).max(0.0) / c2;
    0.5 * ((1.0 + alpha * alpha * tan2).sqrt() - 1.0)
}

/// Schlick's Fresnel for cos(wo, h) = c.
#[inline]
pub fn schlick(f0: Vec3, c: f32) -> Vec3 {
    let m = (1.0 - c).max(0.0);
    let m5 = m * m * m * m * m;
    f0 + (Vec3::ONE - f0) * m5
}

/// A microfacet normal h of the GGX lobe around n, drawn from the normals
/// visible from wo (Heitz 2018, listing 1, in n's frame).
pub fn ggx_sample_h(alpha: f32, n: Vec3, wo: Vec3, r1: f32, r2: f32) -> Vec3 {
    let (bx, by) = basis(n);
    let vh = normalize(Vec3::new(alpha * wo.dot(bx), alpha * wo.dot(by), wo.dot(n)));
    let lensq = vh.x * vh.x + vh.y * vh.y;
    let t1 = if lensq > 0.0 { Vec3::new(-vh.y, vh.x, 0.0) * (1.0 / lensq.sqrt()) } else { Vec3::X };
    let t2 = vh.cross(t1);
    let r = r1.sqrt();
    let phi = TAU * r2;
    let p1 = r * phi.cos();
    let s = 0.5 * (1.0 + vh.z);
    let p2 = (1.0 - s) * (1.0 - p1 * p1).max(0.0).sqrt() + s * (r * phi.sin());
    let nh = t1 * p1 + t2 * p2 + vh * (1.0 - p1 * p1 - p2 * p2).max(0.0).sqrt();
    let ne = Vec3::new(alpha * nh.x, alpha * nh.y, nh.z.max(0.0));
    normalize(bx * ne.x + by * ne.y + n * ne.z)
}

/// f·cos(n, wi) and the sampling pdf of a diffuse or glossy material, whose
/// albedo (Kd, its texture at the hit, or the glossy F0) the caller looked up
/// (nothing for a direction below n).
pub fn bsdf_eval(m: &Material, albedo: Vec3, n: Vec3, wo: Vec3, wi: Vec3) -> (Vec3, f32) {
    let ci = n.dot(wi);
    if ci <= 0.0 {
        return (Vec3::ZERO, 0.0);
    }
    if m.kind == MAT_DIFFUSE {
        return (albedo * (ci * FRAC_1_PI), ci * FRAC_1_PI);
    }
    let alpha = m.roughness.max(ALPHA_MIN);
    let co = n.dot(wo);
    let h = normalize(wo + wi);
    let d = ggx_d(alpha, n.dot(h));
    let lo = ggx_lambda(alpha, co);
    let li = ggx_lambda(alpha, ci);
    let f = schlick(albedo, wo.dot(h));
    let g2 = 1.0 / (1.0 + lo + li);
    let g1 = 1.0 / (1.0 + lo);
    (f * (d * g2 / (4.0 * co)), g1 * d / (4.0 * co))
}

/// A glossy sample: (wi, f·cos/pdf, pdf); a zero weight where the reflected
/// direction falls below n (the path ends there).
pub fn glossy_sample(m: &Material, n: Vec3, wo: Vec3, r1: f32, r2: f32) -> (Vec3, Vec3, f32) {
    let alpha = m.roughness.max(ALPHA_MIN);
    let h = ggx_sample_h(alpha, n, wo, r1, r2);
    let wi = reflect(-wo, h);
    let (co, ci) = (n.dot(wo), n.dot(wi));
    if ci <= 0.0 {
        return (wi, Vec3::ZERO, 0.0);
    }
    let lo = ggx_lambda(alpha, co);
    let li = ggx_lambda(alpha, ci);
    let f = schlick(f3(m.albedo), wo.dot(h));
    let pdf = 1.0 / (1.0 + lo) * ggx_d(alpha, n.dot(h)) / (4.0 * co);
    (wi, f * ((1.0 + lo) / (1.0 + lo + li)), pdf)
}

/// One emitter point for next-event estimation: a triangle picked with
/// probability ∝ luminance(Le)·area (the CDF in `light_cdf`), then a uniform
/// point on it. Returns (point, unit normal e1×e2 — its lit side —, Le).
pub fn sample_light(s: &Packed, r: f32, r1: f32, r2: f32) -> (Vec3, Vec3, Vec3) {
    let (mut lo, mut hi) = (0usize, s.light_tris.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if s.light_cdf[mid] <= r {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let lt = &s.tris[s.light_tris[lo] as usize];
    let su = r1.sqrt();
    let lp = f3(lt.v0) + f3(lt.e1) * (su * (1.0 - r2)) + f3(lt.e2) * (su * r2);
    let nl = normalize(f3(lt.e1).cross(f3(lt.e2)));
    (lp, nl, f3(s.materials[lt.material as usize].emission))
}

/// The area pdf of any emitter point under [`sample_light`]: P(triangle) /
/// area = luminance(Le)·area / P_total / area = luminance(Le) / P_total, so
/// an emitter hit needs no table lookup.
#[inline]
pub fn light_pdf(s: &Packed, le: Vec3) -> f32 {
    luminance(le) / s.light_power
}

/// The weight of emission a ray found on an emitter's lit side: full after
/// the camera or a delta bounce (no light sample could have found it) and
/// under `Bsdf`; nothing under `Light` (next-event estimation counted it);
/// under `Mis` the power heuristic against the light sample's pdf, converted
/// to solid angle at the hit: area pdf · dist² / cos at the light.
#[inline]
pub fn emission_weight(
    s: &Packed,
    le: Vec3,
    flags: u32,
    pdf_bsdf: f32,
    dist: f32,
    cos_light: f32,
    estimator: Estimator,
) -> f32 {
    if (flags & PATH_SPECULAR) != 0 || estimator == Estimator::Bsdf {
        return 1.0;
    }
    if estimator == Estimator::Light {
        return 0.0;
    }
    let pdf_light = light_pdf(s, le) * (dist * dist) / cos_light;
    power_heuristic(pdf_bsdf, pdf_light)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::shading::MAT_GLOSSY;

    fn glossy(roughness: f32) -> Material {
        Material { albedo: [1.0; 3], kind: MAT_GLOSSY, roughness, ..Default::default() }
    }

    /// The sampler and eval describe the same lobe: at every sampled
    /// direction weight = f·cos / pdf, and eval's pdf is the sampler's.
    #[test]
    fn glossy_sample_agrees_with_eval() {
        let n = normalize(Vec3::new(0.2, 1.0, -0.1));
        let wo = normalize(Vec3::new(0.7, 0.5, 0.3));
        for roughness in [0.05, 0.3, 0.8] {
            let m = glossy(roughness);
            for k in 0..64 {
                let (r1, r2) = ((k as f32 + 0.5) / 64.0, ((k * 37 % 64) as f32 + 0.5) / 64.0);
                let (wi, weight, pdf) = glossy_sample(&m, n, wo, r1, r2);
                if pdf == 0.0 {
                    continue;
                }
                let (f, p) = bsdf_eval(&m, f3(m.albedo), n, wo, wi);
                assert!((p - pdf).abs() <= 1e-3 * pdf, "roughness {roughness}: pdf {p} vs {pdf}");
                let w = f / p;
                assert!((w - weight).abs().max_element() <= 1e-3, "roughness {roughness}: {w} vs {weight}");
            }
        }
    }

    /// Eval's pdf is the sampler's density: its integral over the upper
    /// hemisphere (a Riemann sum) equals the share of samples that land there
    /// (a stratified grid); for diffuse both are 1. Directions the glossy
    /// sampler reflects below the surface are the difference from 1.
    #[test]
    fn the_pdf_integrates_to_the_sampled_share_above_the_surface() {
        let n = Vec3::Z;
        let wo = normalize(Vec3::new(0.5, 0.0, 0.8));
        let steps = 400;
        for m in [glossy(0.3), glossy(0.7), Material { albedo: [1.0; 3], ..Default::default() }] {
            let mut sum = 0.0f64;
            for i in 0..steps {
                let ct = (i as f32 + 0.5) / steps as f32;
                let st = (1.0 - ct * ct).sqrt();
                for j in 0..2 * steps {
                    let phi = TAU * (j as f32 + 0.5) / (2 * steps) as f32;
                    let wi = Vec3::new(st * phi.cos(), st * phi.sin(), ct);
                    sum += bsdf_eval(&m, f3(m.albedo), n, wo, wi).1 as f64;
                }
            }
            let integral = sum * (1.0 / steps as f64) * (TAU as f64 / (2 * steps) as f64);
            let share = if m.kind == MAT_DIFFUSE {
                1.0
            } else {
                let grid = 256;
                let above = (0..grid * grid)
                    .filter(|k| {
                        let (r1, r2) = ((k / grid) as f32 + 0.5, (k % grid) as f32 + 0.5);
                        glossy_sample(&m, n, wo, r1 / grid as f32, r2 / grid as f32).2 > 0.0
                    })
                    .count();
                above as f64 / (grid * grid) as f64
            };
            assert!(
                (integral - share).abs() < 0.01,
                "kind {} roughness {}: {integral} vs {share}",
                m.kind,
                m.roughness
            );
        }
    }

    #[test]
    fn power_heuristic_is_safe_at_the_extremes() {
        assert_eq!(power_heuristic(0.0, 0.0), 0.0);
        assert_eq!(power_heuristic(f32::MAX, f32::MAX), 0.5);
        assert_eq!(power_heuristic(1.0, 0.0), 1.0);
        assert!((power_heuristic(1.0, 1e30) - 0.0).abs() < 1e-30);
    }
}
