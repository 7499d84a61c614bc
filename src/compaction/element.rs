//! What the library compacts, scans and sorts.

use bytemuck::Pod;

use crate::compaction::{Error, Result};

/// An element the library can move: any plain-old-data type of 4, 8 or 16
/// bytes. The size is checked at each call ([`check_element`]) rather than in
/// the type system, so `[u32; 4]` or a user's `#[repr(C)]` struct just work.
pub trait Element: Pod + Send + Sync {}
impl<T: Pod + Send + Sync> Element for T {}

/// The element sizes reap's kernels are written for.
pub const ELEMENT_SIZES: [usize; 3] = [4, 8, 16];

pub fn check_element<T: Element>() -> Result<()> {
    let size = std::mem::size_of::<T>();
    if ELEMENT_SIZES.contains(&size) { Ok(()) } else { Err(Error::ElementSize { size }) }
}

/// Bitwise equality: the sentinel rule compares bytes, so it works for any Pod
/// type and treats float NaNs by their bits, as a GPU `!=` on words would.
pub fn same_bits<T: Element>(a: &T, b: &T) -> bool {
    bytemuck::bytes_of(a) == bytemuck::bytes_of(b)
}

/// Values an exclusive scan can sum (wrapping, like unsigned GPU arithmetic).
pub trait ScanElement: Element + Copy + Default + PartialEq + std::fmt::Debug {
    const ZERO: Self;
    fn add(self, other: Self) -> Self;
    fn from_u64(v: u64) -> Self;
    fn to_u64(self) -> u64;
}

impl ScanElement for u32 {
    const ZERO: Self = 0;
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl ScanElement for u64 {
    const ZERO: Self = 0;
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    fn from_u64(v: u64) -> Self {
        v
    }
    fn to_u64(self) -> u64 {
        self
    }
}

/// Keys a radix sort by repeated split can order, one bit per split.
pub trait SortKey: Element + Copy + Ord + std::fmt::Debug {
    const BITS: u32;
    fn bit(self, i: u32) -> bool;
    /// Carries a 32-bit value in a key-sized word, so that a key-value pair
    /// travels as one interleaved element `[K; 2]` (seed 000 §5.3).
    fn from_u32(v: u32) -> Self;
    fn low_u32(self) -> u32;
}

impl SortKey for u32 {
    const BITS: u32 = 32;
    fn bit(self, i: u32) -> bool {
        (self >> i) & 1 == 1
    }
    fn from_u32(v: u32) -> Self {
        v
    }
    fn low_u32(self) -> u32 {
        self
    }
}

impl SortKey for u64 {
    const BITS: u32 = 64;
    fn bit(self, i: u32) -> bool {
        (self >> i) & 1 == 1
    }
    fn from_u32(v: u32) -> Self {
        v as u64
    }
    fn low_u32(self) -> u32 {
        self as u32
    }
}
