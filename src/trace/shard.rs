//! The pixels one engine traces: a contiguous, row-major range of the image.
//! Split-frame rendering gives each engine (one per GPU) a band of rows; path
//! i of an engine is pixel `base + i`, and every random number is drawn from
//! the pixel, never the path, so the bands' sums added together are the
//! single-engine image bit for bit.
//!
//! The per-pixel sums stay image-sized on every engine whatever its shard, so
//! a driver that moves a band's edge copies the moved pixels' sums from the
//! old owner to the new one and nothing else changes.

use super::{TraceError, TraceResult};

/// Pixels `[base, base + count)` of the image, row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Shard {
    pub base: u64,
    pub count: u64,
}

impl Shard {
    /// Every pixel of an image of `pixels` pixels: an engine's default.
    pub fn whole(pixels: u64) -> Self {
        Shard { base: 0, count: pixels }
    }

    /// `rows` rows of a `width`-pixel-wide image from row `first_row` on.
    pub fn rows(width: u32, first_row: u32, rows: u32) -> Self {
        Shard { base: width as u64 * first_row as u64, count: width as u64 * rows as u64 }
    }

    /// One past the last pixel (saturating: a shard that wraps lies outside every image).
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.count)
    }

    pub fn range(&self) -> std::ops::Range<u64> {
        self.base..self.end()
    }

    /// Whether pixel `p` belongs to the shard.
    pub fn contains(&self, p: u64) -> bool {
        self.range().contains(&p)
    }

    /// A shard an engine of `image` pixels can trace: at least one pixel, all
    /// of them inside the image. An empty band has no engine to run it, so it
    /// is refused rather than launched with empty grids.
    pub fn check(&self, image: u64) -> TraceResult<()> {
        if self.count == 0 || self.base.checked_add(self.count).is_none_or(|end| end > image) {
            return Err(TraceError::ShardOutsideImage { base: self.base, count: self.count, image });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_row_major_ranges() {
        assert_eq!(Shard::rows(10, 3, 2), Shard { base: 30, count: 20 });
        assert_eq!(Shard::rows(10, 0, 4), Shard::whole(40));
        assert!(Shard::rows(10, 3, 2).contains(49) && !Shard::rows(10, 3, 2).contains(50));
    }

    /// A shard past the image, empty, or whose end overflows is a typed error.
    #[test]
    fn shards_outside_the_image_are_refused() {
        assert!(Shard::whole(40).check(40).is_ok());
        assert!(Shard::rows(10, 3, 1).check(40).is_ok());
        for bad in [Shard::rows(10, 3, 2), Shard { base: 40, count: 1 }, Shard { base: 0, count: 0 }] {
            assert!(matches!(bad.check(40), Err(TraceError::ShardOutsideImage { image: 40, .. })), "{bad:?}");
        }
        let wraps = Shard { base: u64::MAX, count: 2 };
        assert!(matches!(wraps.check(40), Err(TraceError::ShardOutsideImage { .. })));
    }
}
