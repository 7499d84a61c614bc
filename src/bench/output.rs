//! Writing a run's files: every file goes to a temporary name beside its
//! target and is renamed into place, so an interrupted run never leaves a
//! half-written file.

use std::path::Path;

use crate::bench::{BenchError, BenchResult, Platform, Row, Settings, cub::PeerStatus};

// The one atomic writer and the build information, re-exported for the
// binary's bench command, which names them through here.
pub use crate::build_info::GIT_COMMIT;
pub use crate::files::write_atomically;

/// Everything results.json holds.
#[derive(serde::Serialize)]
pub struct Results<'a> {
    pub reap_version: &'static str,
    pub reap_commit: &'static str,
    /// Seconds since the Unix epoch when the run ended.
    pub finished_unix_s: u64,
    /// False when the run was stopped (Ctrl-C) before every row was measured.
    pub complete: bool,
    /// The command line that measured this run.
    pub command: &'a str,
    pub platform: &'a Platform,
    pub cub_peer: &'a PeerStatus,
    pub presets: &'a [String],
    pub settings: &'a [Settings],
    pub rows: &'a [Row],
}

pub fn now_unix_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

pub fn results_json(r: &Results<'_>) -> BenchResult<String> {
    Ok(serde_json::to_string_pretty(r)?)
}

/// What `reap bench report` reads back from a results.json to draw the
/// report and plots again (after a report-writer fix, say) without measuring.
#[derive(serde::Deserialize)]
pub struct Stored {
    pub complete: bool,
    #[serde(default)]
    pub command: Option<String>,
    pub platform: Platform,
    pub cub_peer: PeerStatus,
    pub presets: Vec<String>,
    pub rows: Vec<Row>,
}

pub fn read_results(dir: &Path) -> BenchResult<Stored> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|source| BenchError::Read { path: path.display().to_string(), source })?;
    serde_json::from_str(&text).map_err(|e| BenchError::Parse { path: path.display().to_string(), why: e.to_string() })
}
