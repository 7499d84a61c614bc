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
