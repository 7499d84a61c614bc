//! Finding CUDA's libraries before cudarc touches them (it panics when one is
//! missing), and what the installation is, for the results files.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cudarc::driver::sys;

use super::{Error, Result};

const INSTALL_DRIVER: &str = "Install the NVIDIA driver (it provides libcuda.so.1), or use `--backend cpu`.";
const INSTALL_NVRTC: &str = "Install the CUDA toolkit (libnvrtc.so.13 in /usr/local/cuda/lib64) or the PyPI wheel \
                             `nvidia-cuda-nvrtc==13.0.*`, or set CUDA_PATH; or use `--backend cpu`.";

/// Folders where CUDA's libraries usually live, most specific first.
pub(super) fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(Path::new(&root).join("lib64"));
            dirs.push(Path::new(&root).join("lib"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    if let Ok(entries) = std::fs::read_dir("/usr/local") {
        let mut versioned: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cuda-")))
            .map(|p| p.join("lib64"))
            .collect();
        versioned.sort();
        dirs.extend(versioned.into_iter().rev());
    }
    dirs.push("/usr/lib/x86_64-linux-gnu".into());
    dirs.push("/usr/lib64".into());
    dirs
}

/// Opens the first `name` found in the usual CUDA folders with RTLD_GLOBAL and
/// keeps it open: a later dlopen of the bare soname (what cudarc does) then
/// finds the loaded library, so a user with CUDA installed sets nothing.
fn preload(names: &[&str]) {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    for dir in library_dirs() {
        for name in names {
            let path = dir.join(name);
            if path.exists() {
                // SAFETY: loading NVIDIA's own libraries runs only their initialisers.
                if let Ok(lib) = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) } {
                    std::mem::forget(lib);
                    return;
                }
            }
        }
    }
}

/// Ok when libnvrtc can be loaded (compiling needs no GPU).
pub fn nvrtc_available() -> Result<()> {
    static FOUND: OnceLock<bool> = OnceLock::new();
    let found = *FOUND.get_or_init(|| {
        preload(&["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]);
        // SAFETY: only tries to dlopen the library.
        unsafe { cudarc::nvrtc::sys::is_culib_present() }
    });
    if found {
        Ok(())
    } else {
        Err(Error::Unavailable {
            what: "libnvrtc (the CUDA run-time compiler) was not found".into(),
            how: INSTALL_NVRTC,
        })
    }
}

/// Ok when libcuda can be loaded.
pub fn driver_available() -> Result<()> {
    static FOUND: OnceLock<bool> = OnceLock::new();
    let found = *FOUND.get_or_init(|| {
        preload(&["libcuda.so.1", "libcuda.so"]);
        // SAFETY: only tries to dlopen the library.
        unsafe { cudarc::driver::sys::is_culib_present() }
    });
    if found {
        Ok(())
    } else {
        Err(Error::Unavailable { what: "libcuda (the NVIDIA driver) was not found".into(), how: INSTALL_DRIVER })
    }
}

/// The NVIDIA kernel module's version, from /proc (Linux).
pub fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul ..."
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(String::from)
}

/// The CUDA version the driver supports ("13.0"), when libcuda loads.
pub fn cuda_driver_version() -> Option<String> {
    driver_available().ok()?;
    let mut v = 0i32;
    // SAFETY: libcuda is loaded (checked above); one out-parameter.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    r.result().ok().map(|_| format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// NVRTC's version ("13.0"), when libnvrtc loads.
pub fn nvrtc_version() -> Option<String> {
    nvrtc_available().ok()?;
    let (mut major, mut minor) = (0i32, 0i32);
    // SAFETY: libnvrtc is loaded (checked above); two out-parameters.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then(|| format!("{major}.{minor}"))
}
