// The narrow phase: physics/narrow.rs and physics/manifold.rs, function for
// function (common.cuh says how the two sides are kept bit-identical).
#pragma once
#include "common.cuh"

namespace physics {

// manifold.rs MAX_POINTS and FACE_BIAS.
#define COLLIDE_MAX_POINTS 4
#define COLLIDE_FACE_BIAS 1e-3f

// manifold.rs `Manifold`.
struct Manifold {
    V3 normal;
    float depth;
    V3 points[COLLIDE_MAX_POINTS];
    float depths[COLLIDE_MAX_POINTS];
    u32 count;
};

__device__ __forceinline__ float sign(float x) { return x >= 0.0f ? 1.0f : -1.0f; }

// The midpoint of the closest points of a's edge along axis i and b's along
// axis j (axis k = 6 + 3i + j), the edges that meet across `n`.
__device__ __forceinline__ V3 edge_point(const Body& a, const Axes& ua, const Body& b, const Axes& ub, int k, V3 n) {
    int i = (k - 6) / 3, j = (k - 6) % 3;
    V3 pa = v3(a.pos);
    V3 pb = v3(b.pos);
    for (int m = 0; m < 3; m++) {
        if (m != i) pa = add(pa, scale(ua[m], sign(dot(ua[m], n)) * a.half[m]));
        if (m != j) pb = sub(pb, scale(ub[m], sign(dot(ub[m], n)) * b.half[m]));
    }
    V3 da = ua[i], db = ub[j];
    V3 r = sub(pa, pb);
    float bb = dot(da, db);
    float c = dot(da, r);
    float f = dot(db, r);
    float denom = 1.0f - bb * bb;
    float s = clamp((bb * f - c) / denom, -a.half[i], a.half[i]);
    float u = clamp((f - bb * c) / denom, -b.half[j], b.half[j]);
    return scale(add(add(pa, scale(da, s)), add(pb, scale(db, u))), 0.5f);
}

// Face axis k (a's face for k < 3, b's for 3..6) as the reference face: the
// other box's most opposed face clipped to its sides; the points below it, or
// less than `margin` above, go to `m` (midway between the two surfaces).
__device__ __forceinline__ void clip_faces(const Body& a, const Axes& ua, const Body& b, const Axes& ub, int k,
                                           float margin, Manifold* m) {
    bool on_a = k < 3;
    const Body& rb = on_a ? a : b;
    const Axes& ru = on_a ? ua : ub;
    int i = on_a ? k : k - 3;
    const Body& inc = on_a ? b : a;
    const Axes& iu = on_a ? ub : ua;
    V3 nref = on_a ? m->normal : scale(m->normal, -1.0f);
    V3 centre = add(v3(rb.pos), scale(nref, rb.half[i]));
    int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    int j = 0;
    float most = abs(dot(iu[0], nref));
    for (int q = 1; q < 3; q++) {
        float d = abs(dot(iu[q], nref));
        if (d > most) {
            most = d;
            j = q;
        }
    }
    V3 fc = sub(v3(inc.pos), scale(iu[j], sign(dot(iu[j], nref)) * inc.half[j]));
    int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
    V3 e1 = scale(iu[j1], inc.half[j1]);
    V3 e2 = scale(iu[j2], inc.half[j2]);
    V3 poly[8];
    poly[0] = add(add(fc, e1), e2);
    poly[1] = add(sub(fc, e1), e2);
    poly[2] = sub(sub(fc, e1), e2);
    poly[3] = sub(add(fc, e1), e2);
    int len = 4;
    for (int side = 0; side < 4; side++) {
        int axis = side < 2 ? i1 : i2;
        V3 dir = side % 2 == 0 ? ru[axis] : scale(ru[axis], -1.0f);
        float limit = rb.half[axis];
        V3 out[8];
        int n = 0;
        for (int p = 0; p < len; p++) {
            V3 x = poly[p], y = poly[(p + 1) % len];
            float dx = dot(sub(x, centre), dir) - limit;
            float dy = dot(sub(y, centre), dir) - limit;
            if (dx <= 0.0f && n < 8) out[n++] = x;
            if ((dx <= 0.0f) != (dy <= 0.0f) && n < 8) {
                float s = dx / (dx - dy);
                out[n++] = add(x, scale(sub(y, x), s));
            }
        }
        for (int p = 0; p < n; p++) poly[p] = out[p];
        len = n;
        if (len == 0) return;
    }
    int keep[COLLIDE_MAX_POINTS] = {-1, -1, -1, -1};
    float best[COLLIDE_MAX_POINTS] = {-COLLIDE_INF, -COLLIDE_INF, -COLLIDE_INF, -COLLIDE_INF};
    for (int p = 0; p < len; p++) {
        V3 q = poly[p];
        float under = dot(sub(q, centre), nref);
        if (under >= margin) continue;
        float d1 = dot(q, ru[i1]), d2 = dot(q, ru[i2]);
        float along[COLLIDE_MAX_POINTS] = {d1 + d2, d1 - d2, d2 - d1, -d1 - d2};
        for (int e = 0; e < COLLIDE_MAX_POINTS; e++) {
            if (along[e] > best[e]) {
                best[e] = along[e];
                keep[e] = p;
            }
        }
    }
    for (int e = 0; e < COLLIDE_MAX_POINTS; e++) {
        int p = keep[e];
        bool seen = p < 0;
        for (int f = 0; f < e; f++) seen = seen || keep[f] == p;
        if (seen) continue;
        float under = dot(sub(poly[p], centre), nref);
        u32 c = m->count;
        m->points[c] = sub(poly[p], scale(nref, 0.5f * under));
        m->depths[c] = -under;
        m->count = c + 1;
    }
}

// Separating axes, then the points of contact; false when an axis separates.
__device__ __forceinline__ bool box_box(const Body& a, const Body& b, float margin, Manifold* m) {
    Axes ua = axes(a.rot);
    Axes ub = axes(b.rot);
    V3 t = sub(v3(b.pos), v3(a.pos));
    float face = COLLIDE_INF, edge = COLLIDE_INF;
    int face_axis = 0, edge_axis = 0;
    V3 face_n = v3(0.0f, 1.0f, 0.0f), edge_n = v3(0.0f, 1.0f, 0.0f);
    for (int k = 0; k < 15; k++) {
        V3 l = k < 3 ? ua[k] : k < 6 ? ub[k - 3] : cross(ua[(k - 6) / 3], ub[(k - 6) % 3]);
        if (k >= 6) {
            float len2 = dot(l, l);
            // Parallel edges: the face axes already cover this direction.
            if (len2 < 1e-6f) continue;
            l = scale(l, 1.0f / sqrt(len2));
        }
        float ra = abs(dot(ua[0], l)) * a.half[0] + abs(dot(ua[1], l)) * a.half[1] + abs(dot(ua[2], l)) * a.half[2];
        float rb = abs(dot(ub[0], l)) * b.half[0] + abs(dot(ub[1], l)) * b.half[1] + abs(dot(ub[2], l)) * b.half[2];
        float s = dot(t, l);
        float o = ra + rb - abs(s);
        if (o <= -margin) return false;
        V3 n = s < 0.0f ? scale(l, -1.0f) : l;
        if (k < 6 && o < face) {
            face = o;
            face_axis = k;
            face_n = n;
        } else if (k >= 6 && o < edge) {
            edge = o;
            edge_axis = k;
            edge_n = n;
        }
    }
    m->normal = face_n;
    m->depth = face;
    m->count = 0;
    if (edge + COLLIDE_FACE_BIAS < face) {
        m->normal = edge_n;
        m->depth = edge;
        m->points[0] = edge_point(a, ua, b, ub, edge_axis, edge_n);
        m->depths[0] = edge;
        m->count = 1;
        return true;
    }
    clip_faces(a, ua, b, ub, face_axis, margin, m);
    if (m->count == 0) {
        // Rounding clipped every point away: one point between the centres.
        m->points[0] = scale(add(v3(a.pos), v3(b.pos)), 0.5f);
        m->depths[0] = m->depth;
        m->count = 1;
    }
    return true;
}

// Normal from a to b and depth; false for none.
__device__ __forceinline__ bool sphere_sphere(const Body& a, const Body& b, float margin, V3* normal, float* depth) {
    V3 d = sub(v3(b.pos), v3(a.pos));
    float dist2 = dot(d, d);
    float rsum = a.half[0] + b.half[0];
    float reach = rsum + margin;
    if (dist2 >= reach * reach) return false;
    float dist = sqrt(dist2);
    *normal = dist > 1e-6f ? scale(d, 1.0f / dist) : v3(0.0f, 1.0f, 0.0f);
    *depth = rsum - dist;
    return true;
}

// Sphere `s` against box `b`: the normal points from the box to the sphere (a
// gap under `margin` gives a negative depth).
__device__ __forceinline__ bool sphere_box(const Body& s, const Body& b, float margin, V3* normal, float* depth) {
    Axes u = axes(b.rot);
    V3 h = v3(b.half);
    float r = s.half[0];
    V3 d = sub(v3(s.pos), v3(b.pos));
    V3 l = v3(dot(d, u[0]), dot(d, u[1]), dot(d, u[2]));
    V3 c = v3(clamp(l[0], -h[0], h[0]), clamp(l[1], -h[1], h[1]), clamp(l[2], -h[2], h[2]));
    V3 diff = sub(l, c);
    float d2 = dot(diff, diff);
    float reach = r + margin;
    if (d2 >= reach * reach) return false;
    V3 nl;
    if (d2 > 1e-12f) {
        float dist = sqrt(d2);
        nl = scale(diff, 1.0f / dist);
        *depth = r - dist;
    } else {
        // The centre is inside the box: leave through the nearest face.
        int k = 0;
        float best = h[0] - abs(l[0]);
        for (int i = 1; i < 3; i++) {
            float gap = h[i] - abs(l[i]);
            if (gap < best) {
                best = gap;
                k = i;
            }
        }
        nl = v3(0.0f, 0.0f, 0.0f);
        nl[k] = l[k] >= 0.0f ? 1.0f : -1.0f;
        *depth = r + best;
    }
    *normal = add(add(scale(u[0], nl[0]), scale(u[1], nl[1])), scale(u[2], nl[2]));
    return true;
}

// narrow.rs `contact`: a contact record, no impulse applied yet.
__device__ __forceinline__ Contact contact(u32 ia, const Body& a, u32 ib, const Body& b, const World& w, V3 normal,
                                           float depth, V3 point, u32 slot) {
    V3 rel = sub(point_velocity(b, sub(point, v3(b.pos))), point_velocity(a, sub(point, v3(a.pos))));
    float vn = dot(rel, normal);
    Contact c;
    c.a = ia;
    c.b = ib;
    c.depth = depth;
    c.sep = dot(sub(v3(b.pos), v3(a.pos)), normal);
    store(c.normal, normal);
    c.lambda = 0.0f;
    store(c.point, point);
    c.bounce = vn < -w.rest_speed ? -w.restitution * vn : 0.0f;
    store(c.friction, v3(0.0f, 0.0f, 0.0f));
    c.slot = slot;
    return c;
}

// The exact test of candidate (ia, ib), ia < ib: its contact points, the
// normals pointing from a to b, in out[0..count); returns count. Surfaces
// closer than the pair's reach make speculative contacts.
__device__ __forceinline__ u32 collide(u32 ia, const Body& a, u32 ib, const Body& b, const World& w,
                                       Contact out[COLLIDE_MAX_POINTS]) {
    float margin = pair_reach(a, b, w);
    V3 n;
    float d;
    if (a.shape == COLLIDE_SPHERE && b.shape == COLLIDE_SPHERE) {
        if (!sphere_sphere(a, b, margin, &n, &d)) return 0;
        out[0] = contact(ia, a, ib, b, w, n, d, add(v3(a.pos), scale(n, a.half[0] - 0.5f * d)), 0);
        return 1;
    }
    if (a.shape == COLLIDE_BOX && b.shape == COLLIDE_BOX) {
        Manifold m;
        if (!box_box(a, b, margin, &m)) return 0;
        for (u32 k = 0; k < m.count; k++) out[k] = contact(ia, a, ib, b, w, m.normal, m.depths[k], m.points[k], k);
        return m.count;
    }
    if (a.shape == COLLIDE_BOX) {
        if (!sphere_box(b, a, margin, &n, &d)) return 0;
        out[0] = contact(ia, a, ib, b, w, n, d, sub(v3(b.pos), scale(n, b.half[0] - 0.5f * d)), 0);
        return 1;
    }
    if (!sphere_box(a, b, margin, &n, &d)) return 0;
    out[0] = contact(ia, a, ib, b, w, scale(n, -1.0f), d, sub(v3(a.pos), scale(n, a.half[0] - 0.5f * d)), 0);
    return 1;
}

// walls.rs MAX_WALL_POINTS.
#define COLLIDE_MAX_WALL_POINTS 8

// walls.rs `corner`: a box's corner c (bit k picks the sign along axis k), or
// a sphere's point furthest along `out`, from the centre.
__device__ __forceinline__ V3 corner(const Body& b, const Axes& u, u32 c, V3 out) {
    if (b.shape == COLLIDE_SPHERE) return scale(out, b.half[0]);
    float s0 = (c & 1u) ? b.half[0] : -b.half[0];
    float s1 = ((c >> 1) & 1u) ? b.half[1] : -b.half[1];
    float s2 = ((c >> 2) & 1u) ? b.half[2] : -b.half[2];
    return add(add(scale(u[0], s0), scale(u[1], s1)), scale(u[2], s2));
}

// walls.rs `wall_contacts`: body ia's wall points in out[0..count), each with
// its normal into the wall; returns count.
__device__ __forceinline__ u32 wall_contacts(u32 ia, const Body& a, const World& w,
                                             Contact out[COLLIDE_MAX_WALL_POINTS]) {
    u32 count = 0;
    if (a.inv_mass <= 0.0f) return 0;
    Axes u = axes(a.rot);
    float near = reach(a, w);
    u32 points = a.shape == COLLIDE_SPHERE ? 1u : 8u;
    for (int k = 0; k < 3; k++) {
        for (int side = 0; side < 2; side++) {
            // The wall's normal, pointing out of the world.
            V3 n = v3(0.0f, 0.0f, 0.0f);
            n[k] = side == 0 ? -1.0f : 1.0f;
            u32 id = COLLIDE_WALL - (u32)(2 * k + side);
            u32 first = count;
            for (u32 c = 0; c < points; c++) {
                V3 r = corner(a, u, c, n);
                float at = a.pos[k] + r[k];
                float gap = side == 0 ? at - w.min[k] : w.max[k] - at;
                if (gap < near && count < COLLIDE_MAX_WALL_POINTS) {
                    V3 p = add(v3(a.pos), r);
                    out[count] = contact(ia, a, id, wall_body(id, p, w), w, n, -gap, p, count - first);
                    count++;
                }
            }
        }
    }
    if (w.drum_radius > 0.0f) {
        float dx = a.pos[0] - w.drum_x;
        float dy = a.pos[1] - w.drum_y;
        float d = sqrt(dx * dx + dy * dy);
        V3 out_dir = d > 0.0f ? v3(dx / d, dy / d, 0.0f) : v3(1.0f, 0.0f, 0.0f);
        u32 first = count;
        for (u32 c = 0; c < points; c++) {
            V3 r = corner(a, u, c, out_dir);
            float px = a.pos[0] + r[0] - w.drum_x;
            float py = a.pos[1] + r[1] - w.drum_y;
            float rho = sqrt(px * px + py * py);
            if (rho > 0.0f && w.drum_radius - rho < near && count < COLLIDE_MAX_WALL_POINTS) {
                V3 p = add(v3(a.pos), r);
                V3 n = v3(px / rho, py / rho, 0.0f);
                u32 id = COLLIDE_WALL - 6u;
                out[count] = contact(ia, a, id, wall_body(id, p, w), w, n, rho - w.drum_radius, p, count - first);
                count++;
            }
        }
    }
    return count;
}

}  // namespace physics
