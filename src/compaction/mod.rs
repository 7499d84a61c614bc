//! The compaction library: input buffer + keep rule → compacted output + count.
//!
//! It knows nothing of rays or bodies. An [`Algorithm`] is picked by its
//! catalog name at run time; a [`Backend`] runs it (CPU today, CUDA and wgpu
//! behind the same trait); every run reports its phases named as in its paper.

mod algorithm;
mod backend;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod element;
mod error;
mod pattern;
pub mod shard;
mod site;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub use algorithm::{Algorithm, Billeter, CompactSimd, Consumes, Operation, OutputMode};
#[cfg(feature = "wgpu")]
pub(crate) use backend::tuning_from_env;
pub use backend::{Backend, BackendKind, CompactCall, Keep, KeepMode, Lens, PhaseTime, Rejected, Report, ScanCall};
pub use cpu::{CpuBackend, CpuReport};
pub use element::{ELEMENT_SIZES, Element, ScanElement, SortKey, check_element, element_sizes_text, same_bits};
pub use error::{Error, Result};
pub use pattern::Pattern;
pub use site::{Compaction, Fusion, SiteError, SitePath};
