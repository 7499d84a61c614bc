//! The one place reap opens a file a user named: a scene (OBJ), its material libraries (MTL), their
//! textures, and the JSON reports `bench report` and `bench noise --before` read back.
//!
//! A path can name anything: `/dev/zero` or `/dev/urandom` never end, a FIFO blocks the first read
//! (or the open) until a writer comes, a directory cannot be read at all. So only regular files are
//! read, checked twice: on the path before opening (a FIFO's open would block) and on the opened
//! handle (the path may have been swapped in between). Each kind of input has a size limit, and the
//! read itself stops one byte past it, so a file that grows while it is read is still bounded.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// What a file is read as; each kind has its own size limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A scene's geometry. 4 GiB: the largest production OBJ assets (a Moana island element) are
    /// a few GB. The loader streams the file (it holds the mesh, not the text), reading no more
    /// than this limit however the file grows.
    Obj,
    /// A material library. 64 MiB: a material takes a few hundred bytes, so this is 100,000s of them.
    Mtl,
    /// A diffuse texture. 1 GiB: twice what the decoder may allocate for the image
    /// ([`MAX_DECODED_BYTES`](crate::scene::MAX_DECODED_BYTES)); a larger file holds an image
    /// that would be refused anyway.
    Texture,
    /// A results.json or noise.json written by reap. 256 MiB: a row is a few hundred bytes, so
    /// this is about a million measurements.
    Json,
}

impl InputKind {
    /// The most bytes a file of this kind may have.
    pub const fn limit(self) -> u64 {
        match self {
            InputKind::Obj => 4 << 30,
            InputKind::Mtl => 64 << 20,
            InputKind::Texture => 1 << 30,
            InputKind::Json => 256 << 20,
        }
    }

    /// The kind in words, for messages.
    pub const fn describe(self) -> &'static str {
        match self {
            InputKind::Obj => "an OBJ scene",
            InputKind::Mtl => "an MTL material library",
            InputKind::Texture => "a texture image",
            InputKind::Json => "a JSON report",
        }
    }
}

#[derive(Debug, Error)]
pub enum InputError {
    #[error("cannot read {}: {source}; check the path", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    #[error(
        "cannot read {}: it is {what}, not a regular file; give the path of {} file",
        path.display(),
        kind.describe()
    )]
    NotAFile { path: PathBuf, what: &'static str, kind: InputKind },

    #[error(
        "{} is {size} bytes, more than the {limit} bytes reap reads as {}; check that it is the \
         file you meant, or split it",
        path.display(),
        kind.describe()
    )]
    TooLarge { path: PathBuf, size: u64, limit: u64, kind: InputKind },
}

impl InputError {
    /// The file does not exist (as opposed to existing and being unreadable or unsuitable).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Opens `path` for reading as `kind`: only a regular file (links followed) no larger than the
/// kind's limit. Returns the file and its size. The caller must not read more than the limit:
/// [`read`] does that; a decoder with its own allocation limits may take the file as it is.
pub fn open(path: &Path, kind: InputKind) -> Result<(File, u64), InputError> {
    let io = |source| InputError::Io { path: path.to_owned(), source };
    // Before opening: opening a FIFO for reading blocks until a writer appears.
    regular_size(path, kind, &std::fs::metadata(path).map_err(io)?)?;
    let file = File::open(path).map_err(io)?;
    // After opening: what was checked may have been replaced in between.
    let size = regular_size(path, kind, &file.metadata().map_err(io)?)?;
    Ok((file, size))
}

/// Reads all of `path` as `kind` (see [`open`]).
pub fn read(path: &Path, kind: InputKind) -> Result<Vec<u8>, InputError> {
    let (file, size) = open(path, kind)?;
    let limit = kind.limit();
    // One byte past the limit tells a file that grew after the check from one that did not.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|source| InputError::Io { path: path.to_owned(), source })?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge { path: path.to_owned(), size: bytes.len() as u64, limit, kind });
    }
    Ok(bytes)
}

/// The size of a regular file within `kind`'s limit, or why the file will not be read.
fn regular_size(path: &Path, kind: InputKind, meta: &Metadata) -> Result<u64, InputError> {
    let file_type = meta.file_type();
    if !file_type.is_file() {
        return Err(InputError::NotAFile { path: path.to_owned(), what: describe_type(&file_type), kind });
    }
    let (size, limit) = (meta.len(), kind.limit());
    if size > limit {
        return Err(InputError::TooLarge { path: path.to_owned(), size, limit, kind });
    }
    Ok(size)
}

fn describe_type(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() { "a directory" } else { "not a regular file" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("reap-input-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn item1_regular_file_is_read() {
        let dir = temp_dir("regular");
        std::fs::write(dir.join("a.mtl"), b"newmtl a\n").unwrap();
        assert_eq!(read(&dir.join("a.mtl"), InputKind::Mtl).unwrap(), b"newmtl a\n");
        let err = read(&dir.join("missing.mtl"), InputKind::Mtl).unwrap_err();
        assert!(err.is_not_found(), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn item1_link_to_dev_zero_is_refused_by_kind() {
        let dir = temp_dir("devzero");
        let link = dir.join("zero.obj");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let message = read(&link, InputKind::Obj).unwrap_err().to_string();
        assert!(message.contains("zero.obj") && message.contains("a character device"), "{message}");
        assert!(message.contains("not a regular file"), "{message}");
    }

    #[cfg(unix)]
    #[test]
    fn item1_fifo_is_refused_without_blocking() {
        let dir = temp_dir("fifo");
        let fifo = dir.join("pipe.mtl");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // Without the check before opening, this open would wait forever for a writer.
        let message = read(&fifo, InputKind::Mtl).unwrap_err().to_string();
        assert!(message.contains("a FIFO (named pipe)"), "{message}");
    }

    #[test]
    fn item1_directory_is_refused() {
        let dir = temp_dir("dir");
        let message = read(&dir, InputKind::Json).unwrap_err().to_string();
        assert!(message.contains("it is a directory, not a regular file"), "{message}");
        assert!(message.contains("a JSON report"), "{message}");
    }

    #[test]
    fn item1_file_over_the_limit_is_refused_with_size_and_limit() {
        let dir = temp_dir("large");
        let path = dir.join("big.mtl");
        // Sparse: no disk space is used for the hole.
        let file = File::create(&path).unwrap();
        file.set_len(InputKind::Mtl.limit() + 1).unwrap();
        let err = read(&path, InputKind::Mtl).unwrap_err();
        assert!(
            matches!(err, InputError::TooLarge { size, limit, .. } if size == limit + 1 && limit == 64 << 20),
            "{err}"
        );
        let message = err.to_string();
        assert!(message.contains(&format!("{} bytes", InputKind::Mtl.limit())), "{message}");
    }
}
