//! What a rank needs of the others' bodies: the boxes of its own, in chunks
//! of bodies consecutive in Morton order (spatially compact), under a small
//! tree of their unions. A body of another rank whose swept box overlaps one
//! of the chunks is a ghost of this rank: every pair that touches a body the
//! rank owns then has both its bodies there.

use crate::collide::physics::V3;

/// Bodies per chunk: a smaller chunk hugs the rank's bodies closer (fewer
/// ghosts) and makes a deeper tree.
pub const CHUNK: usize = 8;

pub type Aabb = (V3, V3);

/// Closed boxes, as `physics::overlap` tests two leaves: a box that
/// overlaps a leaf overlaps every box holding it.
pub fn overlap(a: &Aabb, b: &Aabb) -> bool {
    (0..3).all(|k| a.0[k] <= b.1[k] && b.0[k] <= a.1[k])
}

fn union(a: &Aabb, b: &Aabb) -> Aabb {
    (std::array::from_fn(|k| a.0[k].min(b.0[k])), std::array::from_fn(|k| a.1[k].max(b.1[k])))
}

/// A rank's region: its chunks' boxes, then each level's pairwise unions up
/// to one box.
#[derive(Clone, Debug, Default)]
pub struct Region {
    levels: Vec<Vec<Aabb>>,
}

impl Region {
    /// The region of bodies whose boxes are `boxes`, in Morton order.
    pub fn of(boxes: &[Aabb]) -> Region {
        if boxes.is_empty() {
            return Region::default();
        }
        let mut levels = vec![boxes.chunks(CHUNK).map(|c| c.iter().skip(1).fold(c[0], |u, b| union(&u, b))).collect()];
        while levels.last().is_some_and(|l: &Vec<Aabb>| l.len() > 1) {
            let below = &levels[levels.len() - 1];
            let up = below.chunks(2).map(|p| p.iter().skip(1).fold(p[0], |u, b| union(&u, b))).collect();
            levels.push(up);
        }
        Region { levels }
    }

    /// Whether `b` overlaps a chunk of the region.
    pub fn overlaps(&self, b: &Aabb) -> bool {
        let Some(top) = self.levels.len().checked_sub(1) else { return false };
        let mut stack = vec![(top, 0usize)];
        while let Some((level, i)) = stack.pop() {
            if !overlap(&self.levels[level][i], b) {
                continue;
            }
            if level == 0 {
                return true;
            }
            let below = self.levels[level - 1].len();
            stack.extend([2 * i, 2 * i + 1].into_iter().filter(|&j| j < below).map(|j| (level - 1, j)));
        }
        false
    }

    /// Chunks in the region.
    pub fn chunks(&self) -> usize {
        self.levels.first().map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(x: f32) -> Aabb {
        ([x, 0.0, 0.0], [x + 1.0, 1.0, 1.0])
    }

    #[test]
    fn a_region_holds_what_its_chunks_hold_and_no_more() {
        // 100 unit boxes along x at 0, 2, 4, ...: gaps between them.
        let boxes: Vec<Aabb> = (0..100).map(|i| unit(2.0 * i as f32)).collect();
        let r = Region::of(&boxes);
        assert_eq!(r.chunks(), 13);
        for (i, b) in boxes.iter().enumerate() {
            assert!(r.overlaps(b), "box {i}");
        }
        // Touching counts (closed boxes), beyond the last does not.
        assert!(r.overlaps(&unit(199.0)));
        assert!(!r.overlaps(&unit(199.5)));
        assert!(!r.overlaps(&([0.0, 2.0, 0.0], [1.0, 3.0, 1.0])));
        assert!(!Region::of(&[]).overlaps(&unit(0.0)));
    }
}
