use super::*;
use crate::collide::layout::{BOX, Body, Contact, LEAF, Node, SPHERE, World};

pub(super) fn world() -> World {
    crate::collide::scenario::world([0.0; 3], [8.0; 3])
}

pub(super) fn sphere(pos: V3, r: f32) -> Body {
    Body {
        pos,
        shape: SPHERE,
        vel: [0.0; 3],
        inv_mass: 1.0,
        half: [r; 3],
        id: 0,
        rot: [0.0, 0.0, 0.0, 1.0],
        omega: [0.0; 3],
        pad2: 0.0,
    }
}

pub(super) fn cuboid(pos: V3, half: V3, rot: [f32; 4]) -> Body {
    Body { pos, shape: BOX, vel: [0.0; 3], inv_mass: 1.0, half, id: 0, rot, omega: [0.0; 3], pad2: 0.0 }
}

/// A rotation by `angle` about the unit `axis`.
pub(super) fn quat(axis: V3, angle: f32) -> [f32; 4] {
    let s = (0.5 * angle).sin();
    [axis[0] * s, axis[1] * s, axis[2] * s, (0.5 * angle).cos()]
}

fn random_quat(rng: &mut fastrand::Rng) -> [f32; 4] {
    let q = [rng.f32() - 0.5, rng.f32() - 0.5, rng.f32() - 0.5, rng.f32() - 0.5];
    let l = dot([q[0], q[1], q[2]], [q[0], q[1], q[2]]) + q[3] * q[3];
    q.map(|x| x / l.sqrt())
}

/// The first contact of a pair; a box pair's depth is its separating-axis
/// overlap (its points' depths are each point's own).
/// Bodies at rest in a world without gravity or margin reach nothing past
/// their surfaces: only touching shapes make contacts.
pub(super) fn touch(a: &Body, b: &Body) -> Option<Contact> {
    let w = World { gravity: [0.0; 3], margin: 0.0, ..world() };
    let (found, count) = collide(0, a, 1, b, &w);
    let mut c = found[..count].first().copied()?;
    if a.shape == BOX && b.shape == BOX {
        c.depth = box_box(a, b, 0.0)?.depth;
    }
    Some(c)
}

pub(super) fn close(a: V3, b: V3) -> bool {
    (0..3).all(|k| (a[k] - b[k]).abs() < 1e-5)
}

#[test]
fn morton_interleaves_x_y_z() {
    assert_eq!(expand_bits(0), 0);
    assert_eq!(expand_bits(1), 1);
    assert_eq!(expand_bits(0b11), 0b1001);
    assert_eq!(expand_bits(0x3ff), 0x09249249);
    assert_eq!(expand_bits(0xffff_ffff), 0x09249249, "only the low 10 bits count");
    let w = world();
    assert_eq!(morton([0.0; 3], &w), 0);
    assert_eq!(morton([8.0; 3], &w), 0x3fff_ffff, "the far corner clamps to the last cell");
    assert_eq!(morton([-5.0, 100.0, -1.0], &w), 0b010 * 0x09249249, "outside points clamp");
    // One cell is 8 / 1024: x is the highest bit of each triple.
    let cell = 8.0 / 1024.0;
    assert_eq!(morton([1.5 * cell, 0.0, 0.0], &w), 0b100);
    assert_eq!(morton([0.0, 1.5 * cell, 0.0], &w), 0b010);
    assert_eq!(morton([0.0, 0.0, 1.5 * cell], &w), 0b001);
}

/// The hierarchy by its definition: a range of sorted (code, index) keys
/// splits where the highest bit that differs across it turns to 1; the
/// left half is named after its last key, the right after its first.
fn reference(codes: &[u32]) -> Vec<(u32, u32)> {
    let n = codes.len();
    let key = |i: usize| ((codes[i] as u64) << 32) | i as u64;
    let mut nodes = vec![(u32::MAX, u32::MAX); n - 1];
    let mut stack = vec![(0usize, n - 1, 0usize)];
    while let Some((lo, hi, index)) = stack.pop() {
        let common = (key(lo) ^ key(hi)).leading_zeros();
        let split = (lo..hi).rev().find(|&k| (key(lo) ^ key(k)).leading_zeros() > common).unwrap_or(lo);
        let name = |a: usize, b: usize, at: usize| if a == b { (n - 1 + a) as u32 } else { at as u32 };
        let (l, r) = (name(lo, split, split), name(split + 1, hi, split + 1));
        nodes[index] = (l, r);
        if lo != split {
            stack.push((lo, split, split));
        }
        if split + 1 != hi {
            stack.push((split + 1, hi, split + 1));
        }
    }
    nodes
}

