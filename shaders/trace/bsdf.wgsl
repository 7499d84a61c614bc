// The BSDFs, emitter sampling and multiple-importance weights of the shade
// stage: kernels/trace/bsdf.cuh's twin (CPU twin: src/trace/bsdf.rs, same
// names, same arithmetic in the same order). wo points away from the
// surface, wi towards where light arrives from; n is the shading normal.

const ALPHA_MIN: f32 = 1e-3;
const TRACE_PI_INV: f32 = 0.318309886;
const TRACE_TAU: f32 = 6.28318530718;

fn luminance(c: vec3<f32>) -> f32 { return 0.2126 * c.x + 0.7152 * c.y + 0.0722 * c.z; }

fn reflect_about(d: vec3<f32>, n: vec3<f32>) -> vec3<f32> { return d - n * (2.0 * dot(d, n)); }

struct Basis {
    bx: vec3<f32>,
    by: vec3<f32>,
}
// Two unit vectors that make (bx, by, n) an orthonormal frame.
fn basis(n: vec3<f32>) -> Basis {
    let t = select(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), abs(n.x) > 0.9);
    let bx = normalize(cross(t, n));
    return Basis(bx, cross(n, bx));
}

// A direction around n with density cos / pi.
fn cosine_around(n: vec3<f32>, r1: f32, r2: f32) -> vec3<f32> {
    let phi = TRACE_TAU * r1;
    let r = sqrt(r2);
    let b = basis(n);
    return normalize(b.bx * (r * cos(phi)) + b.by * (r * sin(phi)) + n * sqrt(max(0.0, 1.0 - r2)));
}

// The power heuristic (beta = 2) as 1 / (1 + (b/a)^2); 0 when a is 0.
fn power_heuristic(a: f32, b: f32) -> f32 {
    if a <= 0.0 { return 0.0; }
    let r = b / a;
    return 1.0 / (1.0 + r * r);
}

fn ggx_d(alpha: f32, c: f32) -> f32 {
    let a2 = alpha * alpha;
    let k = c * c * (a2 - 1.0) + 1.0;
    return a2 * TRACE_PI_INV / (k * k);
}

fn ggx_lambda(alpha: f32, c: f32) -> f32 {
    let c2 = c * c;
    let tan2 = max(1.0 - c2, 0.0) / c2;
    return 0.5 * (sqrt(1.0 + alpha * alpha * tan2) - 1.0);
}

fn schlick(f0: vec3<f32>, c: f32) -> vec3<f32> {
    let m = max(1.0 - c, 0.0);
    let m5 = m * m * m * m * m;
    return f0 + (vec3<f32>(1.0) - f0) * m5;
}

// A microfacet normal of the GGX lobe around n drawn from the normals visible from wo (Heitz 2018).
fn ggx_sample_h(alpha: f32, n: vec3<f32>, wo: vec3<f32>, r1: f32, r2: f32) -> vec3<f32> {
    let b = basis(n);
    let vh = normalize(vec3<f32>(alpha * dot(wo, b.bx), alpha * dot(wo, b.by), dot(wo, n)));
    let lensq = vh.x * vh.x + vh.y * vh.y;
    var t1 = vec3<f32>(1.0, 0.0, 0.0);
    if lensq > 0.0 { t1 = vec3<f32>(-vh.y, vh.x, 0.0) * (1.0 / sqrt(lensq)); }
    let t2 = cross(vh, t1);
    let r = sqrt(r1);
    let phi = TRACE_TAU * r2;
    let p1 = r * cos(phi);
    let s = 0.5 * (1.0 + vh.z);
    let p2 = (1.0 - s) * sqrt(max(1.0 - p1 * p1, 0.0)) + s * (r * sin(phi));
    let nh = t1 * p1 + t2 * p2 + vh * sqrt(max(1.0 - p1 * p1 - p2 * p2, 0.0));
    let ne = vec3<f32>(alpha * nh.x, alpha * nh.y, max(nh.z, 0.0));
    return normalize(b.bx * ne.x + b.by * ne.y + n * ne.z);
}

