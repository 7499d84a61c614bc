//! The broad phase's arithmetic: Morton codes over the world box, Karras
//! 2012's tree over the sorted codes, and box overlap and union.

use super::V3;
use crate::collide::layout::{Node, World};

/// Spreads the low 10 bits of `v` to every third bit.
pub fn expand_bits(v: u32) -> u32 {
    let mut v = v & 0x3ff;
    v = (v | (v << 16)) & 0x030000ff;
    v = (v | (v << 8)) & 0x0300f00f;
    v = (v | (v << 4)) & 0x030c30c3;
    v = (v | (v << 2)) & 0x09249249;
    v
}

/// The 30-bit Morton code of a point, 10 bits per axis over the world box
/// (points outside are clamped to it).
pub fn morton(p: V3, w: &World) -> u32 {
    let cell = |k: usize| {
        let t = (p[k] - w.min[k]) * w.inv_extent[k];
        let c = (t * 1024.0).clamp(0.0, 1023.0);
        c as u32
    };
    (expand_bits(cell(0)) << 2) | (expand_bits(cell(1)) << 1) | expand_bits(cell(2))
}

/// Karras 2012's δ(i, j): the length of the longest common prefix of sorted
/// keys i and j, with the index breaking ties between equal codes; -1 when j
/// is out of range.
pub fn delta(codes: &[u32], i: i64, j: i64) -> i32 {
    if j < 0 || j >= codes.len() as i64 {
        return -1;
    }
    let (a, b) = (codes[i as usize], codes[j as usize]);
    if a == b { 32 + ((i ^ j) as u32).leading_zeros() as i32 } else { (a ^ b).leading_zeros() as i32 }
}

/// Karras 2012, Fig. 4: internal node i's children (node indices: internal
/// 0..n-1, leaves n-1+k).
pub fn karras_node(codes: &[u32], i: usize) -> (u32, u32) {
    let n = codes.len() as i64;
    let i = i as i64;
    let d: i64 = if delta(codes, i, i + 1) - delta(codes, i, i - 1) >= 0 { 1 } else { -1 };
    let dmin = delta(codes, i, i - d);
    let mut lmax: i64 = 2;
    while delta(codes, i, i + lmax * d) > dmin {
        lmax *= 2;
    }
    let mut l: i64 = 0;
    let mut t = lmax / 2;
    while t >= 1 {
        if delta(codes, i, i + (l + t) * d) > dmin {
            l += t;
        }
        t /= 2;
    }
    let j = i + l * d;
    let dnode = delta(codes, i, j);
    let mut s: i64 = 0;
    let mut t = l;
    loop {
        t = (t + 1) / 2;
        if delta(codes, i, i + (s + t) * d) > dnode {
            s += t;
        }
        if t == 1 {
            break;
        }
    }
    let gamma = i + s * d + d.min(0);
    let left = if i.min(j) == gamma { (n - 1 + gamma) as u32 } else { gamma as u32 };
    let right = if i.max(j) == gamma + 1 { (n - 1 + gamma + 1) as u32 } else { (gamma + 1) as u32 };
    (left, right)
}

/// Whether two nodes' boxes overlap (touching counts).
pub fn overlap(a: &Node, b: &Node) -> bool {
    a.min[0] <= b.max[0]
        && b.min[0] <= a.max[0]
        && a.min[1] <= b.max[1]
        && b.min[1] <= a.max[1]
        && a.min[2] <= b.max[2]
        && b.min[2] <= a.max[2]
}

/// The union of two boxes.
pub fn union(a: &Node, b: &Node) -> (V3, V3) {
    let mn = [a.min[0].min(b.min[0]), a.min[1].min(b.min[1]), a.min[2].min(b.min[2])];
    let mx = [a.max[0].max(b.max[0]), a.max[1].max(b.max[1]), a.max[2].max(b.max[2])];
    (mn, mx)
}