#[test]
fn karras_matches_the_definition_on_small_inputs() {
    let mut rng = fastrand::Rng::with_seed(3);
    for n in 2..48 {
        for spread in [1u32, 4, 64, 1 << 30] {
            let mut codes: Vec<u32> = (0..n).map(|_| rng.u32(..spread)).collect();
            codes.sort_unstable();
            let want = reference(&codes);
            for (i, w) in want.iter().enumerate() {
                assert_eq!(karras_node(&codes, i), *w, "node {i} of {codes:?}");
            }
        }
    }
}

#[test]
fn delta_breaks_ties_by_index() {
    let codes = [5, 5, 5, 9];
    assert_eq!(delta(&codes, 0, 1), 32 + 31);
    assert_eq!(delta(&codes, 0, 2), 32 + 30);
    assert_eq!(delta(&codes, 2, 3), (5u32 ^ 9).leading_zeros() as i32);
    assert_eq!(delta(&codes, 0, -1), -1);
    assert_eq!(delta(&codes, 3, 4), -1);
}

#[test]
fn overlap_and_union_of_boxes() {
    let node = |min: V3, max: V3| Node { min, left: 0, max, right: LEAF };
    let a = node([0.0; 3], [1.0; 3]);
    assert!(overlap(&a, &node([1.0, 0.5, 0.5], [2.0; 3])), "touching counts");
    assert!(!overlap(&a, &node([1.0, 1.5, 0.5], [2.0; 3])));
    assert_eq!(union(&a, &node([-1.0, 0.5, 0.5], [0.5, 3.0, 0.5])), ([-1.0, 0.0, 0.0], [1.0, 3.0, 1.0]));
}

#[test]
fn aabb_of_a_rotated_box() {
    let b = cuboid([1.0, 2.0, 3.0], [1.0, 0.5, 0.25], quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_2));
    // At rest without gravity, the box reaches only the margin past its surface.
    let w = World { gravity: [0.0; 3], margin: 0.125, ..world() };
    let (min, max) = aabb(&b, &w);
    assert!(close(min, [0.375, 0.875, 2.625]) && close(max, [1.625, 3.125, 3.375]), "{min:?} {max:?}");
    let mut s = sphere([1.0; 3], 0.5);
    assert_eq!(aabb(&s, &w), ([0.375; 3], [1.625; 3]));
    // Moving up at 6 m/s it reaches a tenth of a metre further up in a frame of 1/60 s, and no
    // further elsewhere (issue 46: a swept box).
    s.vel = [0.0, 6.0, 0.0];
    let (min, max) = aabb(&s, &w);
    assert!(close(min, [0.375; 3]) && close(max, [1.625, 1.725, 1.625]), "{min:?} {max:?}");
}

/// Issue 46 item 4: a pair's reach is its fastest closing speed, so two
/// bodies moving together reach half as far ahead as the sum of their
/// speeds did (the one ahead may still stop dead), while one closing on
/// another makes its speculative contact a frame ahead; and a body's swept
/// box holds it wherever it is in the frame, gravity's bend included.
#[test]
fn the_reach_follows_the_closing_speed_and_the_box_the_path() {
    let w = World { margin: 0.02, ..world() };
    let mut a = sphere([2.0, 4.0, 2.0], 0.5);
    let mut b = sphere([3.5, 4.0, 2.0], 0.5);
    // One behind the other at 20 m/s (a third of a metre a frame), 0.5 apart: no contact.
    a.vel = [20.0, 0.0, 0.0];
    b.vel = [20.0, 0.0, 0.0];
    assert_eq!(collide(0, &a, 1, &b, &w).1, 0, "bodies moving together, 0.5 apart");
    // The pair reaches one speed's frame ahead, not two.
    let (g, r) = (9.81 / 60.0 / 60.0, pair_reach(&a, &b, &w));
    assert!((r - (0.04 + 20.0 / 60.0 + 2.0 * g)).abs() < 1e-6, "{r}");
    b.pos = [3.2, 4.0, 2.0];
    // a closing on b at 20 m/s: it would pass the gap within the frame, so it has its contact now.
    b.vel = [0.0; 3];
    let (found, count) = collide(0, &a, 1, &b, &w);
    assert_eq!(count, 1, "a body closing on another");
    assert!((found[0].depth + 0.2).abs() < 1e-5, "{:?}", found[0]);
    // The swept box holds the sphere at every moment of the frame, and grows only along its path
    // (and by gravity's frame of fall, which bends it).
    let (min, max) = aabb(&a, &w);
    let dt = w.dt;
    for k in 0..=10 {
        let t = dt * k as f32 / 10.0;
        let c = [2.0 + 20.0 * t, 4.0 - 0.5 * 9.81 * t * t, 2.0];
        assert!((0..3).all(|i| c[i] - 0.5 >= min[i] - 1e-6 && c[i] + 0.5 <= max[i] + 1e-6), "t = {t}");
    }
    assert!(min[0] > 2.0 - 0.5 - 0.03 && max[0] < 2.0 + 20.0 * dt + 0.5 + 0.03, "{min:?} {max:?}");
    assert!(max[1] - min[1] < 1.0 + 0.1, "no growth across the path: {min:?} {max:?}");
}

