// The BSDFs, emitter sampling and multiple-importance weights of the shade
// stage (wavefront.cu). CPU twin: src/trace/bsdf.rs, same names, same
// arithmetic in the same order.
//
// wo points away from the surface towards where the ray came from, wi towards
// where light arrives from; n is the shading normal, turned to wo's side. An
// eval returns f * cos(n, wi) and the solid-angle pdf of sampling wi.
//
// Glossy: Trowbridge-Reitz (GGX) reflection, alpha = roughness, Schlick's
// Fresnel with F0 = albedo, Smith's height-correlated G2 = 1 / (1 + L(wo) +
// L(wi)), sampled by visible normals (Heitz 2018, JCGT 7(4)): weight
// F * G2 / G1(wo), pdf G1(wo) * D(h) / (4 cos(n, wo)).
#pragma once
#include "common.cuh"

// The smallest GGX alpha used: roughness 0 would make D a Dirac delta.
#define ALPHA_MIN 1e-3f
#define TRACE_PI_INV 0.318309886f
#define TRACE_TAU 6.28318530718f

// Rec. 709 luminance: what lights are picked in proportion to.
__device__ __forceinline__ float luminance(float3 c) { return 0.2126f * c.x + 0.7152f * c.y + 0.0722f * c.z; }

__device__ __forceinline__ float3 reflect(float3 d, float3 n) { return d - n * (2.0f * dot(d, n)); }

// Two unit vectors that make (bx, by, n) an orthonormal frame.
__device__ __forceinline__ void basis(float3 n, float3* bx, float3* by) {
    float3 t = fabsf(n.x) > 0.9f ? make_float3(0.0f, 1.0f, 0.0f) : make_float3(1.0f, 0.0f, 0.0f);
    *bx = normalize(cross(t, n));
    *by = cross(n, *bx);
}

// A direction around n with density cos / pi.
__device__ __forceinline__ float3 cosine_around(float3 n, float r1, float r2) {
    float phi = TRACE_TAU * r1;
    float r = sqrtf(r2);
    float3 bx, by;
    basis(n, &bx, &by);
    return normalize(bx * (r * cosf(phi)) + by * (r * sinf(phi)) + n * sqrtf(fmaxf(0.0f, 1.0f - r2)));
}

// The power heuristic (beta = 2), a^2 / (a^2 + b^2) written as 1 / (1 + (b/a)^2)
// so large pdfs cannot overflow the squares. 0 when a is 0.
__device__ __forceinline__ float power_heuristic(float a, float b) {
    if (a <= 0.0f) return 0.0f;
    float r = b / a;
    return 1.0f / (1.0f + r * r);
}

// GGX normal distribution D(h) for cos(n, h) = c.
__device__ __forceinline__ float ggx_d(float alpha, float c) {
    float a2 = alpha * alpha;
    float k = c * c * (a2 - 1.0f) + 1.0f;
    return a2 * TRACE_PI_INV / (k * k);
}

// Smith's Lambda for GGX at cos(n, w) = c > 0.
__device__ __forceinline__ float ggx_lambda(float alpha, float c) {
    float c2 = c * c;
    float tan2 = fmaxf(1.0f - c2, 0.0f) / c2;
    return 0.5f * (sqrtf(1.0f + alpha * alpha * tan2) - 1.0f);
}

// Schlick's Fresnel for cos(wo, h) = c.
__device__ __forceinline__ float3 schlick(float3 f0, float c) {
    float m = fmaxf(1.0f - c, 0.0f);
    float m5 = m * m * m * m * m;
    return f0 + (make_float3(1.0f, 1.0f, 1.0f) - f0) * m5;
}

// A microfacet normal of the GGX lobe around n, drawn from the normals
// visible from wo (Heitz 2018, listing 1, in n's frame).
__device__ float3 ggx_sample_h(float alpha, float3 n, float3 wo, float r1, float r2) {
    float3 bx, by;
    basis(n, &bx, &by);
    float3 vh = normalize(make_float3(alpha * dot(wo, bx), alpha * dot(wo, by), dot(wo, n)));
    float lensq = vh.x * vh.x + vh.y * vh.y;
    float3 t1 = lensq > 0.0f ? make_float3(-vh.y, vh.x, 0.0f) * (1.0f / sqrtf(lensq)) : make_float3(1.0f, 0.0f, 0.0f);
    float3 t2 = cross(vh, t1);
    float r = sqrtf(r1);
    float phi = TRACE_TAU * r2;
    float p1 = r * cosf(phi);
    float s = 0.5f * (1.0f + vh.z);
    float p2 = (1.0f - s) * sqrtf(fmaxf(1.0f - p1 * p1, 0.0f)) + s * (r * sinf(phi));
    float3 nh = t1 * p1 + t2 * p2 + vh * sqrtf(fmaxf(1.0f - p1 * p1 - p2 * p2, 0.0f));
    float3 ne = make_float3(alpha * nh.x, alpha * nh.y, fmaxf(nh.z, 0.0f));
    return normalize(bx * ne.x + by * ne.y + n * ne.z);
}

