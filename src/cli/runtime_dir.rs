//! `XDG_RUNTIME_DIR` for the Vulkan stack. Where it is unset or not an
//! absolute folder (containers, `sudo`, ssh without a login session),
//! libwayland, which Mesa's Vulkan drivers and winit load, prints `error:
//! XDG_RUNTIME_DIR is invalid or not set in the environment` on every wgpu or
//! viewer run, even one that passes, and a user reads it as reap failing.
//! There reap points the variable, for its own process only, at a private
//! folder of its own, removed at exit.

use std::path::Path;

/// A fresh 0700 folder named in `XDG_RUNTIME_DIR` where that variable is
/// unusable; `None` where it is fine or no folder could be made (the line
/// then stays, nothing else changes). Keep it until exit: dropping it removes
/// the folder. Call it before any thread starts: it sets an environment variable.
pub fn ensure() -> Option<tempfile::TempDir> {
    let usable = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| {
        let d = Path::new(&d);
        d.is_absolute() && d.is_dir()
    });
    if usable {
        return None;
    }
    private_folder().map(|dir| {
        // SAFETY: main calls this before it starts any thread, so nothing reads the environment meanwhile.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir.path()) };
        dir
    })
}

#[cfg(unix)]
fn private_folder() -> Option<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    // tempfile creates the folder under a random name and fails rather than reuse one that
    // exists; the mode is set as it is created, so no other user ever sees it open.
    let dir = tempfile::Builder::new()
        .prefix("reap-runtime-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .ok()?;
    // libwayland refuses a runtime folder whose path is relative (a relative TMPDIR).
    dir.path().is_absolute().then_some(dir)
}

#[cfg(not(unix))]
fn private_folder() -> Option<tempfile::TempDir> {
    None
}