#[test]
fn sphere_sphere_contact() {
    let (a, b) = (sphere([1.0, 1.0, 1.0], 0.5), sphere([1.8, 1.0, 1.0], 0.5));
    let c = touch(&a, &b).expect("they touch");
    assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - 0.2).abs() < 1e-5, "{c:?}");
    assert_eq!((c.a, c.b), (0, 1));
    assert!(close(c.point, [1.4, 1.0, 1.0]), "midway through the overlap: {c:?}");
    assert!(touch(&a, &sphere([2.0, 1.0, 1.0], 0.5)).is_none(), "exactly touching is no contact");
    let c = touch(&a, &sphere([1.0; 3], 0.3)).expect("one centre");
    assert!(close(c.normal, [0.0, 1.0, 0.0]) && (c.depth - 0.8).abs() < 1e-6, "{c:?}");
}

#[test]
fn sphere_box_contact_both_orders_and_centre_inside() {
    let bx = cuboid([0.0; 3], [1.0; 3], [0.0, 0.0, 0.0, 1.0]);
    let s = sphere([1.3, 0.0, 0.0], 0.5);
    let c = touch(&s, &bx).expect("touch");
    assert!(close(c.normal, [-1.0, 0.0, 0.0]) && (c.depth - 0.2).abs() < 1e-5, "sphere first: {c:?}");
    let c = touch(&bx, &s).expect("touch");
    assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - 0.2).abs() < 1e-5, "box first: {c:?}");
    // Past the corner: the normal points from the corner to the centre.
    let s = sphere([1.3, 1.3, 0.0], 0.5);
    let c = touch(&bx, &s).expect("touch the edge");
    let h = std::f32::consts::FRAC_1_SQRT_2;
    assert!(close(c.normal, [h, h, 0.0]) && (c.depth - (0.5 - 0.3 * 2f32.sqrt())).abs() < 1e-5, "{c:?}");
    assert!(touch(&bx, &sphere([1.4, 1.4, 0.0], 0.5)).is_none());
    // The centre inside: out through the nearest face.
    let c = touch(&bx, &sphere([0.1, -0.8, 0.2], 0.5)).expect("inside");
    assert!(close(c.normal, [0.0, -1.0, 0.0]) && (c.depth - 0.7).abs() < 1e-5, "{c:?}");
    // A box turned 45° about z has an edge at x = √2.
    let turned = cuboid([0.0; 3], [1.0; 3], quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_4));
    let c = touch(&turned, &sphere([1.6, 0.0, 0.0], 0.5)).expect("the edge");
    assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - (0.5 - (1.6 - 2f32.sqrt()))).abs() < 1e-5, "{c:?}");
    assert!(touch(&turned, &sphere([1.95, 0.0, 0.0], 0.5)).is_none());
}

#[test]
fn box_box_separating_axes() {
    let id = [0.0, 0.0, 0.0, 1.0];
    let a = cuboid([0.0; 3], [0.5; 3], id);
    let c = touch(&a, &cuboid([0.0, 0.9, 0.0], [0.5; 3], id)).expect("stacked");
    assert!(close(c.normal, [0.0, 1.0, 0.0]) && (c.depth - 0.1).abs() < 1e-5, "{c:?}");
    let c = touch(&a, &cuboid([0.0, -0.9, 0.0], [0.5; 3], id)).expect("below");
    assert!(close(c.normal, [0.0, -1.0, 0.0]), "{c:?}");
    // b turned 45° about z reaches √2/2 along x.
    let q = quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_4);
    let reach = 0.5 + std::f32::consts::FRAC_1_SQRT_2;
    let c = touch(&a, &cuboid([reach - 0.05, 0.0, 0.0], [0.5; 3], q)).expect("edge into face");
    assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - 0.05).abs() < 1e-5, "{c:?}");
    assert!(touch(&a, &cuboid([reach + 0.01, 0.0, 0.0], [0.5; 3], q)).is_none());
    // Two edges crossing: a turned about x, b about z, edge above edge;
    // only the cross product of the edges separates them.
    let qa = quat([1.0, 0.0, 0.0], std::f32::consts::FRAC_PI_4);
    let qb = quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_4);
    let a = cuboid([0.0; 3], [0.5; 3], qa);
    let gap = 2.0 * std::f32::consts::FRAC_1_SQRT_2;
    let c = touch(&a, &cuboid([0.0, gap - 0.04, 0.0], [0.5; 3], qb)).expect("edges cross");
    assert!(close(c.normal, [0.0, 1.0, 0.0]) && (c.depth - 0.04).abs() < 1e-5, "{c:?}");
    assert!(touch(&a, &cuboid([0.0, gap + 0.01, 0.0], [0.5; 3], qb)).is_none());
}

