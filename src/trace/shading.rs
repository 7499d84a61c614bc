//! The CPU twins of `kernels/trace/common.cuh` and of the per-path work of
//! each kernel in `kernels/trace/wavefront.cu`: same names, same arguments in
//! the same order, same arithmetic in the same order, f32 throughout, so the
//! two read side by side. `cpu/` runs these over the queues with rayon.
//!
//! Integer work (the random numbers, the hit keys) is bit-identical to the
//! GPU's; float results can differ in the last bits, because NVRTC contracts
//! multiply-adds into FMAs and `cosf`/`sinf` round differently.

use std::f32::consts::FRAC_1_PI;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use glam::{Vec3, Vec4};

use crate::bvh::{CULL_SLACK, Node};
use crate::trace::bsdf::{
    bsdf_eval, cosine_around, emission_weight, glossy_sample, light_pdf, power_heuristic, reflect, sample_light,
};
use crate::trace::layout::{CameraLayout, Packed, Tri};
use crate::trace::texture::albedo_at;
use crate::trace::{DEAD32, DEAD64, Estimator};

pub const MAT_DIFFUSE: u32 = 0;
pub const MAT_MIRROR: u32 = 1;
pub const MAT_GLASS: u32 = 2;
pub const MAT_GLOSSY: u32 = 3;

/// Path flag: the last bounce was a delta one (or the camera's), so an
/// emitter hit next is counted fully: next-event estimation could not sample
/// it. After a non-delta bounce `dir.w` holds the sampled direction's pdf.
pub const PATH_SPECULAR: u32 = 1;

/// common.cuh `Paths`: structure of arrays, indexed by path id (= pixel).
/// The float4 fields keep the GPU's layout; `dir.w` is the solid-angle pdf of
/// the BSDF sample that chose the ray (0: camera or delta), `shadow_dir.w`
/// the shadow ray's length.
#[derive(Debug, Default)]
pub struct Paths {
    pub origin: Vec<Vec4>,
    pub dir: Vec<Vec4>,
    pub throughput: Vec<Vec4>,
    pub radiance: Vec<Vec4>,
    /// Closest-hit key: float bits of t << 32 | triangle; [`DEAD64`] is a miss.
    /// Atomic because breadth-first leaves of one path merge with `fetch_min`.
    pub hit: Vec<AtomicU64>,
    /// w: the shadow ray's length; 0 when the path has none.
    pub shadow_dir: Vec<Vec4>,
    /// Added when the shadow ray arrives unoccluded.
    pub shadow_radiance: Vec<Vec4>,
    pub occluded: Vec<AtomicU32>,
    pub flags: Vec<u32>,
}

impl Paths {
    pub fn new(pixels: usize) -> Self {
        Paths {
            origin: vec![Vec4::ZERO; pixels],
            dir: vec![Vec4::ZERO; pixels],
            throughput: vec![Vec4::ZERO; pixels],
            radiance: vec![Vec4::ZERO; pixels],
            hit: (0..pixels).map(|_| AtomicU64::new(DEAD64)).collect(),
            shadow_dir: vec![Vec4::ZERO; pixels],
            shadow_radiance: vec![Vec4::ZERO; pixels],
            occluded: (0..pixels).map(|_| AtomicU32::new(0)).collect(),
            flags: vec![0; pixels],
        }
    }
}

/// One path's state, borrowed for writing: what a GPU thread reaches through
/// `Paths` and its path id.
pub struct PathMut<'a> {
    pub origin: &'a mut Vec4,
    pub dir: &'a mut Vec4,
    pub throughput: &'a mut Vec4,
    pub radiance: &'a mut Vec4,
    pub hit: &'a AtomicU64,
    pub shadow_dir: &'a mut Vec4,
    pub shadow_radiance: &'a mut Vec4,
    pub occluded: &'a AtomicU32,
    pub flags: &'a mut u32,
}

#[inline]
fn f3(a: [f32; 3]) -> Vec3 {
    Vec3::from(a)
}

#[inline]
fn f4(a: Vec3, w: f32) -> Vec4 {
    a.extend(w)
}

/// common.cuh `normalize`: a times the reciprocal of its length, as the GPU rounds it.
#[inline]
pub fn normalize(a: Vec3) -> Vec3 {
    a * (1.0 / a.dot(a).sqrt())
}

