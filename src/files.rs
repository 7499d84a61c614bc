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

/// The one check every output path of a run goes through, before any work:
/// `path` must be writable as a file ([`check_writable`]) and must not be one
/// of `inputs`, the files the run reads ([`check_not_an_input`]). A writer
/// that learns its inputs only as it loads them (an OBJ's MTL files and
/// textures) calls [`check_not_an_input`] again with them, before writing.
pub fn check_output(path: &Path, inputs: &[PathBuf]) -> Result<(), OutputError> {
    check_writable(path)?;
    check_not_an_input(path, inputs)
}

/// Fails now, before any work, if `path` cannot be written as a file: a name
/// ending in `/`, anything but a regular file under that name, a missing
/// folder, no permission. Creates and removes a uniquely named temporary
/// beside it, as the real write will.
fn check_writable(path: &Path) -> Result<(), OutputError> {
    if path.as_os_str().to_string_lossy().ends_with(['/', std::path::MAIN_SEPARATOR]) {
        return Err(fail(path, "the name ends in a slash, so it names a folder; give a file name"));
    }
    check_replaceable(path)?;
    let folder = folder_of(path);
    if !folder.is_dir() {
        return Err(fail(path, format!("the folder {} does not exist; create it first", folder.display())));
    }
    temporary(path).map(drop)
}

/// Fails if `path` names something a finished output must not replace:
/// every output is renamed into place, which would turn a named pipe or a
/// device (`/dev/full`) into a regular file, and cannot replace a folder.
/// A name that is not there yet, or a link to nothing, is fine.
fn check_replaceable(path: &Path) -> Result<(), OutputError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    if kind.is_dir() {
        return Err(fail(path, "it is a folder; give a file name (inside it, or beside it)"));
    }
    #[cfg(unix)]
    let what = {
        use std::os::unix::fs::FileTypeExt;
        [
            (kind.is_fifo(), "a named pipe (FIFO)"),
            (kind.is_char_device(), "a character device"),
            (kind.is_block_device(), "a block device"),
            (kind.is_socket(), "a socket"),
        ]
        .into_iter()
        .find_map(|(is, what)| is.then_some(what))
        .unwrap_or("not a regular file")
    };
    #[cfg(not(unix))]
    let what = "not a regular file";
    Err(fail(
        path,
        format!(
            "it is {what}; reap writes each output whole into a new regular file renamed into place, \
             which would replace it: give the name of a regular file (or of none yet)"
        ),
    ))
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
    // Checked again here, for the writers that check nothing up front and a
    // pipe or device made under the name since.
    check_replaceable(path)?;
    // A failed rename hands the temporary back in the error, which removes it when dropped.
    tmp.persist(path).map(drop).map_err(|e| fail(path, e.error))
}

/// Files that only make sense together (an export's scene.obj and the
/// scene.mtl it names), written all or nothing: each is staged whole in a
/// temporary beside its place, and only once every one is staged are they
/// renamed into place. An error (a full disk) or a signal while staging
/// leaves the earlier set as it was; a rename that fails midway puts back
/// the ones already renamed.
#[derive(Default)]
pub struct FileSet {
    /// Each file's place and its temporary, closed: an export of thousands of meshes must not
    /// hold thousands of open files.
    staged: Vec<(PathBuf, tempfile::TempPath)>,
}

impl FileSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `bytes` into a temporary beside `path`, flushed to disk;
    /// `path` itself is left as it is until [`commit`](Self::commit).
    pub fn stage(&mut self, path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
        check_replaceable(path)?;
        let mut tmp = temporary(path)?;
        tmp.write_all(bytes).map_err(|e| fail(path, e))?;
        tmp.as_file().sync_all().map_err(|e| fail(path, e))?;
        self.staged.push((path.to_owned(), tmp.into_temp_path()));
        Ok(())
    }

    /// Renames every staged file into place. Each file it replaces is kept
    /// under a second name until all are in place, so a failure can put the
    /// earlier set back.
    pub fn commit(self) -> Result<(), OutputError> {
        let mut backups = Vec::with_capacity(self.staged.len());
        for (path, _) in &self.staged {
            check_replaceable(path)?;
            backups.push(backup(path)?);
        }
        let mut placed: Vec<PathBuf> = Vec::with_capacity(self.staged.len());
        for (path, tmp) in self.staged {
            if let Err(e) = tmp.persist(&path) {
                // Dropping the temporary in the error removes it; `path` kept its old file.
                for (done, old) in placed.iter().zip(&mut backups).rev() {
                    let _ = match old.take() {
                        Some(old) => old.persist(done).map(drop).map_err(|e| e.error),
                        None => std::fs::remove_file(done),
                    };
                }
                return Err(fail(&path, e.error));
            }
            placed.push(path);
        }
        Ok(()) // dropping the backups removes their names
    }
}

/// A second name for the file at `path`, if there is one, removed when
/// dropped: a hard link, or a copy where the file system has none.
fn backup(path: &Path) -> Result<Option<tempfile::NamedTempFile<()>>, OutputError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".old")
        .make_in(folder_of(path), |p| std::fs::hard_link(path, p).or_else(|_| std::fs::copy(path, p).map(drop)))
        .map(Some)
        .map_err(|e| fail(path, format!("cannot keep the earlier file while replacing it: {e}")))
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

    #[cfg(unix)]
    #[test]
    fn issue45_item1_a_named_pipe_is_refused_and_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let d = Scratch::new("fifo");
        let path = d.join("o.png");
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        let e = check_output(&path, &[]).unwrap_err();
        assert!(e.to_string().contains("named pipe") && e.to_string().contains("o.png"), "{e}");
        // The writers that check nothing up front are refused at the rename.
        assert!(write_atomically(&path, b"new").unwrap_err().to_string().contains("named pipe"));
        let mut set = FileSet::new();
        assert!(set.stage(&path, b"new").is_err());
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_fifo());
        assert_holds_only(&d, &["o.png"]);
    }

    #[test]
    fn issue45_item9_a_file_set_is_written_whole_or_not_at_all() {
        let d = Scratch::new("set");
        let sub = d.join("sub");
        let (new, a, b) = (d.join("new.txt"), d.join("a.obj"), sub.join("b.mtl"));
        let earlier = || {
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(&a, b"old a").unwrap();
            std::fs::write(&b, b"old b").unwrap();
        };
        let staged = || {
            let mut set = FileSet::new();
            for path in [&new, &a, &b] {
                set.stage(path, format!("new {}", path.display()).as_bytes()).unwrap();
            }
            set
        };
        earlier();
        // Staged and dropped (a failure or a signal before the commit): nothing changed, nothing left.
        drop(staged());
        assert_eq!((std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap()), (b"old a".to_vec(), b"old b".to_vec()));
        assert_holds_only(&d, &["a.obj", "sub"]);
        assert_holds_only(&sub, &["b.mtl"]);
        // The last rename fails (its folder is gone): the files already renamed are put back.
        let set = staged();
        std::fs::remove_dir_all(&sub).unwrap();
        assert!(set.commit().unwrap_err().to_string().contains("b.mtl"));
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");
        assert_holds_only(&d, &["a.obj"]);
        // A commit replaces them all and leaves no backup.
        earlier();
        staged().commit().unwrap();
        for path in [&new, &a, &b] {
            assert_eq!(std::fs::read(path).unwrap(), format!("new {}", path.display()).as_bytes());
        }
        assert_holds_only(&d, &["a.obj", "new.txt", "sub"]);
        assert_holds_only(&sub, &["b.mtl"]);
    }
}
