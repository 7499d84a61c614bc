// The narrow phase: physics/narrow.rs and physics/manifold.rs, function for
// function (the WGSL twin of kernels/collide/narrow.cuh; common.wgsl says how
// the two sides are kept alike).
//
// Over 600 lines, kept whole: it follows narrow.rs and manifold.rs function
// for function in their order, so a reader holds the three side by side;
// WGSL's lack of pointers to local arrays, overloads and operator sugar
// makes each function longer than its Rust or CUDA twin.

// manifold.rs MAX_POINTS and FACE_BIAS.
const MAX_POINTS: u32 = 4u;
const FACE_BIAS: f32 = 1e-3;
// walls.rs MAX_WALL_POINTS.
const MAX_WALL_POINTS: u32 = 8u;

// manifold.rs `Manifold`.
struct Manifold {
    normal: vec3<f32>,
    depth: f32,
    points: array<vec3<f32>, 4>,
    depths: array<f32, 4>,
    count: u32,
}

fn signf(x: f32) -> f32 {
    if (x >= 0.0) {
        return 1.0;
    }
    return -1.0;
}

// The midpoint of the closest points of a's edge along axis i and b's along
// axis j (axis k = 6 + 3i + j), the edges that meet across `n`.
fn edge_point(a: B, ua_: array<vec3<f32>, 3>, b: B, ub_: array<vec3<f32>, 3>, k: i32, n: vec3<f32>) -> vec3<f32> {
    var ua = ua_;
    var ub = ub_;
    let i = (k - 6) / 3;
    let j = (k - 6) % 3;
    var pa = a.pos;
    var pb = b.pos;
    for (var m = 0; m < 3; m++) {
        if (m != i) {
            pa = pa + rounded3(ua[m] * (signf(dot3(ua[m], n)) * a.half[m]));
        }
        if (m != j) {
            pb = pb - rounded3(ub[m] * (signf(dot3(ub[m], n)) * b.half[m]));
        }
    }
    let da = ua[i];
    let db = ub[j];
    let r = pa - pb;
    let bb = dot3(da, db);
    let c = dot3(da, r);
    let f = dot3(db, r);
    let denom = 1.0 - rounded(bb * bb);
    let s = clampf((rounded(bb * f) - c) / denom, -a.half[i], a.half[i]);
    let u = clampf((f - rounded(bb * c)) / denom, -b.half[j], b.half[j]);
    return ((pa + rounded3(da * s)) + (pb + rounded3(db * u))) * 0.5;
}