#[inline]
fn max3(a: Vec3) -> f32 {
    a.x.max(a.y.max(a.z))
}

/// PCG hash (Jarzynski & Olano 2020), in the GPU's wrapping u32 arithmetic.
#[inline]
pub fn pcg(v: u32) -> u32 {
    let s = v.wrapping_mul(747796405).wrapping_add(2891336453);
    let w = ((s >> ((s >> 28) + 4)) ^ s).wrapping_mul(277803737);
    (w >> 22) ^ w
}

/// A uniform number in [0, 1) that depends only on (pixel, sample, bounce,
/// dimension, seed), never on the path's queue slot: this is what makes every
/// compaction algorithm render the same image. Bit-identical to the GPU's.
#[inline]
pub fn rnd(pixel: u32, sample: u32, bounce: u32, dim: u32, seed: u32) -> f32 {
    let h = pcg(seed ^ pcg(pixel ^ pcg(sample ^ pcg(bounce.wrapping_mul(64).wrapping_add(dim)))));
    (h >> 8) as f32 * (1.0 / 16777216.0)
}

/// Entry distance of the ray into the box if it enters before tmax, else -1;
/// the exit stretched by [`CULL_SLACK`] as on the GPU (common.cuh `hit_box`),
/// so a tie at the closest hit's t is never culled. `f32::min`/`max` ignore a
/// NaN operand as `fminf`/`fmaxf` do.
#[inline]
pub fn hit_box(n: &Node, o: Vec3, inv: Vec3, tmax: f32) -> f32 {
    let (tx0, tx1) = ((n.min[0] - o.x) * inv.x, (n.max[0] - o.x) * inv.x);
    let (ty0, ty1) = ((n.min[1] - o.y) * inv.y, (n.max[1] - o.y) * inv.y);
    let (tz0, tz1) = ((n.min[2] - o.z) * inv.z, (n.max[2] - o.z) * inv.z);
    let t0 = tx0.min(tx1).max(ty0.min(ty1)).max(tz0.min(tz1).max(0.0));
    let t1 = tx0.max(tx1).min(ty0.max(ty1)).min(tz0.max(tz1).min(tmax));
    if t0 <= t1 * CULL_SLACK { t0 } else { -1.0 }
}

