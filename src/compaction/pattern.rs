//! Layouts of survivors in an input: the keep patterns the correctness suite
//! (`verify`), the CPU algorithms' unit tests and the property tests draw
//! their keep flags from. They sit in the library, not in `verify`, so the
//! library's own tests need nothing from the suite built on top of it.

use std::fmt;

/// The layout of survivors in a case's input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Each element kept with this probability.
    Random(f64),
    /// Every other element, starting with a kept one.
    Alternating,
    /// Runs of random length (1..=300) alternating kept / rejected.
    Runs,
    /// Only the first element survives.
    FirstOnly,
    /// Only the last element survives.
    LastOnly,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Random(d) => write!(f, "random {:.0}%", d * 100.0),
            Pattern::Alternating => f.write_str("alternating"),
            Pattern::Runs => f.write_str("runs"),
            Pattern::FirstOnly => f.write_str("first-only"),
            Pattern::LastOnly => f.write_str("last-only"),
        }
    }
}

impl Pattern {
    pub fn flags(self, n: usize, rng: &mut fastrand::Rng) -> Vec<bool> {
        match self {
            Pattern::Random(d) => (0..n).map(|_| rng.f64() < d).collect(),
            Pattern::Alternating => (0..n).map(|i| i % 2 == 0).collect(),
            Pattern::Runs => {
                let mut v = Vec::with_capacity(n);
                let mut keep = rng.bool();
                while v.len() < n {
                    let run = rng.usize(1..=300).min(n - v.len());
                    v.extend(std::iter::repeat_n(keep, run));
                    keep = !keep;
                }
                v
            }
            Pattern::FirstOnly => (0..n).map(|i| i == 0).collect(),
            Pattern::LastOnly => (0..n).map(|i| i + 1 == n).collect(),
        }
    }
}
