//! The algorithm catalog: every compaction algorithm reap implements, with the
//! stable kebab-case name used by the CLI, the overlay, files and reports.

use std::fmt;
use std::str::FromStr;

use crate::compaction::Error;

/// How Billeter et al.'s `compactSIMD` finds each lane's output slot (seed 000 §3.3-3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompactSimd {
    /// A prefix sum over the S lanes' validity flags (Listing 5).
    Prefix,
    /// A ballot bit mask and a population count of the lanes below (Listing 6).
    Popc,
}

/// Where Billeter's phase 3 assembles its output (seed 000 §3.5, §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputMode {
    /// Each valid lane writes straight to global memory.
    Scattered,
    /// Compacted into on-chip storage, then flushed S elements at a time.
    Staged,
    /// Fully buffered and aligned: only whole, aligned S-element writes (Listing 7).
    Buffered,
    /// Per processor, staged or scattered chosen from the range's valid ratio.
    Selective,
}

/// One Billeter variant: a compactSIMD flavour and an output mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Billeter {
    pub simd: CompactSimd,
    pub output: OutputMode,
}

/// Every compaction algorithm of the catalog (DESIGN.md "Algorithm catalog").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Sequential,
    Horn,
    Sengupta,
    Blelloch,
    Roger,
    Billeter(Billeter),
    Chained,
    Lookback,
    Atomic,
    RedzoneBlock,
    RedzoneGrid,
    Stencil,
}

/// What an algorithm's first phase reads to decide which elements survive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Consumes {
    /// Evaluates the keep rule inline while it counts and moves.
    Predicate,
    /// Materialises a 0/1 flag per element first, then scans the flags.
    Flags,
    /// A list of the indices to remove (Redzone).
    RemovalIndices,
}

impl Consumes {
    pub fn name(self) -> &'static str {
        match self {
            Consumes::Predicate => "predicate",
            Consumes::Flags => "flags",
            Consumes::RemovalIndices => "removal-index list",
        }
    }
}

/// The operations of the library. Not every algorithm implements every one;
/// [`Algorithm::supports`] says which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Out-of-place compaction: the kept elements, in order for stable algorithms.
    Select,
    /// Stream split: kept elements first, rejected after (seed 000 §5.3).
    Partition,
    /// Exclusive prefix sum (seed 000 §5.2, seed 001 module 10, seed 002).
    Scan,
    /// Radix sort by repeated stream split, one key bit per split (seed 000 §5.3).
    Sort,
    /// In-place removal by a list of indices (seed 004).
    Remove,
}

impl Operation {
    pub const ALL: [Operation; 5] =
        [Operation::Select, Operation::Partition, Operation::Scan, Operation::Sort, Operation::Remove];

    pub fn name(self) -> &'static str {
        match self {
            Operation::Select => "select",
            Operation::Partition => "partition",
            Operation::Scan => "scan",
            Operation::Sort => "sort",
            Operation::Remove => "remove",
        }
    }
}

const fn billeter(simd: CompactSimd, output: OutputMode) -> Algorithm {
    Algorithm::Billeter(Billeter { simd, output })
}

impl Algorithm {
    /// The whole catalog, in the order reports list it.
    pub const ALL: [Algorithm; 19] = [
        Algorithm::Sequential,
        Algorithm::Horn,
        Algorithm::Sengupta,
        Algorithm::Blelloch,
        Algorithm::Roger,
        billeter(CompactSimd::Prefix, OutputMode::Scattered),
        billeter(CompactSimd::Prefix, OutputMode::Staged),
        billeter(CompactSimd::Prefix, OutputMode::Buffered),
        billeter(CompactSimd::Prefix, OutputMode::Selective),
        billeter(CompactSimd::Popc, OutputMode::Scattered),
        billeter(CompactSimd::Popc, OutputMode::Staged),
        billeter(CompactSimd::Popc, OutputMode::Buffered),
        billeter(CompactSimd::Popc, OutputMode::Selective),
        Algorithm::Chained,
        Algorithm::Lookback,
        Algorithm::Atomic,
        Algorithm::RedzoneBlock,
        Algorithm::RedzoneGrid,
        Algorithm::Stencil,
    ];

