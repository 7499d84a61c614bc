//! Files the workloads' commands write: checked before a run starts, and
//! written whole or not at all (a temporary file, then a rename).

use std::path::{Path, PathBuf};

/// A file that cannot be written, or a name whose extension says nothing
/// reap writes.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {why}")]
pub struct OutputError {
    pub path: String,
    pub why: String,
}

pub fn fail(path: &Path, why: impl ToString) -> OutputError {
    OutputError { path: path.display().to_string(), why: why.to_string() }
}

/// A timings file's format, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingsFormat {
    Json,
    Csv,
}

pub fn timings_format(path: &Path) -> Result<TimingsFormat, OutputError> {
    match path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).as_deref() {
        Some("json") => Ok(TimingsFormat::Json),
        Some("csv") => Ok(TimingsFormat::Csv),
        _ => Err(fail(path, "the timings file must end in .json or .csv")),
    }
}

fn partial(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".partial");
    PathBuf::from(p)
}

/// Fails now if `path` cannot be written (missing folder, no permission), by
/// creating and removing its temporary file.
pub fn check_writable(path: &Path) -> Result<(), OutputError> {
    let tmp = partial(path);
    std::fs::write(&tmp, b"").map_err(|e| fail(path, e))?;
    std::fs::remove_file(&tmp).map_err(|e| fail(path, e))
}

pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let tmp = partial(path);
    std::fs::write(&tmp, bytes).map_err(|e| fail(path, e))?;
    std::fs::rename(&tmp, path).map_err(|e| fail(path, e))
}
