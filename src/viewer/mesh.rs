//! The geometry the collision view draws, built once on the CPU: a unit
//! icosphere and a unit cube that `shaders/collide.wgsl` places per body,
//! and the container's outline (world box, floor grid, drum) as line segments.

use bytemuck::{Pod, Zeroable};

use crate::collide::World;

/// A mesh vertex. Keep in sync with `shaders/collide.wgsl` `MeshIn` (locations 0, 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Vertex {
    pub pos: [f32; 3],
    pub normal: [f32; 3],
}

/// An indexed triangle list.
#[derive(Clone, Debug)]
pub struct Mesh {
    pub vertices: Vec<Vertex>,
    pub indices: Vec<u16>,
}

/// A line vertex. Keep in sync with `shaders/collide.wgsl` `LineIn`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct LineVertex {
    pub pos: [f32; 3],
    pub color: [f32; 4],
}

/// A sphere of radius 1: the icosahedron, each triangle split in four
/// `subdivisions` times, the new vertices pushed out to the sphere.
pub fn icosphere(subdivisions: u32) -> Mesh {
    let (corners, faces) = crate::scene::icosahedron();
    let mut pos: Vec<[f32; 3]> = corners.into_iter().map(normalize).collect();
    let mut tris: Vec<[u16; 3]> = faces.to_vec();
    for _ in 0..subdivisions {
        // Each edge's midpoint is made once and shared by its two triangles.
        let mut mid = std::collections::HashMap::new();
        let mut midpoint = |a: u16, b: u16, pos: &mut Vec<[f32; 3]>| -> u16 {
            *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                let (p, q) = (pos[a as usize], pos[b as usize]);
                pos.push(normalize([p[0] + q[0], p[1] + q[1], p[2] + q[2]]));
                (pos.len() - 1) as u16
            })
        };
        let mut next = Vec::with_capacity(tris.len() * 4);
        for [a, b, c] in tris {
            let ab = midpoint(a, b, &mut pos);
            let bc = midpoint(b, c, &mut pos);
            let ca = midpoint(c, a, &mut pos);
            next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        tris = next;
    }
    Mesh {
        vertices: pos.into_iter().map(|p| Vertex { pos: p, normal: p }).collect(),
        indices: tris.into_iter().flatten().collect(),
    }
}

/// The cube [-1, 1]³ (half extents 1), four vertices per face so each face
/// has its own normal; counter-clockwise seen from outside.
pub fn cube() -> Mesh {
    let mut vertices = Vec::with_capacity(24);
    let mut indices = Vec::with_capacity(36);
    for axis in 0..3 {
        for sign in [1.0f32, -1.0] {
            let mut n = [0.0; 3];
            n[axis] = sign;
            // u, v span the face with u × v = n.
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            let base = vertices.len() as u16;
            for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                let mut p = n;
                p[u] = a * sign;
                p[v] = b;
                vertices.push(Vertex { pos: p, normal: n });
            }
            indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
        }
    }
    Mesh { vertices, indices }
}

const EDGE: [f32; 4] = [0.55, 0.55, 0.6, 1.0];
const GRID: [f32; 4] = [0.25, 0.25, 0.28, 1.0];
const DRUM: [f32; 4] = [0.85, 0.65, 0.25, 1.0];

