//! What the library compacts, scans and sorts.

use bytemuck::Pod;

use crate::compaction::{Error, Result};

/// An element the library can move: any plain-old-data type of 4, 8, 16 or
/// 32 bytes (a 32-byte ray record, say). The size is checked at each call ([`check_element`]) rather than in
/// the type system, so `[u32; 4]` or a user's `#[repr(C)]` struct just work.
pub trait Element: Pod + Send + Sync {}
impl<T: Pod + Send + Sync> Element for T {}

/// The element sizes reap's kernels are written for.
pub const ELEMENT_SIZES: [usize; 4] = [4, 8, 16, 32];

/// The element sizes as a list for messages: "4, 8, 16, 32".
pub fn element_sizes_text() -> String {
    ELEMENT_SIZES.map(|s| s.to_string()).join(", ")
}

/// Runs `$body` with `$t` the plain word type of `$es` bytes (u32, u64,
/// [u32; 4] or [u32; 8]), or `$other` for any other size: the one place that
/// turns a run-time element size into a type.
#[macro_export]
macro_rules! with_element_size {
    ($es:expr, $t:ident => $body:expr, $other:pat => $otherwise:expr) => {
        match $es {
            4 => {
                type $t = u32;
                $body
            }
            8 => {
                type $t = u64;
                $body
            }
            16 => {
                type $t = [u32; 4];
                $body
            }
            32 => {
                type $t = [u32; 8];
                $body
            }
            $other => $otherwise,
        }
    };
}

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

/// Keys a radix sort by repeated split can order, one bit per split.
pub trait SortKey: Element + Copy + Ord + std::fmt::Debug {
    const BITS: u32;
    fn bit(self, i: u32) -> bool;
    /// Carries a 32-bit value in a key-sized word, so that a key-value pair
    /// travels as one interleaved element `[K; 2]` (seed 000 §5.3).
    fn from_u32(v: u32) -> Self;
    fn low_u32(self) -> u32;
}

/// u32 and u64 are scan values and sort keys alike: wrapping adds, one bit
/// per split, conversions by `as`.
macro_rules! unsigned_word {
    ($t:ty) => {
        impl ScanElement for $t {
            const ZERO: Self = 0;
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            fn to_u64(self) -> u64 {
                self as u64
            }
        }

        impl SortKey for $t {
            const BITS: u32 = <$t>::BITS;
            fn bit(self, i: u32) -> bool {
                (self >> i) & 1 == 1
            }
            fn from_u32(v: u32) -> Self {
                v as $t
            }
            fn low_u32(self) -> u32 {
                self as u32
            }
        }
    };
}

unsigned_word!(u32);
unsigned_word!(u64);