/// Möller-Trumbore: `(t, u, v)` of a hit in front of the origin. Degenerate
/// triangles were dropped at load, so only det == 0 (a ray in the triangle's
/// plane) is rejected. Rejections are tested as the GPU tests them, so a NaN
/// passes the same ones there and here.
#[inline]
#[allow(clippy::manual_range_contains)] // compared as the kernel compares
pub fn hit_tri(tr: &Tri, o: Vec3, d: Vec3) -> Option<(f32, f32, f32)> {
    let (e1, e2) = (f3(tr.e1), f3(tr.e2));
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - f3(tr.v0);
    let u = s.dot(p) * inv;
    if u < 0.0 || u > 1.0 {
        return None;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(q) * inv;
    // Finite: a hit at infinity has no point to shade.
    (t > 0.0 && t < f32::INFINITY).then_some((t, u, v))
}

/// Hits order by (t, triangle), so the closest hit is unique and both
/// traversal modes find the same one.
#[inline]
pub fn hit_key(t: f32, tri: u32) -> u64 {
    ((t.to_bits() as u64) << 32) | tri as u64
}

#[inline]
pub fn key_dist(key: u64, none: f32) -> f32 {
    if key == DEAD64 { none } else { f32::from_bits((key >> 32) as u32) }
}

#[inline]
pub fn inv_dir(d: Vec3) -> Vec3 {
    Vec3::new(1.0 / d.x, 1.0 / d.y, 1.0 / d.z)
}

/// Camera rays for one sample: path i is pixel `base + i` of the image.
/// `trace_camera` for one path (the engine writes `queue[i] = i`).
#[allow(clippy::too_many_arguments)] // the kernel's arguments, in its order
pub fn trace_camera(
    p: PathMut<'_>,
    cam: &CameraLayout,
    width: u32,
    height: u32,
    base: u32,
    sample: u32,
    seed: u32,
    i: u32,
) {
    let pixel = base.wrapping_add(i);
    let x = ((pixel % width) as f32 + rnd(pixel, sample, 0, 60, seed)) / width as f32;
    let y = ((pixel / width) as f32 + rnd(pixel, sample, 0, 61, seed)) / height as f32;
    let d = normalize(f3(cam.forward) + f3(cam.right) * (2.0 * x - 1.0) + f3(cam.up) * (1.0 - 2.0 * y));
    *p.origin = f4(f3(cam.origin), 0.0);
    *p.dir = f4(d, 0.0);
    *p.throughput = Vec4::new(1.0, 1.0, 1.0, 0.0);
    *p.radiance = Vec4::ZERO;
    *p.flags = PATH_SPECULAR; // an emitter seen directly counts
}

/// Triangles [first, first + count) against the ray: the closest-hit key, or
/// (any_hit) whether one lies before tmax. A closest-hit candidate at exactly
/// tmax (the best t so far) still competes on its index, so ties resolve the
/// same whatever order leaves are visited in.
#[inline]
pub fn leaf(s: &Packed, n: &Node, o: Vec3, d: Vec3, tmax: f32, any_hit: bool, best: &mut u64) -> bool {
    leaf_range(&s.tris, n.first..n.first + n.count, o, d, tmax, any_hit, best)
}

/// [`leaf`] over `tris[range]` (a binary leaf's, or a wide leaf's of
/// `Packed::wide_tris`): keys take each triangle's BVH position (`pad0`).
#[inline]
pub fn leaf_range(
    tris: &[Tri],
    range: std::ops::Range<u32>,
    o: Vec3,
    d: Vec3,
    tmax: f32,
    any_hit: bool,
    best: &mut u64,
) -> bool {
    for k in range {
        let tri = &tris[k as usize];
        if let Some((t, _, _)) = hit_tri(tri, o, d)
            && (t < tmax || (!any_hit && t == tmax))
        {
            if any_hit {
                return true;
            }
            let key = hit_key(t, tri.pad0);
            if key < *best {
                *best = key;
            }
        }
    }
    false
}

/// The ray a traversal follows: the path's ray to infinity, or its shadow ray
/// (None when the path cast none).
#[inline]
pub(super) fn ray(p: &Paths, path: usize, shadow: bool) -> Option<(Vec3, Vec3, f32)> {
    let o = p.origin[path].truncate();
    if shadow {
        let sd = p.shadow_dir[path];
        (sd.w > 0.0).then_some((o, sd.truncate(), sd.w))
    } else {
        Some((o, p.dir[path].truncate(), f32::INFINITY))
    }
}

/// Depth-first traversal with a per-ray stack, nearer child first: the
/// baseline. Closest hit into `p.hit`, or (shadow) the shadow ray's occlusion.
/// `trace_depth_first` for one live queue entry; `stack` is scratch (the GPU's
/// holds 64 entries, this one grows).
pub fn trace_depth_first(s: &Packed, p: &Paths, path: u32, shadow: bool, stack: &mut Vec<u32>) {
    let Some((o, d, tmax)) = ray(p, path as usize, shadow) else { return };
    let inv = inv_dir(d);
    let mut best = DEAD64;
    let mut occluded = false;
    stack.clear();
    if hit_box(&s.nodes[0], o, inv, tmax) >= 0.0 {
        stack.push(0);
    }
    while let Some(top) = stack.pop() {
        let nd = &s.nodes[top as usize];
        let limit = key_dist(best, tmax);
        if nd.count > 0 {
            if leaf(s, nd, o, d, limit, shadow, &mut best) {
                occluded = true;
                break;
            }
            continue;
        }
        let t0 = hit_box(&s.nodes[nd.first as usize], o, inv, limit);
        let t1 = hit_box(&s.nodes[nd.first as usize + 1], o, inv, limit);
        // Push the farther child first so the nearer is taken next.
        if t0 >= 0.0 && t1 >= 0.0 {
            let near0 = t0 <= t1;
            stack.push(if near0 { nd.first + 1 } else { nd.first });
            stack.push(if near0 { nd.first } else { nd.first + 1 });
        } else if t0 >= 0.0 {
            stack.push(nd.first);
        } else if t1 >= 0.0 {
            stack.push(nd.first + 1);
        }
    }
    if shadow {
        p.occluded[path as usize].store(occluded as u32, Relaxed);
    } else {
        p.hit[path as usize].store(best, Relaxed);
    }
}

/// Breadth-first, level 0: the item (path, root) if the queued path's ray
/// enters the root's box, dead otherwise. Resets the per-path result.
/// `trace_bf_init` for one queue entry.
pub fn trace_bf_init(s: &Packed, p: &Paths, path: u32, shadow: bool) -> u64 {
    if path == DEAD32 {
        return DEAD64;
    }
    let i = path as usize;
    if shadow {
        p.occluded[i].store(0, Relaxed);
    } else {
        p.hit[i].store(DEAD64, Relaxed);
    }
    match ray(p, i, shadow) {
        Some((o, d, tmax)) if hit_box(&s.nodes[0], o, inv_dir(d), tmax) >= 0.0 => (path as u64) << 32,
        _ => DEAD64,
    }
}

/// wavefront.cu `DESCEND_STACK`: a descent of at most `MAX_DESCEND` levels
/// keeps at most one pending sibling per level plus the node in hand.
pub const DESCEND_STACK: usize = 8;

/// Breadth-first, one level, one frontier item: descends `descend` BVH levels
/// below the item's node, nearer child first, culling boxes the ray enters
/// only past the path's closest hit so far. A leaf met on the way is
/// intersected at once and merges its hit with an atomic min on the key (a
/// shadow ray's blocker sets the occlusion and ends the item), which keeps the
/// result independent of the order items run in; an internal node reached at
/// depth `descend` goes to the slot of `out` (2^descend slots) named by its
/// left/right turns, every other slot is dead. Returns the live slots.
/// `trace_bf_expand` for one item.
pub fn trace_bf_expand(s: &Packed, p: &Paths, item: u64, shadow: bool, descend: u32, out: &mut [u64]) -> u32 {
    out.fill(DEAD64);
    if item == DEAD64 {
        return 0;
    }
    let path = (item >> 32) as u32;
    let i = path as usize;
    let o = p.origin[i].truncate();
    // Relaxed loads: the hit and the occlusion only ever tighten, so a stale
    // value culls less but never wrongly; the stage's end (rayon's join)
    // publishes the final values before anyone reads them.
    let (d, limit) = if shadow {
        // Another item of this path may have found a blocker already.
        if p.occluded[i].load(Relaxed) != 0 {
            return 0;
        }
        let sd = p.shadow_dir[i];
        (sd.truncate(), sd.w)
    } else {
        (p.dir[i].truncate(), key_dist(p.hit[i].load(Relaxed), f32::INFINITY))
    };
    let inv = inv_dir(d);
    let base = (path as u64) << 32;
    let mut best = DEAD64;
    let mut live = 0;
    // (node, depth below the item, turns taken: bit per level, first turn highest)
    let mut stack = [(0u32, 0u32, 0u32); DESCEND_STACK];
    stack[0] = (item as u32, 0, 0);
    let mut sp = 1;
    while sp > 0 {
        sp -= 1;
        let (node, depth, turns) = stack[sp];
        let nd = &s.nodes[node as usize];
        let lim = key_dist(best, limit);
        if nd.count > 0 {
            if leaf(s, nd, o, d, lim, shadow, &mut best) {
                p.occluded[i].store(1, Relaxed);
                out.fill(DEAD64);
                return 0;
            }
            continue;
        }
        if depth == descend {
            out[turns as usize] = base | node as u64;
            live += 1;
            continue;
        }
        let t0 = hit_box(&s.nodes[nd.first as usize], o, inv, lim);
        let t1 = hit_box(&s.nodes[nd.first as usize + 1], o, inv, lim);
        let (c0, c1) = ((nd.first, depth + 1, 2 * turns), (nd.first + 1, depth + 1, 2 * turns + 1));
        // Push the farther child first so the nearer is taken next.
        if t0 >= 0.0 && t1 >= 0.0 {
            let near0 = t0 <= t1;
            stack[sp] = if near0 { c1 } else { c0 };
            stack[sp + 1] = if near0 { c0 } else { c1 };
            sp += 2;
        } else if t0 >= 0.0 {
            stack[sp] = c0;
            sp += 1;
        } else if t1 >= 0.0 {
            stack[sp] = c1;
            sp += 1;
        }
    }
    if !shadow && best != DEAD64 {
        p.hit[i].fetch_min(best, Relaxed);
    }
    live
}

/// What shading one path decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shaded {
    pub alive: bool,
    pub shadow: bool,
}