// Face axis k (a's face for k < 3, b's for 3..6) as the reference face: the
// other box's most opposed face clipped to its sides; the points below it, or
// less than `margin` above, go to `m` (midway between the two surfaces).
fn clip_faces(a: B, ua: array<vec3<f32>, 3>, b: B, ub: array<vec3<f32>, 3>, k: i32, margin: f32,
              m: ptr<function, Manifold>) {
    let on_a = k < 3;
    var rb = b;
    var ru = ub;
    var i = k - 3;
    var inc = a;
    var iu = ua;
    var nref = (*m).normal * -1.0;
    if (on_a) {
        rb = a;
        ru = ua;
        i = k;
        inc = b;
        iu = ub;
        nref = (*m).normal;
    }
    let centre = rb.pos + rounded3(nref * rb.half[i]);
    let i1 = (i + 1) % 3;
    let i2 = (i + 2) % 3;
    var j = 0;
    var most = abs(dot3(iu[0], nref));
    for (var q = 1; q < 3; q++) {
        let d = abs(dot3(iu[q], nref));
        if (d > most) {
            most = d;
            j = q;
        }
    }
    let fc = inc.pos - rounded3(iu[j] * (signf(dot3(iu[j], nref)) * inc.half[j]));
    let j1 = (j + 1) % 3;
    let j2 = (j + 2) % 3;
    let e1 = rounded3(iu[j1] * inc.half[j1]);
    let e2 = rounded3(iu[j2] * inc.half[j2]);
    var poly: array<vec3<f32>, 8>;
    poly[0] = (fc + e1) + e2;
    poly[1] = (fc - e1) + e2;
    poly[2] = (fc - e1) - e2;
    poly[3] = (fc + e1) - e2;
    var len = 4;
    for (var side = 0; side < 4; side++) {
        var axis = i2;
        if (side < 2) {
            axis = i1;
        }
        var dir = ru[axis] * -1.0;
        if (side % 2 == 0) {
            dir = ru[axis];
        }
        let limit = rb.half[axis];
        var out: array<vec3<f32>, 8>;
        var n = 0;
        for (var p = 0; p < len; p++) {
            let x = poly[p];
            let y = poly[(p + 1) % len];
            let dx = dot3(x - centre, dir) - limit;
            let dy = dot3(y - centre, dir) - limit;
            if (dx <= 0.0 && n < 8) {
                out[n] = x;
                n++;
            }
            if ((dx <= 0.0) != (dy <= 0.0) && n < 8) {
                let s = dx / (dx - dy);
                out[n] = x + rounded3((y - x) * s);
                n++;
            }
        }
        for (var p = 0; p < n; p++) {
            poly[p] = out[p];
        }
        len = n;
        if (len == 0) {
            return;
        }
    }
    var keep = array<i32, 4>(-1, -1, -1, -1);
    var best = array<f32, 4>(-inf(), -inf(), -inf(), -inf());
    for (var p = 0; p < len; p++) {
        let q = poly[p];
        let under = dot3(q - centre, nref);
        if (under >= margin) {
            continue;
        }
        let d1 = dot3(q, ru[i1]);
        let d2 = dot3(q, ru[i2]);
        var along = array<f32, 4>(d1 + d2, d1 - d2, d2 - d1, -d1 - d2);
        for (var e = 0; e < 4; e++) {
            if (along[e] > best[e]) {
                best[e] = along[e];
                keep[e] = p;
            }
        }
    }
    for (var e = 0; e < 4; e++) {
        let p = keep[e];
        var seen = p < 0;
        for (var f = 0; f < e; f++) {
            seen = seen || keep[f] == p;
        }
        if (seen) {
            continue;
        }
        let under = dot3(poly[p] - centre, nref);
        let c = (*m).count;
        (*m).points[c] = poly[p] - rounded3(nref * (0.5 * under));
        (*m).depths[c] = -under;
        (*m).count = c + 1u;
    }
}