struct Eval {
    f: vec3<f32>,  // f * cos(n, wi)
    pdf: f32,
}
// f * cos(n, wi) and the sampling pdf of a diffuse or glossy material.
fn bsdf_eval(m: Material, albedo: vec3<f32>, n: vec3<f32>, wo: vec3<f32>, wi: vec3<f32>) -> Eval {
    let ci = dot(n, wi);
    if ci <= 0.0 { return Eval(vec3<f32>(0.0), 0.0); }
    if m.kind == MAT_DIFFUSE { return Eval(albedo * (ci * TRACE_PI_INV), ci * TRACE_PI_INV); }
    let alpha = max(m.roughness, ALPHA_MIN);
    let co = dot(n, wo);
    let h = normalize(wo + wi);
    let d = ggx_d(alpha, dot(n, h));
    let lo = ggx_lambda(alpha, co);
    let li = ggx_lambda(alpha, ci);
    let f = schlick(albedo, dot(wo, h));
    let g2 = 1.0 / (1.0 + lo + li);
    let g1 = 1.0 / (1.0 + lo);
    return Eval(f * (d * g2 / (4.0 * co)), g1 * d / (4.0 * co));
}

struct Sampled {
    wi: vec3<f32>,
    weight: vec3<f32>,  // f * cos / pdf; zero where wi falls below n
    pdf: f32,
}
fn glossy_sample(m: Material, n: vec3<f32>, wo: vec3<f32>, r1: f32, r2: f32) -> Sampled {
    let alpha = max(m.roughness, ALPHA_MIN);
    let h = ggx_sample_h(alpha, n, wo, r1, r2);
    let wi = reflect_about(-wo, h);
    let co = dot(n, wo);
    let ci = dot(n, wi);
    if ci <= 0.0 { return Sampled(wi, vec3<f32>(0.0), 0.0); }
    let lo = ggx_lambda(alpha, co);
    let li = ggx_lambda(alpha, ci);
    let f = schlick(m.albedo, dot(wo, h));
    let pdf = 1.0 / (1.0 + lo) * ggx_d(alpha, dot(n, h)) / (4.0 * co);
    return Sampled(wi, f * ((1.0 + lo) / (1.0 + lo + li)), pdf);
}

struct LightSample {
    p: vec3<f32>,
    nl: vec3<f32>,  // unit e1 x e2, the lit side
    le: vec3<f32>,
}
// One emitter point: a triangle by power (light_cdf), then a uniform point on it.
fn sample_light(r: f32, r1: f32, r2: f32) -> LightSample {
    var lo = 0u;
    var hi = info.counts.x - 1u;
    // A binary search: at most 32 halvings.
    for (var i = 0u; i < 32u && lo < hi; i++) {
        let mid = (lo + hi) / 2u;
        if swf(info.at_w.w + mid) <= r {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let lt = tri(sw[info.at_w.z + lo]);
    let su = sqrt(r1);
    let lp = lt.v0 + lt.e1 * (su * (1.0 - r2)) + lt.e2 * (su * r2);
    return LightSample(lp, normalize(cross(lt.e1, lt.e2)), material(lt.material).emission);
}

// The area pdf of any emitter point under sample_light.
fn light_pdf(le: vec3<f32>) -> f32 { return luminance(le) / info.light.x; }

// The weight of emission a ray found on an emitter's lit side (bsdf.cuh `emission_weight`).
fn emission_weight(le: vec3<f32>, flags: u32, pdf_bsdf: f32, dist: f32, cos_light: f32, estimator: u32) -> f32 {
    if (flags & PATH_SPECULAR) != 0u || estimator == ESTIMATOR_BSDF { return 1.0; }
    if estimator == ESTIMATOR_LIGHT { return 0.0; }
    let pdf_light = light_pdf(le) * (dist * dist) / cos_light;
    return power_heuristic(pdf_bsdf, pdf_light);
}
