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

/// The folder `path` is written in ("." for a bare file name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A new, uniquely named temporary beside `path` (`.o.png.<random>.partial`):
/// never a file of the user's, and removed when dropped unless persisted.
fn temporary(path: &Path) -> Result<tempfile::NamedTempFile, OutputError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".partial");
    // What File::create gives (0666 less the umask), not tempfile's private 0600.
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    // tempfile appends `at path ".x.Ab12.partial"` to the system's error: the
    // user named `path`, so say the system's reason alone. The inner error
    // is private to tempfile, so its text is cut at the suffix it adds.
    b.tempfile_in(folder_of(path)).map_err(|e| {
        let text = e.to_string();
        fail(path, text.split(" at path \"").next().unwrap_or(&text))
    })
}

/// Fails now, before any work, if `path` cannot be written as a file: a name
/// ending in `/`, a folder, a missing folder, no permission. Creates and
/// removes a uniquely named temporary beside it, as the real write will.
pub fn check_writable(path: &Path) -> Result<(), OutputError> {
    if path.as_os_str().to_string_lossy().ends_with(['/', std::path::MAIN_SEPARATOR]) {
        return Err(fail(path, "the name ends in a slash, so it names a folder; give a file name"));
    }
    if path.is_dir() {
        return Err(fail(path, "it is a folder; give a file name (inside it, or beside it)"));
    }
    let folder = folder_of(path);
    if !folder.is_dir() {
        return Err(fail(path, format!("the folder {} does not exist; create it first", folder.display())));
    }
    temporary(path).map(drop)
}

/// Fails now, before any work, if files cannot be written in `dir`: creates
/// it (and its parents) when missing, then a probe file inside it.
pub fn check_output_folder(dir: &Path) -> Result<(), OutputError> {
    if dir.exists() && !dir.is_dir() {
        return Err(fail(dir, "it is a file, not a folder; give a folder for the results"));
    }
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    // The probe's name is ours, not the user's: a failure names the folder.
    check_writable(&dir.join("results")).map_err(|e| fail(dir, e.why))
}

/// Fails if `output` is the same file as one of `inputs` (same device and
/// inode), so a run never replaces what it reads.
pub fn check_not_an_input(output: &Path, inputs: &[PathBuf]) -> Result<(), OutputError> {
    let Ok(out) = std::fs::canonicalize(output) else {
        return Ok(()); // not there yet: it cannot be an input
    };
    for input in inputs {
        if std::fs::canonicalize(input).is_ok_and(|i| i == out) || same_file(output, input) {
            return Err(fail(
                output,
                format!("it is the input {}; writing it would replace it: choose another output name", input.display()),
            ));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &Path, _: &Path) -> bool {
    false // canonical paths already compared
}

/// Writes `bytes` to `path` whole or not at all.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_atomically_with(path, |w| w.write_all(bytes))
}

/// Writes what `write` produces to `path` whole or not at all: into a
/// uniquely named temporary file beside it, flushed to disk, renamed into
/// place only when every write succeeded. On any failure (a full disk
/// included) the temporary is removed and an existing `path` is left as it was.
pub fn write_atomically_with<E: std::fmt::Display>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), OutputError> {
    let mut tmp = temporary(path)?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(|e| fail(path, e))?;
        w.flush().map_err(|e| fail(path, e))?;
    }
    // A full disk may only show here; dropping `tmp` on the error removes it.
    tmp.as_file().sync_all().map_err(|e| fail(path, e))?;
    // A failed rename hands the temporary back in the error, which removes it when dropped.
    tmp.persist(path).map(drop).map_err(|e| fail(path, e.error))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder of one test's own, removed when the test ends.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let d = std::env::temp_dir().join(format!("reap-files-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Scratch(d)
        }
    }

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Asserts that `d` holds no entry but the ones named: no temporary or probe was left.
    fn assert_holds_only(d: &Path, keep: &[&str]) {
        let others: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !keep.contains(&n.as_str()))
            .collect();
        assert!(others.is_empty(), "{} also holds {others:?}", d.display());
    }

    /// A folder of test `name`'s own whose `out.csv` holds `old`: an earlier output.
    fn earlier_output(name: &str) -> (Scratch, PathBuf) {
        let d = Scratch::new(name);
        let path = d.join("out.csv");
        std::fs::write(&path, b"old").unwrap();
        (d, path)
    }

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temporary() {
        let (d, path) = earlier_output("ok");
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_holds_only(&d, &["out.csv"]);
    }

    #[test]
    fn a_failing_writer_leaves_the_old_file_and_no_temporary() {
        let (d, path) = earlier_output("closure");
        let e = write_atomically_with(&path, |w| {
            w.write_all(b"half of it").map_err(|e| e.to_string())?;
            Err("the writer gave up".to_string())
        })
        .unwrap_err();
        assert!(e.to_string().contains("the writer gave up"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_holds_only(&d, &["out.csv"]);
    }

    #[test]
    fn a_failing_rename_leaves_no_temporary() {
        // A folder under the target's name: the temporary is written, the rename fails.
        let d = Scratch::new("rename");
        let path = d.join("out.csv");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), b"kept").unwrap();
        assert!(write_atomically(&path, b"new").is_err());
        assert_holds_only(&d, &["out.csv"]);
        assert_eq!(std::fs::read(path.join("inside")).unwrap(), b"kept");
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let d = Scratch::new("missing");
        let path = d.join("no-such-folder").join("out.csv");
        let e = write_atomically(&path, b"new").unwrap_err();
        assert!(e.to_string().contains("out.csv"), "{e}");
        assert!(!path.exists());
        assert_holds_only(&d, &[]);
        assert!(check_writable(&path).is_err());
    }

    #[test]
    fn item3_a_users_own_partial_file_is_never_touched() {
        let d = Scratch::new("users-partial");
        let path = d.join("o.png");
        let mine = d.join("o.png.partial");
        std::fs::write(&mine, b"the user's").unwrap();
        check_writable(&path).unwrap();
        assert!(write_atomically_with(&path, |_| Err("the writer gave up")).is_err());
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&mine).unwrap(), b"the user's");
        assert_holds_only(&d, &["o.png", "o.png.partial"]);
    }

    #[test]
    fn item3_a_folder_or_a_trailing_slash_is_refused_before_any_work() {
        let d = Scratch::new("folder");
        let path = d.join("o.png");
        std::fs::create_dir(&path).unwrap();
        let e = check_writable(&path).unwrap_err();
        assert!(e.to_string().contains("it is a folder"), "{e}");
        let slash = PathBuf::from(format!("{}/", d.join("new.png").display()));
        let e = check_writable(&slash).unwrap_err();
        assert!(e.to_string().contains("ends in a slash"), "{e}");
        // The probes left nothing behind, inside the folder or beside it.
        assert_holds_only(&d, &["o.png"]);
        assert_holds_only(&path, &[]);
    }

    #[test]
    fn item11_an_output_naming_an_input_is_refused() {
        let d = Scratch::new("input");
        let scene = d.join("scene.obj");
        std::fs::write(&scene, b"v 0 0 0").unwrap();
        let e = check_not_an_input(&d.join(".").join("scene.obj"), std::slice::from_ref(&scene)).unwrap_err();
        assert!(e.to_string().contains("would replace it"), "{e}");
        #[cfg(unix)]
        {
            let link = d.join("hard.obj");
            std::fs::hard_link(&scene, &link).unwrap();
            assert!(check_not_an_input(&link, std::slice::from_ref(&scene)).is_err());
        }
        assert!(check_not_an_input(&d.join("other.obj"), std::slice::from_ref(&scene)).is_ok());
    }
}