// f * cos(n, wi) and the sampling pdf of a diffuse or glossy material, whose
// albedo (Kd, its texture at the hit, or the glossy F0) the caller looked up
// (nothing for a direction below n).
__device__ float3 bsdf_eval(const Material& m, float3 albedo, float3 n, float3 wo, float3 wi, float* pdf) {
    float ci = dot(n, wi);
    *pdf = 0.0f;
    if (ci <= 0.0f) return make_float3(0.0f, 0.0f, 0.0f);
    if (m.kind == MAT_DIFFUSE) {
        *pdf = ci * TRACE_PI_INV;
        return albedo * (ci * TRACE_PI_INV);
    }
    float alpha = fmaxf(m.roughness, ALPHA_MIN);
    float co = dot(n, wo);
    float3 h = normalize(wo + wi);
    float d = ggx_d(alpha, dot(n, h));
    float lo = ggx_lambda(alpha, co);
    float li = ggx_lambda(alpha, ci);
    float3 f = schlick(albedo, dot(wo, h));
    float g2 = 1.0f / (1.0f + lo + li);
    float g1 = 1.0f / (1.0f + lo);
    *pdf = g1 * d / (4.0f * co);
    return f * (d * g2 / (4.0f * co));
}

// A glossy sample: wi, its weight f * cos / pdf and its pdf; a zero weight
// where the reflected direction falls below n (the path ends there).
__device__ float3 glossy_sample(const Material& m, float3 n, float3 wo, float r1, float r2, float3* weight,
                                float* pdf) {
    float alpha = fmaxf(m.roughness, ALPHA_MIN);
    float3 h = ggx_sample_h(alpha, n, wo, r1, r2);
    float3 wi = reflect(-wo, h);
    float co = dot(n, wo), ci = dot(n, wi);
    *weight = make_float3(0.0f, 0.0f, 0.0f);
    *pdf = 0.0f;
    if (ci <= 0.0f) return wi;
    float lo = ggx_lambda(alpha, co);
    float li = ggx_lambda(alpha, ci);
    float3 f = schlick(f3(m.albedo), dot(wo, h));
    *pdf = 1.0f / (1.0f + lo) * ggx_d(alpha, dot(n, h)) / (4.0f * co);
    *weight = f * ((1.0f + lo) / (1.0f + lo + li));
    return wi;
}

// One emitter point for next-event estimation: a triangle picked with
// probability proportional to luminance(Le) * area (light_cdf), then a uniform
// point on it. Returns the point; *nl gets the unit normal e1 x e2 (the lit
// side), *le the emitted radiance.
__device__ float3 sample_light(const Scene& s, float r, float r1, float r2, float3* nl, float3* le) {
    u32 lo = 0, hi = s.light_count - 1;
    while (lo < hi) {
        u32 mid = (lo + hi) / 2;
        if (s.light_cdf[mid] <= r) lo = mid + 1;
        else hi = mid;
    }
    const Tri& lt = s.tris[s.light_tris[lo]];
    float su = sqrtf(r1);
    float3 lp = f3(lt.v0) + f3(lt.e1) * (su * (1.0f - r2)) + f3(lt.e2) * (su * r2);
    *nl = normalize(cross(f3(lt.e1), f3(lt.e2)));
    *le = f3(s.materials[lt.material].emission);
    return lp;
}

// The area pdf of any emitter point under sample_light: luminance(Le)·area /
// P_total / area = luminance(Le) / P_total, no table lookup needed.
__device__ __forceinline__ float light_pdf(const Scene& s, float3 le) { return luminance(le) / s.light_power; }

// The weight of emission a ray found on an emitter's lit side: full after the
// camera or a delta bounce and under BSDF; nothing under LIGHT (next-event
// estimation counted it); under MIS the power heuristic against the light
// sample's pdf in solid angle at the hit: area pdf * dist^2 / cos at the light.
__device__ __forceinline__ float emission_weight(const Scene& s, float3 le, u32 flags, float pdf_bsdf, float dist,
                                                 float cos_light, u32 estimator) {
    if ((flags & PATH_SPECULAR) || estimator == ESTIMATOR_BSDF) return 1.0f;
    if (estimator == ESTIMATOR_LIGHT) return 0.0f;
    float pdf_light = light_pdf(s, le) * (dist * dist) / cos_light;
    return power_heuristic(pdf_bsdf, pdf_light);
}