/// One vertex of one path: the emission found (weighted by `estimator`),
/// then, below `max_bounces`, a next-event shadow ray on diffuse and glossy
/// surfaces, the scattered ray and Russian roulette. Stage `max_bounces` is
/// the (max_bounces + 1)-th: it only counts the emission or the environment
/// the last scattered ray found (pbrt-v4's maxdepth).
#[allow(clippy::too_many_arguments)] // the kernel's arguments, in its order
pub fn shade_one(
    s: &Packed,
    p: PathMut<'_>,
    path: u32,
    sample: u32,
    bounce: u32,
    max_bounces: u32,
    estimator: Estimator,
    seed: u32,
    base: u32,
) -> Shaded {
    // Random numbers follow the pixel, not the path slot, so shards sum to the whole image.
    let pixel = base.wrapping_add(path);
    let mut out = Shaded::default();
    let mut throughput = p.throughput.truncate();
    let mut radiance = p.radiance.truncate();
    let key = p.hit.load(Relaxed);
    *p.shadow_dir = Vec4::ZERO;
    if key == DEAD64 {
        // escaped: the environment is never sampled by next-event estimation
        *p.radiance = f4(radiance + throughput * f3(s.env), 0.0);
        return out;
    }
    let (o, d) = (p.origin.truncate(), p.dir.truncate());
    let pdf_bsdf = p.dir.w; // the solid-angle pdf that chose d; 0 after the camera or a delta bounce
    let k = key as u32;
    let tr = &s.tris[k as usize];
    let m = &s.materials[tr.material as usize];
    // Again, for the barycentrics: the traversal found this hit with the same
    // arithmetic, so it hits again.
    let (_, u, v) = hit_tri(tr, o, d).unwrap_or_default();
    let t = key_dist(key, 0.0);
    let x = o + d * t;
    let mut ng = normalize(f3(tr.e1).cross(f3(tr.e2)));
    let nv = &s.normals[9 * k as usize..9 * k as usize + 9];
    let vn = |j: usize| Vec3::new(nv[j], nv[j + 1], nv[j + 2]);
    let mut ns = normalize(vn(0) * (1.0 - u - v) + vn(3) * u + vn(6) * v);
    // Emitters emit on the side e1×e2 points to (counter-clockwise winding) only.
    let cos_light = -ng.dot(d);
    let front = cos_light > 0.0;
    if !front {
        ng = -ng;
        ns = -ns;
    }
    if ns.dot(d) >= 0.0 {
        ns = ng; // a shading normal facing away would leak light
    }
    if m.emissive != 0 && front {
        let le = f3(m.emission);
        let w = emission_weight(s, le, *p.flags, pdf_bsdf, t, cos_light, estimator);
        radiance += throughput * le * w;
    }
    if bounce >= max_bounces {
        *p.radiance = f4(radiance, 0.0);
        return out;
    }

    let albedo = albedo_at(s, m, k, u, v);
    let wo = -d;
    let delta = m.kind == MAT_MIRROR || m.kind == MAT_GLASS;
    if !delta && estimator != Estimator::Bsdf && !s.light_tris.is_empty() {
        // next-event estimation: one point on one emitter, by power
        let (r, r1, r2) = (
            rnd(pixel, sample, bounce, 0, seed),
            rnd(pixel, sample, bounce, 1, seed),
            rnd(pixel, sample, bounce, 2, seed),
        );
        let (lp, nl, le) = sample_light(s, r, r1, r2);
        let xo = x + ng * s.eps;
        let mut w = lp - xo;
        let dist2 = w.dot(w);
        let dist = dist2.sqrt();
        w *= 1.0 / dist;
        // cl > 0: the shading point sees the emitter's lit side
        let (cx, cl) = (ns.dot(w), -nl.dot(w));
        if cx > 0.0 && cl > 0.0 && ng.dot(w) > 0.0 {
            let pdf_light = light_pdf(s, le) * dist2 / cl;
            let (f, pdf_b) = bsdf_eval(m, albedo, ns, wo, w);
            let mis = if estimator == Estimator::Mis { power_heuristic(pdf_light, pdf_b) } else { 1.0 };
            *p.shadow_dir = f4(w, dist * (1.0 - 1e-4));
            *p.shadow_radiance = f4(throughput * f * le * (mis / pdf_light), 0.0);
            out.shadow = true;
        }
    }
    let wi;
    let mut weight = albedo; // f·cos / pdf of the sampled direction
    let mut pdf = 0.0; // its solid-angle pdf; 0 for a delta bounce
    let mut above = true; // the new ray leaves on the side the ray came from
    if m.kind == MAT_DIFFUSE {
        wi = cosine_around(ns, rnd(pixel, sample, bounce, 3, seed), rnd(pixel, sample, bounce, 4, seed));
        pdf = ns.dot(wi).max(0.0) * FRAC_1_PI;
    } else if m.kind == MAT_GLOSSY {
        (wi, weight, pdf) =
            glossy_sample(m, ns, wo, rnd(pixel, sample, bounce, 3, seed), rnd(pixel, sample, bounce, 4, seed));
    } else if m.kind == MAT_MIRROR {
        wi = reflect(d, ns);
    } else {
        // glass: reflect or refract by Fresnel (Schlick)
        let eta = if front { 1.0 / m.ior } else { m.ior };
        let cosi = -d.dot(ns);
        let sin2t = eta * eta * (1.0 - cosi * cosi);
        let mut r0 = (1.0 - m.ior) / (1.0 + m.ior);
        r0 = r0 * r0;
        let c = 1.0 - cosi;
        let fresnel = r0 + (1.0 - r0) * c * c * c * c * c;
        if sin2t >= 1.0 || rnd(pixel, sample, bounce, 5, seed) < fresnel {
            wi = reflect(d, ns);
        } else {
            wi = normalize(d * eta + ns * (eta * cosi - (1.0 - sin2t).sqrt()));
            above = false;
        }
    }
    throughput *= weight;
    let mut alive = max3(weight) > 0.0 && if above { wi.dot(ng) > 0.0 } else { wi.dot(ng) < 0.0 };
    if alive && bounce >= 3 {
        // Russian roulette
        let q = max3(throughput).min(0.95);
        if rnd(pixel, sample, bounce, 6, seed) >= q {
            alive = false;
        } else {
            throughput *= 1.0 / q;
        }
    }
    *p.radiance = f4(radiance, 0.0);
    *p.throughput = f4(throughput, 0.0);
    *p.origin = f4(x + ng * if above { s.eps } else { -s.eps }, 0.0);
    *p.dir = f4(wi, pdf);
    *p.flags = if delta { PATH_SPECULAR } else { 0 };
    out.alive = alive;
    out
}