// Separating axes, then the points of contact; false when an axis separates
// the boxes by `margin` or more (closer, a speculative manifold of negative depths).
fn box_box(a: B, b: B, margin: f32, m: ptr<function, Manifold>) -> bool {
    var ua = axes(a.rot);
    var ub = axes(b.rot);
    let t = b.pos - a.pos;
    var face = inf();
    var edge = inf();
    var face_axis = 0;
    var edge_axis = 0;
    var face_n = vec3<f32>(0.0, 1.0, 0.0);
    var edge_n = vec3<f32>(0.0, 1.0, 0.0);
    for (var k = 0; k < 15; k++) {
        var l: vec3<f32>;
        if (k < 3) {
            l = ua[k];
        } else if (k < 6) {
            l = ub[k - 3];
        } else {
            l = cross3(ua[(k - 6) / 3], ub[(k - 6) % 3]);
        }
        if (k >= 6) {
            let len2 = dot3(l, l);
            // Parallel edges: the face axes already cover this direction.
            if (len2 < 1e-6) {
                continue;
            }
            l = l * (1.0 / sqrt_rn(len2));
        }
        let ra = rounded(abs(dot3(ua[0], l)) * a.half.x) + rounded(abs(dot3(ua[1], l)) * a.half.y) +
                 rounded(abs(dot3(ua[2], l)) * a.half.z);
        let rb = rounded(abs(dot3(ub[0], l)) * b.half.x) + rounded(abs(dot3(ub[1], l)) * b.half.y) +
                 rounded(abs(dot3(ub[2], l)) * b.half.z);
        let s = dot3(t, l);
        let o = ra + rb - abs(s);
        if (o <= -margin) {
            return false;
        }
        var n = l;
        if (s < 0.0) {
            n = l * -1.0;
        }
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
    (*m).normal = face_n;
    (*m).depth = face;
    (*m).count = 0u;
    if (edge + FACE_BIAS < face) {
        (*m).normal = edge_n;
        (*m).depth = edge;
        (*m).points[0] = edge_point(a, ua, b, ub, edge_axis, edge_n);
        (*m).depths[0] = edge;
        (*m).count = 1u;
        return true;
    }
    clip_faces(a, ua, b, ub, face_axis, margin, m);
    if ((*m).count == 0u) {
        // Rounding clipped every point away: one point between the centres.
        (*m).points[0] = (a.pos + b.pos) * 0.5;
        (*m).depths[0] = (*m).depth;
        (*m).count = 1u;
    }
    return true;
}

// A normal and a depth, or none.
struct Hit {
    found: bool,
    normal: vec3<f32>,
    depth: f32,
}

// Normal from a to b and depth (negative: a gap under `margin`).
fn sphere_sphere(a: B, b: B, margin: f32) -> Hit {
    let d = b.pos - a.pos;
    let dist2 = dot3(d, d);
    let rsum = a.half.x + b.half.x;
    // narrow.rs `reach` (a local there; here the name is common.wgsl's function).
    let far = rsum + margin;
    if (dist2 >= far * far) {
        return Hit(false, vec3<f32>(0.0), 0.0);
    }
    let dist = sqrt_rn(dist2);
    var normal = vec3<f32>(0.0, 1.0, 0.0);
    if (dist > 1e-6) {
        normal = d * (1.0 / dist);
    }
    return Hit(true, normal, rsum - dist);
}

// Sphere `s` against box `b`: the normal points from the box to the sphere
// (a gap under `margin` gives a negative depth).
fn sphere_box(s: B, b: B, margin: f32) -> Hit {
    var u = axes(b.rot);
    let h = b.half;
    let r = s.half.x;
    let d = s.pos - b.pos;
    let l = vec3<f32>(dot3(d, u[0]), dot3(d, u[1]), dot3(d, u[2]));
    let c = vec3<f32>(clampf(l.x, -h.x, h.x), clampf(l.y, -h.y, h.y), clampf(l.z, -h.z, h.z));
    let diff = l - c;
    let d2 = dot3(diff, diff);
    let far = r + margin;
    if (d2 >= far * far) {
        return Hit(false, vec3<f32>(0.0), 0.0);
    }
    var nl: vec3<f32>;
    var depth: f32;
    if (d2 > 1e-12) {
        let dist = sqrt_rn(d2);
        nl = diff * (1.0 / dist);
        depth = r - dist;
    } else {
        // The centre is inside the box: leave through the nearest face.
        var k = 0;
        var best = h.x - abs(l.x);
        for (var i = 1; i < 3; i++) {
            let gap = h[i] - abs(l[i]);
            if (gap < best) {
                best = gap;
                k = i;
            }
        }
        nl = vec3<f32>(0.0, 0.0, 0.0);
        nl[k] = select(-1.0, 1.0, l[k] >= 0.0);
        depth = r + best;
    }
    return Hit(true, (rounded3(u[0] * nl.x) + rounded3(u[1] * nl.y)) + rounded3(u[2] * nl.z), depth);
}

// narrow.rs `contact`: a contact record, no impulse applied yet.
fn make_contact(ia: u32, a: B, ib: u32, b: B, w: W, normal: vec3<f32>, depth: f32, at: vec3<f32>, slot: u32) -> Contact {
    // The point is often a.pos + x: hidden, so that point - a.pos is not simplified to x (an inexact rewrite).
    let point = rounded3(at);
    let rel = point_velocity(b, point - b.pos) - point_velocity(a, point - a.pos);
    let vn = dot3(rel, normal);
    var bounce = 0.0;
    if (vn < -w.rest_speed) {
        bounce = -w.restitution * vn;
    }
    return Contact(ia, ib, depth, dot3(b.pos - a.pos, normal), a3(normal), 0.0, a3(point), bounce,
                   array<f32, 3>(0.0, 0.0, 0.0), slot);
}

// The exact test of candidate (ia, ib), ia < ib: its contact points, the
// normals pointing from a to b, in out[0..count); returns count. Surfaces
// closer than the pair's reach make (speculative) contacts of negative depth.
fn collide_pair(ia: u32, a: B, ib: u32, b: B, w: W, out: ptr<function, array<Contact, 4>>) -> u32 {
    let margin = pair_reach(a, b, w);
    if (a.shape == SPHERE && b.shape == SPHERE) {
        let h = sphere_sphere(a, b, margin);
        if (!h.found) {
            return 0u;
        }
        (*out)[0] = make_contact(ia, a, ib, b, w, h.normal, h.depth, a.pos + rounded3(h.normal * (a.half.x - 0.5 * h.depth)), 0u);
        return 1u;
    }
    if (a.shape == BOX && b.shape == BOX) {
        var m: Manifold;
        if (!box_box(a, b, margin, &m)) {
            return 0u;
        }
        for (var k = 0u; k < m.count; k++) {
            (*out)[k] = make_contact(ia, a, ib, b, w, m.normal, m.depths[k], m.points[k], k);
        }
        return m.count;
    }
    if (a.shape == BOX) {
        let h = sphere_box(b, a, margin);
        if (!h.found) {
            return 0u;
        }
        (*out)[0] = make_contact(ia, a, ib, b, w, h.normal, h.depth, b.pos - rounded3(h.normal * (b.half.x - 0.5 * h.depth)), 0u);
        return 1u;
    }
    let h = sphere_box(a, b, margin);
    if (!h.found) {
        return 0u;
    }
    (*out)[0] = make_contact(ia, a, ib, b, w, h.normal * -1.0, h.depth, a.pos - rounded3(h.normal * (a.half.x - 0.5 * h.depth)), 0u);
    return 1u;
}

// walls.rs `corner`: a box's corner c (bit k picks the sign along axis k), or
// a sphere's point furthest along `out`, from the centre.
fn corner(b: B, u: array<vec3<f32>, 3>, c: u32, out: vec3<f32>) -> vec3<f32> {
    if (b.shape == SPHERE) {
        return rounded3(out * b.half.x);
    }
    let s0 = select(-b.half.x, b.half.x, (c & 1u) != 0u);
    let s1 = select(-b.half.y, b.half.y, ((c >> 1u) & 1u) != 0u);
    let s2 = select(-b.half.z, b.half.z, ((c >> 2u) & 1u) != 0u);
    return (rounded3(u[0] * s0) + rounded3(u[1] * s1)) + rounded3(u[2] * s2);
}

// walls.rs `wall_contacts`: body ia's wall points within its reach in
// out[0..count), each with its normal into the wall; returns count.
fn wall_contacts(ia: u32, a: B, w: W, out: ptr<function, array<Contact, 8>>) -> u32 {
    var count = 0u;
    if (a.inv_mass <= 0.0) {
        return 0u;
    }
    let u = axes(a.rot);
    let near = reach(a, w);
    var points = 8u;
    if (a.shape == SPHERE) {
        points = 1u;
    }
    for (var k = 0; k < 3; k++) {
        for (var side = 0; side < 2; side++) {
            // The wall's normal, pointing out of the world.
            var n = vec3<f32>(0.0, 0.0, 0.0);
            n[k] = select(1.0, -1.0, side == 0);
            let id = WALL - u32(2 * k + side);
            let first = count;
            for (var c = 0u; c < points; c++) {
                let r = corner(a, u, c, n);
                let at = a.pos[k] + r[k];
                var gap = w.max[k] - at;
                if (side == 0) {
                    gap = at - w.min[k];
                }
                if (gap < near && count < MAX_WALL_POINTS) {
                    let p = a.pos + r;
                    (*out)[count] = make_contact(ia, a, id, wall_body(id, p, w), w, n, -gap, p, count - first);
                    count++;
                }
            }
        }
    }
    if (w.drum_radius > 0.0) {
        let dx = a.pos.x - w.drum_x;
        let dy = a.pos.y - w.drum_y;
        let d = sqrt_rn(rounded(dx * dx) + rounded(dy * dy));
        var out_dir = vec3<f32>(1.0, 0.0, 0.0);
        if (d > 0.0) {
            out_dir = vec3<f32>(dx / d, dy / d, 0.0);
        }
        let first = count;
        for (var c = 0u; c < points; c++) {
            let r = corner(a, u, c, out_dir);
            let px = a.pos.x + r.x - w.drum_x;
            let py = a.pos.y + r.y - w.drum_y;
            let rho = sqrt_rn(rounded(px * px) + rounded(py * py));
            if (rho > 0.0 && w.drum_radius - rho < near && count < MAX_WALL_POINTS) {
                let p = a.pos + r;
                let n = vec3<f32>(px / rho, py / rho, 0.0);
                let id = WALL - 6u;
                (*out)[count] = make_contact(ia, a, id, wall_body(id, p, w), w, n, rho - w.drum_radius, p, count - first);
                count++;
            }
        }
    }
    return count;
}
