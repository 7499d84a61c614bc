//! One measured configuration ([`Row`]) and the typed values of its
//! backend, algorithm and operation columns. Each value is written and read
//! by its name, so results.csv and results.json read as they always did, and
//! a results.json written by an earlier reap reads back; a name this reap
//! does not know is an error that quotes it.

use crate::bench::cub::PeerOp;
use crate::compaction::{Algorithm, BackendKind};

/// A closed set of values written by name: the columns of a [`Row`].
pub trait Named: Copy + Sized + 'static {
    /// What a value is, for the error on an unknown name ("backend").
    const WHAT: &'static str;
    fn name(self) -> &'static str;
    fn all() -> Vec<Self>;

    fn from_name(name: &str) -> Result<Self, String> {
        Self::all().into_iter().find(|v| v.name() == name).ok_or_else(|| {
            let known: Vec<&str> = Self::all().into_iter().map(|v| v.name()).collect();
            format!("unknown {} `{name}` (this reap knows {})", Self::WHAT, known.join(", "))
        })
    }
}

/// Serde's `serialize_with` for a [`Named`] field: its name.
pub fn by_name<T: Named, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v.name())
}

/// Serde's `deserialize_with` for a [`Named`] field: the value of that name.
pub fn from_name<'de, T: Named, D: serde::Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    let name = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
    T::from_name(&name).map_err(serde::de::Error::custom)
}

/// Who measured a row: one of reap's backends or the CUB peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BenchBackend {
    Cpu,
    Cuda,
    Wgpu,
    Cub,
}

impl Named for BenchBackend {
    const WHAT: &'static str = "backend";
    fn name(self) -> &'static str {
        match self {
            BenchBackend::Cpu => BackendKind::Cpu.name(),
            BenchBackend::Cuda => BackendKind::Cuda.name(),
            BenchBackend::Wgpu => BackendKind::Wgpu.name(),
            BenchBackend::Cub => "cub",
        }
    }
    fn all() -> Vec<Self> {
        vec![BenchBackend::Cpu, BenchBackend::Cuda, BenchBackend::Wgpu, BenchBackend::Cub]
    }
}

impl From<BackendKind> for BenchBackend {
    fn from(k: BackendKind) -> Self {
        match k {
            BackendKind::Cpu => BenchBackend::Cpu,
            BackendKind::Cuda => BenchBackend::Cuda,
            BackendKind::Wgpu => BenchBackend::Wgpu,
        }
    }
}

/// What a row timed: a catalog algorithm, or a CUB primitive (written
/// `cub-` and the peer's operation with hyphens, e.g. `cub-select-if`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowAlgorithm {
    Catalog(Algorithm),
    Cub(PeerOp),
}

impl Named for RowAlgorithm {
    const WHAT: &'static str = "algorithm";
    fn name(self) -> &'static str {
        match self {
            RowAlgorithm::Catalog(a) => a.name(),
            RowAlgorithm::Cub(op) => op.algorithm_name(),
        }
    }
    fn all() -> Vec<Self> {
        let catalog = Algorithm::ALL.into_iter().map(RowAlgorithm::Catalog);
        catalog.chain(PeerOp::all().into_iter().map(RowAlgorithm::Cub)).collect()
    }
}

/// The operation column as written: reap's names with hyphens, the CUB
/// peer's with underscores (its own job names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowOperation {
    Select,
    Partition,
    /// A partition whose rejected half is reversed: CUB `DevicePartition::If`'s contract.
    PartitionReversed,
    /// The same exclusive sum (u32 or u64) on both sides, so the CUB peer's
    /// scan is this value too (never `Peer(PeerOp::Scan)`; see the `From` below).
    Scan,
    SortKeys,
    SortPairs,
    /// Seed 004: an in-place removal of k listed elements (Redzone's, or the
    /// peer's mark + thrust::remove: never `Peer(PeerOp::Remove)`).
    Remove,
    /// Seed 004: a competitor marks the removed elements, then selects the rest.
    MarkSelect,
    /// One of the CUB peer's rows.
    Peer(PeerOp),
}