/// Next-event estimation, last step: an unoccluded shadow ray adds its light.
/// `trace_nee` for one live queue entry.
pub fn trace_nee(p: PathMut<'_>) {
    if p.shadow_dir.w <= 0.0 || p.occluded.load(Relaxed) != 0 {
        return;
    }
    let (l, add) = (*p.radiance, *p.shadow_radiance);
    *p.radiance = Vec4::new(l.x + add.x, l.y + add.y, l.z + add.z, 0.0);
}

/// The sample's radiance into the pixel's sum. `trace_accumulate` for one pixel.
#[inline]
pub fn trace_accumulate(sum: &mut [f32; 4], l: Vec4) {
    *sum = [sum[0] + l.x, sum[1] + l.y, sum[2] + l.z, sum[3] + 1.0];
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f32::consts::TAU;

    /// Reference values from an independent u32 implementation (Python,
    /// masking to 32 bits), so a slip in the wrapping arithmetic shows.
    #[test]
    fn pcg_and_rnd_match_the_reference_values() {
        assert_eq!([0, 1, u32::MAX, 123456789].map(pcg), [129708002, 2831084092, 3861530882, 4272394698]);
        // rnd is a 24-bit integer over 2^24: compare the integers.
        let bits = |r: f32| r * 16777216.0;
        assert_eq!(bits(rnd(0, 0, 0, 0, 0)), 9253448.0);
        assert_eq!(bits(rnd(1234, 5, 3, 6, 42)), 14613819.0);
        assert_eq!(bits(rnd(0xffff_fffe, 1000, 63, 61, 0xdead_beef)), 11500680.0);
    }

    /// The GPU's literals 6.28318530718f and 0.318309886f round to these.
    #[test]
    fn constants_match_the_kernel_literals() {
        assert_eq!(TAU.to_bits(), 0x40c9_0fdb);
        assert_eq!(FRAC_1_PI.to_bits(), 0x3ea2_f983);
    }
}
