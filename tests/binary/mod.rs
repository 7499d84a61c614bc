//! What the end-to-end tests of the `reap` binary share: the command, and a
//! fresh scratch folder per test.

use std::path::PathBuf;
use std::process::Command;

/// The `reap` binary cargo built for these tests, or `REAP_TEST_BINARY` (an
/// older build, to show that a test fails there).
pub fn path() -> PathBuf {
    std::env::var_os("REAP_TEST_BINARY").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_reap")), PathBuf::from)
}

pub fn reap() -> Command {
    Command::new(path())
}

/// An empty folder of its own for test `name` of suite `suite`, in this process.
pub fn temp_dir(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("reap-{suite}-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The Python the peers' drivers run with: $REAP_PYTHON, else `python3` (as reap picks it).
#[allow(dead_code)] // only the peers' suites run Python
pub fn python() -> PathBuf {
    std::env::var_os("REAP_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// `None` where [`python`] imports `modules` (`import a, b`), else why not, printed as a skip of
/// `peer`'s test with `install`; the skip fails where `$require` is 1 (CI that has the peer).
#[allow(dead_code)]
pub fn peer_missing(modules: &str, peer: &str, install: &str, require: &str) -> Option<String> {
    let out = Command::new(python()).args(["-c", &format!("import {modules}")]).output();
    let why = match out {
        Ok(o) if o.status.success() => return None,
        Ok(o) => String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("import failed").to_string(),
        Err(e) => format!("cannot run {}: {e}", python().display()),
    };
    let why = format!("SKIPPED {peer} test ({why}); {install}, or set REAP_PYTHON");
    assert!(std::env::var_os(require).is_none_or(|v| v != "1"), "{why}");
    eprintln!("{why}");
    Some(why)
}