impl Named for RowOperation {
    const WHAT: &'static str = "operation";
    fn name(self) -> &'static str {
        match self {
            RowOperation::Select => "select",
            RowOperation::Partition => "partition",
            RowOperation::PartitionReversed => "partition-reversed",
            RowOperation::Scan => "scan",
            RowOperation::SortKeys => "sort-keys",
            RowOperation::SortPairs => "sort-pairs",
            RowOperation::Remove => "remove",
            RowOperation::MarkSelect => "mark+select",
            RowOperation::Peer(op) => op.name(),
        }
    }
    fn all() -> Vec<Self> {
        use RowOperation::*;
        let reap = [Select, Partition, PartitionReversed, Scan, SortKeys, SortPairs, Remove, MarkSelect];
        let shared = |op: &PeerOp| matches!(op, PeerOp::Scan | PeerOp::Remove);
        reap.into_iter().chain(PeerOp::all().into_iter().filter(|op| !shared(op)).map(Peer)).collect()
    }
}

impl From<PeerOp> for RowOperation {
    fn from(op: PeerOp) -> Self {
        match op {
            PeerOp::Scan => RowOperation::Scan,
            PeerOp::Remove => RowOperation::Remove,
            other => RowOperation::Peer(other),
        }
    }
}

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub preset: String,
    #[serde(serialize_with = "by_name", deserialize_with = "from_name")]
    pub backend: BenchBackend,
    pub device: String,
    #[serde(serialize_with = "by_name", deserialize_with = "from_name")]
    pub algorithm: RowAlgorithm,
    #[serde(serialize_with = "by_name", deserialize_with = "from_name")]
    pub operation: RowOperation,
    pub element_bytes: usize,
    pub n: u64,
    /// Fraction kept (fraction removed for seed 004's remove rows).
    pub density: f64,
    pub kept: u64,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Median of each phase, in the run's order.
    pub phases: Vec<(String, f64)>,
    /// Bytes the operation must move at least: for a compaction every input
    /// once and every survivor once; for scan and sort, input and output once.
    pub bytes: u64,
    /// The copy of the same `n` elements (read + written), median.
    pub copy_ms: f64,
    /// `bytes / median` as a share of the copy's rate. Files written before
    /// size 0 was refused hold `null` here (0/0): read as NaN.
    #[serde(deserialize_with = "crate::bench::output::nan_if_null")]
    pub pct_of_copy: f64,
    /// The matching CUB primitive on the same inputs in the same run.
    pub cub_ms: Option<f64>,
    /// `median_ms / cub_ms`: below 1 means reap is faster.
    pub vs_cub: Option<f64>,
}

impl Row {
    /// The catalog algorithm of one of reap's rows (none for the CUB peer's).
    pub fn catalog(&self) -> Option<Algorithm> {
        match self.algorithm {
            RowAlgorithm::Catalog(a) => Some(a),
            RowAlgorithm::Cub(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_are_unique_and_read_back<T: Named + PartialEq + std::fmt::Debug>() {
        let all = T::all();
        for v in &all {
            assert_eq!(T::from_name(v.name()).as_ref(), Ok(v));
            assert_eq!(all.iter().filter(|w| w.name() == v.name()).count(), 1, "{}", v.name());
        }
    }

    #[test]
    fn every_column_value_reads_back_by_its_name() {
        names_are_unique_and_read_back::<BenchBackend>();
        names_are_unique_and_read_back::<RowAlgorithm>();
        names_are_unique_and_read_back::<RowOperation>();
        names_are_unique_and_read_back::<PeerOp>();
    }

    #[test]
    fn an_unknown_name_is_an_error_that_quotes_it() {
        let e = RowOperation::from_name("sort_everything").unwrap_err();
        assert!(e.contains("unknown operation `sort_everything`") && e.contains("mark+select"), "{e}");
        let e = RowAlgorithm::from_name("cub-merge").unwrap_err();
        assert!(e.contains("unknown algorithm `cub-merge`") && e.contains("lookback"), "{e}");
    }
}