    /// The stable kebab-case catalog name.
    pub fn name(self) -> &'static str {
        use CompactSimd::*;
        use OutputMode::*;
        match self {
            Algorithm::Sequential => "sequential",
            Algorithm::Horn => "horn",
            Algorithm::Sengupta => "sengupta",
            Algorithm::Blelloch => "blelloch",
            Algorithm::Roger => "roger",
            Algorithm::Billeter(b) => match (b.simd, b.output) {
                (Prefix, Scattered) => "billeter-prefix-scattered",
                (Prefix, Staged) => "billeter-prefix-staged",
                (Prefix, Buffered) => "billeter-prefix-buffered",
                (Prefix, Selective) => "billeter-prefix-selective",
                (Popc, Scattered) => "billeter-popc-scattered",
                (Popc, Staged) => "billeter-popc-staged",
                (Popc, Buffered) => "billeter-popc-buffered",
                (Popc, Selective) => "billeter-popc-selective",
            },
            Algorithm::Chained => "chained",
            Algorithm::Lookback => "lookback",
            Algorithm::Atomic => "atomic",
            Algorithm::RedzoneBlock => "redzone-block",
            Algorithm::RedzoneGrid => "redzone-grid",
            Algorithm::Stencil => "stencil",
        }
    }

    /// Stable algorithms keep the input order of the survivors.
    pub fn stable(self) -> bool {
        !matches!(self, Algorithm::Atomic | Algorithm::RedzoneBlock | Algorithm::RedzoneGrid)
    }

    /// In-place algorithms compact the input buffer itself.
    pub fn in_place(self) -> bool {
        matches!(self, Algorithm::RedzoneBlock | Algorithm::RedzoneGrid)
    }

    pub fn consumes(self) -> Consumes {
        match self {
            Algorithm::Horn | Algorithm::Sengupta | Algorithm::Blelloch | Algorithm::Roger | Algorithm::Stencil => {
                Consumes::Flags
            }
            Algorithm::RedzoneBlock | Algorithm::RedzoneGrid => Consumes::RemovalIndices,
            _ => Consumes::Predicate,
        }
    }

    /// Where the algorithm comes from: a seed file and section, or the modern source.
    pub fn source(self) -> &'static str {
        match self {
            Algorithm::Sequential => "000 §2 Listing 1",
            Algorithm::Horn => "003 §II, 002 §2.2",
            Algorithm::Sengupta => "002 §2.4",
            Algorithm::Blelloch => "001 mod. 10.3-10.4, 002 §2.3",
            Algorithm::Roger => "003 §III",
            Algorithm::Billeter(_) => "000 §3-4",
            Algorithm::Chained => "001 mod. 10.4",
            Algorithm::Lookback => "Merrill & Garland 2016",
            Algorithm::Atomic => "pbrt-v4 queues",
            Algorithm::RedzoneBlock => "004 Alg. 1",
            Algorithm::RedzoneGrid => "004 Alg. 2",
            Algorithm::Stencil => "004 §5.3 (Bernabé et al.)",
        }
    }

    /// Whether its partition can leave the rejected half reversed
    /// ([`Rejected::Reversed`](crate::compaction::Rejected::Reversed)): the single-pass algorithms write it from the
    /// end backwards as they go, so that contract saves them a pass; the
    /// sequential reference does it in its one loop.
    pub fn reverses_rejected(self) -> bool {
        matches!(self, Algorithm::Sequential | Algorithm::Lookback | Algorithm::Chained)
    }

    /// Whether a producer kernel can compact through it as it produces (a
    /// fused site, kernels/compaction/site.cuh): a single-pass algorithm needs
    /// only a tile's kept count and its predecessors' prefix, so it places each
    /// kept item in the kernel that made it. The multi-pass ones run as a
    /// separate pass over the producer's slots.
    pub fn fuses(self) -> bool {
        matches!(self, Algorithm::Lookback | Algorithm::Chained | Algorithm::Atomic)
    }

    /// Which operations the algorithm implements (on every backend that runs it).
    pub fn supports(self, op: Operation) -> bool {
        match op {
            Operation::Select => true,
            // A split needs a stable, out-of-place algorithm: the rejected half
            // is laid out by the same offsets as the kept half.
            Operation::Partition | Operation::Sort => self.stable() && !self.in_place(),
            Operation::Scan => {
                matches!(
                    self,
                    Algorithm::Sequential
                        | Algorithm::Horn
                        | Algorithm::Sengupta
                        | Algorithm::Blelloch
                        | Algorithm::Chained
                        | Algorithm::Lookback
                ) || self == Algorithm::BILLETER_SCAN
            }
            Operation::Remove => self.in_place(),
        }
    }

    /// Seed 000 §5.2 derives its global prefix sum from the prefix-sum
    /// compactSIMD; output modes do not apply to a scan, which always writes
    /// whole aligned S-element groups. This one name stands for it.
    pub const BILLETER_SCAN: Algorithm = billeter(CompactSimd::Prefix, OutputMode::Staged);

    /// The catalog names, for error messages and `--help`.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|a| a.name()).collect()
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Algorithm::ALL
            .iter()
            .copied()
            .find(|a| a.name() == s)
            .ok_or_else(|| Error::UnknownAlgorithm { name: s.to_string(), known: Algorithm::names().join(", ") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>().unwrap(), a);
            assert!(seen.insert(a.name()), "duplicate name {}", a.name());
        }
    }

    #[test]
    fn unknown_name_lists_the_catalog() {
        let err = "bogus".parse::<Algorithm>().unwrap_err().to_string();
        assert!(err.contains("bogus") && err.contains("lookback"), "{err}");
    }
}