/// For every shape pair: moving b along the normal by the depth (a hair
/// more) separates the shapes, a hair less does not. This is the property
/// of the least-penetration axis that the solver relies on.
#[test]
fn depth_along_the_normal_separates_random_pairs() {
    let mut rng = fastrand::Rng::with_seed(11);
    let mut seen = [0u32; 3];
    let shape = |rng: &mut fastrand::Rng, pos: V3| {
        if rng.bool() {
            sphere(pos, 0.3 + 0.3 * rng.f32())
        } else {
            cuboid(pos, [0.2 + 0.4 * rng.f32(), 0.2 + 0.4 * rng.f32(), 0.2 + 0.4 * rng.f32()], random_quat(rng))
        }
    };
    for _ in 0..20000 {
        let a = shape(&mut rng, [0.0; 3]);
        let p = [2.0 * rng.f32() - 1.0, 2.0 * rng.f32() - 1.0, 2.0 * rng.f32() - 1.0];
        let mut b = shape(&mut rng, p);
        let Some(c) = touch(&a, &b) else { continue };
        seen[(a.shape + b.shape) as usize] += 1;
        assert!(c.depth > 0.0 && (dot(c.normal, c.normal) - 1.0).abs() < 1e-4, "{c:?}");
        let at = b.pos;
        b.pos = add(at, scale(c.normal, c.depth + 2e-3));
        assert!(touch(&a, &b).is_none(), "still touching after the depth: {a:?} {b:?} {c:?}");
        if c.depth > 4e-3 {
            b.pos = add(at, scale(c.normal, c.depth - 2e-3));
            assert!(touch(&a, &b).is_some(), "apart before the depth: {a:?} {b:?} {c:?}");
        }
    }
    assert!(seen.iter().all(|&s| s > 500), "every pairing must be exercised: {seen:?}");
}

/// Shapes apart by less than their reach make speculative contacts: the
/// depth is minus the gap, the normal the one they will touch along.
#[test]
fn shapes_within_reach_make_speculative_contacts() {
    let w = World { gravity: [0.0; 3], margin: 0.05, ..world() };
    let a = sphere([2.0, 2.0, 2.0], 0.5);
    let b = sphere([3.06, 2.0, 2.0], 0.5);
    let (found, count) = collide(0, &a, 1, &b, &w);
    assert_eq!(count, 1);
    assert!((found[0].depth + 0.06).abs() < 1e-5 && close(found[0].normal, [1.0, 0.0, 0.0]), "{:?}", found[0]);
    let far = sphere([3.2, 2.0, 2.0], 0.5);
    assert_eq!(collide(0, &a, 1, &far, &w).1, 0, "0.2 apart is past both reaches (0.1)");
    // Boxes face to face 0.04 apart: four points of depth -0.04.
    let p = cuboid([2.0, 2.0, 2.0], [0.5; 3], [0.0, 0.0, 0.0, 1.0]);
    let q = cuboid([2.0, 3.04, 2.0], [0.5; 3], [0.0, 0.0, 0.0, 1.0]);
    let (found, count) = collide(0, &p, 1, &q, &w);
    assert_eq!(count, 4);
    assert!(found[..4].iter().all(|c| (c.depth + 0.04).abs() < 1e-5 && close(c.normal, [0.0, 1.0, 0.0])));
    // A sphere 0.03 over a box's face.
    let s = sphere([2.0, 3.03, 2.0], 0.5);
    let (found, count) = collide(0, &p, 1, &s, &w);
    assert_eq!(count, 1);
    assert!((found[0].depth + 0.03).abs() < 1e-5 && close(found[0].normal, [0.0, 1.0, 0.0]), "{:?}", found[0]);
}
