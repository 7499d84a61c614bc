//! The bench harness's own errors: bad settings, output files, and the CUB peer.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum BenchError {
    #[error(transparent)]
    Compaction(#[from] crate::compaction::Error),

    #[error("{0}")]
    Settings(String),

    #[error("unknown preset `{name}`; the presets are: {known}, or `all`")]
    UnknownPreset { name: String, known: String },

    #[error(transparent)]
    Write(#[from] crate::files::OutputError),

    #[error("cannot read {path} (give the --out folder of an earlier `reap bench compaction` run)")]
    Read { path: String, source: std::io::Error },

    /// The path names a device, a FIFO, a folder or a file too large to be a results file.
    #[error(transparent)]
    Input(crate::input::InputError),

    #[error("{path} is not a reap results file: {why}")]
    Parse { path: String, why: String },

    #[error("CSV: {0}")]
    Csv(#[from] csv::Error),

    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),

    /// A hop benchmark's wait ran out or was cut short: reported, never timed.
    #[error("{backend} {case}: {why}")]
    Hop { backend: &'static str, case: &'static str, why: String },

    #[error("plot {path}: {why}")]
    Plot { path: String, why: String },
}

pub type BenchResult<T> = std::result::Result<T, BenchError>;