/// The container as a line list: the world box's twelve edges, a grid on its
/// floor (y = min), and for a drum its two end circles and eight spokes and
/// rim lines turned by `drum_angle` radians, so its rotation shows.
pub fn world_lines(w: &World, drum_angle: f32) -> Vec<LineVertex> {
    let mut out = Vec::new();
    let mut line = |a: [f32; 3], b: [f32; 3], color: [f32; 4]| {
        out.push(LineVertex { pos: a, color });
        out.push(LineVertex { pos: b, color });
    };
    let (lo, hi) = (w.min, w.max);
    let corner = |i: usize| [[lo, hi][i & 1][0], [lo, hi][(i >> 1) & 1][1], [lo, hi][(i >> 2) & 1][2]];
    for i in 0..8 {
        for bit in [1, 2, 4] {
            if i & bit == 0 {
                line(corner(i), corner(i | bit), EDGE);
            }
        }
    }
    const CELLS: usize = 10;
    for k in 1..CELLS {
        let f = k as f32 / CELLS as f32;
        let x = lo[0] + (hi[0] - lo[0]) * f;
        let z = lo[2] + (hi[2] - lo[2]) * f;
        line([x, lo[1], lo[2]], [x, lo[1], hi[2]], GRID);
        line([lo[0], lo[1], z], [hi[0], lo[1], z], GRID);
    }
    if w.drum_radius > 0.0 {
        let (cx, cy, r) = (w.drum_x, w.drum_y, w.drum_radius);
        let at = |a: f32, z: f32| [cx + r * a.cos(), cy + r * a.sin(), z];
        const SEGMENTS: usize = 64;
        let step = std::f32::consts::TAU / SEGMENTS as f32;
        for z in [lo[2], hi[2]] {
            for s in 0..SEGMENTS {
                line(at(s as f32 * step, z), at((s + 1) as f32 * step, z), DRUM);
            }
        }
        for s in 0..8 {
            let a = drum_angle + s as f32 * std::f32::consts::TAU / 8.0;
            line(at(a, lo[2]), at(a, hi[2]), DRUM);
            line([cx, cy, lo[2]], at(a, lo[2]), DRUM);
        }
    }
    out
}

fn normalize(p: [f32; 3]) -> [f32; 3] {
    let l = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    [p[0] / l, p[1] / l, p[2] / l]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
        [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
    }
    fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    }
    fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
        a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    }

    /// Every triangle faces away from the centre: back-face culling keeps the outside.
    fn assert_outward(m: &Mesh) {
        for t in m.indices.chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| m.vertices[t[k] as usize].pos);
            let n = cross(sub(b, a), sub(c, a));
            let centre = [(a[0] + b[0] + c[0]) / 3.0, (a[1] + b[1] + c[1]) / 3.0, (a[2] + b[2] + c[2]) / 3.0];
            assert!(dot(n, centre) > 0.0, "triangle {t:?} faces inwards");
        }
    }

    #[test]
    fn icosphere_has_shared_vertices_on_the_unit_sphere_facing_out() {
        for (k, verts, tris) in [(0, 12, 20), (1, 42, 80), (2, 162, 320)] {
            let m = icosphere(k);
            assert_eq!((m.vertices.len(), m.indices.len() / 3), (verts, tris), "subdivision {k}");
            for v in &m.vertices {
                assert!((dot(v.pos, v.pos) - 1.0).abs() < 1e-5);
                assert_eq!(v.pos, v.normal);
            }
            assert_outward(&m);
        }
    }

    #[test]
    fn cube_has_six_faces_with_their_own_normals_facing_out() {
        let m = cube();
        assert_eq!((m.vertices.len(), m.indices.len()), (24, 36));
        for v in &m.vertices {
            assert!(v.pos.iter().all(|c| c.abs() == 1.0));
            assert!((dot(v.pos, v.normal) - 1.0).abs() < 1e-6, "a vertex off its face's plane");
        }
        assert_outward(&m);
    }

    #[test]
    fn world_lines_outline_the_box_and_the_drum_only_when_there_is_one() {
        let mut w = World::zeroed();
        w.min = [-1.0, 0.0, -2.0];
        w.max = [1.0, 3.0, 2.0];
        let plain = world_lines(&w, 0.0);
        assert_eq!(plain.len() % 2, 0);
        assert_eq!(plain.len(), 2 * (12 + 2 * 9), "twelve edges and a 10 x 10 floor grid");
        for v in &plain {
            for k in 0..3 {
                assert!(v.pos[k] >= w.min[k] && v.pos[k] <= w.max[k]);
            }
        }
        w.drum_radius = 1.0;
        w.drum_y = 1.5;
        let drum = world_lines(&w, 0.3);
        assert_eq!(drum.len(), plain.len() + 2 * (2 * 64 + 16));
    }
}
