//! Files the workloads' commands write: checked before a run starts, and
//! written whole or not at all (a temporary file, then a rename).

use std::io::Write;
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

/// Writes `bytes` to `path` whole or not at all.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_atomically_with(path, |w| w.write_all(bytes))
}

/// Writes what `write` produces to `path` whole or not at all: into a
/// temporary file beside it, renamed into place only when every write
/// succeeded. On any failure the temporary file is removed and an existing
/// `path` is left as it was.
pub fn write_atomically_with<E: std::fmt::Display>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), OutputError> {
    let tmp = partial(path);
    let file = std::fs::File::create(&tmp).map_err(|e| fail(path, e))?;
    let written = (|| {
        let mut w = std::io::BufWriter::new(file);
        write(&mut w).map_err(|e| fail(path, e))?;
        w.into_inner().map_err(|e| fail(path, e.into_error()))?;
        std::fs::rename(&tmp, path).map_err(|e| fail(path, e))
    })();
    if written.is_err() {
        // Best effort: the write's own error is the one worth reporting.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("reap-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Every entry of `d` but the ones named.
    fn others(d: &Path, keep: &[&str]) -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !keep.contains(&n.as_str()))
            .collect()
    }

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temporary() {
        let d = dir("ok");
        let path = d.join("out.csv");
        std::fs::write(&path, b"old").unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(others(&d, &["out.csv"]).is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_failing_writer_leaves_the_old_file_and_no_temporary() {
        let d = dir("closure");
        let path = d.join("out.csv");
        std::fs::write(&path, b"old").unwrap();
        let e = write_atomically_with(&path, |w| {
            w.write_all(b"half of it").map_err(|e| e.to_string())?;
            Err("the writer gave up".to_string())
        })
        .unwrap_err();
        assert!(e.to_string().contains("the writer gave up"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert!(others(&d, &["out.csv"]).is_empty(), "{:?}", others(&d, &["out.csv"]));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_failing_rename_leaves_no_temporary() {
        // A folder under the target's name: the temporary is written, the rename fails.
        let d = dir("rename");
        let path = d.join("out.csv");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), b"kept").unwrap();
        assert!(write_atomically(&path, b"new").is_err());
        assert!(others(&d, &["out.csv"]).is_empty(), "{:?}", others(&d, &["out.csv"]));
        assert_eq!(std::fs::read(path.join("inside")).unwrap(), b"kept");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let d = dir("missing");
        let path = d.join("no-such-folder").join("out.csv");
        let e = write_atomically(&path, b"new").unwrap_err();
        assert!(e.to_string().contains("out.csv"), "{e}");
        assert!(!path.exists() && !partial(&path).exists());
        assert!(check_writable(&path).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
