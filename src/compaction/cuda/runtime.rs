//! Finding CUDA, compiling kernels with NVRTC, and timing named stages.
//!
//! cudarc panics when libcuda or libnvrtc cannot be loaded, so every entry
//! point checks for the libraries first and returns a typed error instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, sys};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

use crate::compaction::{Error, PhaseTime, Result};

const INSTALL_DRIVER: &str = "Install the NVIDIA driver (it provides libcuda.so.1), or use `--backend cpu`.";
const INSTALL_NVRTC: &str = "Install the CUDA toolkit (libnvrtc.so.13 in /usr/local/cuda/lib64) or the PyPI wheel \
                             `nvidia-cuda-nvrtc==13.0.*`, or set CUDA_PATH; or use `--backend cpu`.";

/// Folders where CUDA's libraries usually live, most specific first.
fn library_dirs() -> Vec<PathBuf> {
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
        Err(Error::CudaUnavailable {
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
        Err(Error::CudaUnavailable { what: "libcuda (the NVIDIA driver) was not found".into(), how: INSTALL_DRIVER })
    }
}

pub fn driver_error(during: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Driver { during, error: e.to_string() }
}

/// A kernel source file, embedded at build time.
#[derive(Clone, Copy, Debug)]
pub struct Source {
    /// Path under `kernels/`.
    pub name: &'static str,
    pub text: &'static str,
    /// NVRTC options of this source beyond the common ones.
    pub options: &'static [&'static str],
}

macro_rules! kernel_source {
    ($path:literal) => {
        kernel_source!($path, &[])
    };
    ($path:literal, $options:expr) => {
        Source { name: $path, text: include_str!(concat!("../../../kernels/", $path)), options: $options }
    };
}

/// IEEE single precision as the CPU computes it: no fused multiply-add
/// (NVRTC contracts `a * b + c` by default, which rounds once instead of
/// twice), correctly rounded division and square root, no flush of
/// subnormals to zero. The last three are NVRTC's defaults, spelled out so
/// that a change of defaults cannot break the CPU twin's bit-for-bit match.
const IEEE: [&str; 4] = ["--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"];

/// Headers that kernel sources `#include "…"`; resolved here because NVRTC
/// gets one string, not a folder.
const HEADERS: &[Source] = &[
    kernel_source!("compaction/common.cuh"),
    kernel_source!("compaction/single_pass.cuh"),
    kernel_source!("trace/common.cuh"),
    kernel_source!("collide/common.cuh"),
];

pub const LOOKBACK: Source = kernel_source!("compaction/lookback.cu");
pub const CHAINED: Source = kernel_source!("compaction/chained.cu");
pub const MARK: Source = kernel_source!("compaction/mark.cu");
pub const BILLETER: Source = kernel_source!("compaction/billeter.cu");
pub const HORN: Source = kernel_source!("compaction/horn.cu");
pub const SENGUPTA: Source = kernel_source!("compaction/sengupta.cu");
pub const BLELLOCH: Source = kernel_source!("compaction/blelloch.cu");
pub const ROGER: Source = kernel_source!("compaction/roger.cu");
pub const ATOMIC: Source = kernel_source!("compaction/atomic.cu");
pub const REDZONE: Source = kernel_source!("compaction/redzone.cu");
pub const SORT: Source = kernel_source!("compaction/sort.cu");
/// The benchmark's marking phase for Redzone's competitors (seed 004 §5).
pub const MARK_REMOVED: Source = kernel_source!("bench/mark_removed.cu");

/// The wavefront path tracer's stages (src/trace/).
pub const WAVEFRONT: Source = kernel_source!("trace/wavefront.cu");
/// The tracer's sums to the viewer's 8-bit sRGB image (src/trace/tonemap.rs is
/// its twin), with IEEE arithmetic so that it rounds as the CPU does.
pub const TONEMAP: Source = kernel_source!("trace/tonemap.cu", &IEEE);

/// The collision demo's stages (src/collide/), compiled with IEEE arithmetic
/// so that they match the CPU engine bit for bit.
pub const COLLIDE: Source = kernel_source!("collide/collide.cu", &IEEE);
/// The collision demo's fast radix sort (8-bit digits; integer only).
pub const RADIX_SORT: Source = kernel_source!("collide/radix_sort.cu");

/// Every library kernel source, for the compile-everything test (each is
/// specialised by element size and keep rule).
pub const SOURCES: &[Source] =
    &[LOOKBACK, CHAINED, MARK, BILLETER, HORN, SENGUPTA, BLELLOCH, ROGER, ATOMIC, REDZONE, SORT, MARK_REMOVED];

/// The workloads' kernel sources, which do not depend on the element size or
/// the keep rule: the compile-everything test compiles each once.
pub const WORKLOAD_SOURCES: &[Source] = &[WAVEFRONT, TONEMAP, COLLIDE, RADIX_SORT];

/// How the keep rule is compiled into a kernel (`REAP_KEEP` in common.cuh).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeepMode {
    Flags = 0,
    Sentinel = 1,
    Predicate = 2,
    /// Radix sort's split: keep elements whose key bit `param[0]` is 0.
    Bit = 3,
}

impl KeepMode {
    pub const ALL: [KeepMode; 4] = [KeepMode::Flags, KeepMode::Sentinel, KeepMode::Predicate, KeepMode::Bit];
}

/// What specialises one compiled module.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub elem_bytes: u32,
    pub keep: KeepMode,
    /// Only with `KeepMode::Predicate`: the user's `reap_predicate` source.
    pub predicate: Option<Arc<str>>,
    /// For sort keys: bytes of the key at the front of the element.
    pub key_bytes: u32,
    /// Tuning numbers compiled in (block size, items per thread, …).
    pub defines: Vec<(&'static str, u32)>,
}

impl Variant {
    pub fn new(elem_bytes: usize, keep: KeepMode) -> Self {
        Variant { elem_bytes: elem_bytes as u32, keep, predicate: None, key_bytes: 4, defines: Vec::new() }
    }

    /// The same variant with tuning defines added.
    pub fn with(&self, defines: &[(&'static str, u32)]) -> Self {
        let mut v = self.clone();
        v.defines.extend_from_slice(defines);
        v
    }
}

/// One translation unit: defines, then the kernel with its headers inlined.
pub fn translation_unit(source: &Source, v: &Variant) -> String {
    let mut tu = format!(
        "#define REAP_ELEM_BYTES {}\n#define REAP_KEEP {}\n#define REAP_KEY_BYTES {}\n",
        v.elem_bytes, v.keep as u32, v.key_bytes
    );
    for (name, value) in &v.defines {
        tu.push_str(&format!("#define {name} {value}\n"));
    }
    let mut seen = Vec::new();
    inline_includes(source, v, &mut seen, &mut tu);
    tu
}

/// Appends `text` with its `#include "…"` lines replaced by the headers'
/// text, each header once (they all `#pragma once`).
fn inline_includes(source: &Source, v: &Variant, seen: &mut Vec<&'static str>, tu: &mut String) {
    // Includes resolve against the including file's folder, as a compiler's would.
    let folder = source.name.rsplit_once('/').map_or("", |(f, _)| f);
    for line in source.text.lines() {
        let include = line.trim().strip_prefix("#include \"").and_then(|r| r.strip_suffix('"'));
        let path = include.map(|name| joined(folder, name));
        match path.and_then(|path| HEADERS.iter().find(|h| h.name == path)) {
            Some(header) => {
                if seen.contains(&header.name) {
                    continue;
                }
                seen.push(header.name);
                inline_includes(header, v, seen, tu);
                // The predicate follows the common header, which declares Elem.
                if header.name.ends_with("common.cuh") && v.keep == KeepMode::Predicate {
                    if let Some(p) = &v.predicate {
                        tu.push_str(p);
                        tu.push('\n');
                    }
                }
            }
            None => {
                tu.push_str(line);
                tu.push('\n');
            }
        }
    }
}

/// `folder/name` with `..` steps taken ("bench" + "../compaction/common.cuh").
fn joined(folder: &str, name: &str) -> String {
    let mut parts: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
    for part in name.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Compiles one variant to PTX for `arch` (e.g. "sm_90"; "compute_90" without a GPU).
pub fn compile(source: &Source, v: &Variant, arch: &'static str) -> Result<Ptx> {
    nvrtc_available()?;
    let opts = CompileOptions {
        arch: Some(arch),
        options: ["-std=c++17", "-default-device", "-lineinfo"]
            .iter()
            .chain(source.options)
            .map(|o| o.to_string())
            .collect(),
        name: Some(source.name.replace('/', "_")),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(translation_unit(source, v), opts).map_err(|e| match e {
        CompileError::CompileError { options, log, .. } => Error::Compile {
            kernel: source.name.into(),
            options: options.join(" "),
            log: log.to_string_lossy().into_owned(),
        },
        other => Error::Compile { kernel: source.name.into(), options: String::new(), log: other.to_string() },
    })
}

/// The architecture string NVRTC gets for a device, leaked once per value
/// because cudarc wants a `&'static str`.
pub fn arch_name(major: i32, minor: i32) -> &'static str {
    static NAMES: OnceLock<Mutex<HashMap<(i32, i32), &'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    names.entry((major, minor)).or_insert_with(|| Box::leak(format!("sm_{major}{minor}").into_boxed_str()))
}

/// Compiled modules and their functions, cached for the process.
pub struct Kernels {
    ctx: Arc<CudaContext>,
    arch: &'static str,
    modules: Mutex<HashMap<(&'static str, Variant), Arc<CudaModule>>>,
}

impl Kernels {
    pub fn new(ctx: Arc<CudaContext>, arch: &'static str) -> Self {
        Kernels { ctx, arch, modules: Mutex::new(HashMap::new()) }
    }

    /// The function `name` of `source` specialised as `v`, compiled on first use.
    pub fn function(&self, source: &Source, v: &Variant, name: &str) -> Result<CudaFunction> {
        let key = (source.name, v.clone());
        let module = {
            let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match modules.get(&key) {
                Some(m) => m.clone(),
                None => {
                    let ptx = compile(source, v, self.arch)?;
                    let m = self.ctx.load_module(ptx).map_err(driver_error("loading a compiled kernel module"))?;
                    modules.insert(key, m.clone());
                    m
                }
            }
        };
        module.load_function(name).map_err(driver_error("finding a kernel function"))
    }
}

/// Records a run's stages between device events, so each is timed on the GPU
/// without synchronising the host.
pub struct Stages {
    stream: Arc<CudaStream>,
    list: Vec<(&'static str, CudaEvent, CudaEvent)>,
}

impl Stages {
    pub fn new(stream: &Arc<CudaStream>) -> Self {
        Stages { stream: stream.clone(), list: Vec::new() }
    }

    /// Runs `f`, which enqueues the stage's work, between two timing events.
    pub fn run<R>(&mut self, name: &'static str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        // cudarc's events disable timing unless asked: ask.
        let timed = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(timed).map_err(driver_error("recording a timing event"))?;
        let r = f()?;
        let end = self.stream.record_event(timed).map_err(driver_error("recording a timing event"))?;
        self.list.push((name, start, end));
        Ok(r)
    }

    /// From the first stage's start to the last stage's end.
    pub fn span(&self) -> Result<Duration> {
        match (self.list.first(), self.list.last()) {
            (Some((_, start, _)), Some((_, _, end))) => {
                end.synchronize().map_err(driver_error("waiting for a stage"))?;
                let ms = start.elapsed_ms(end).map_err(driver_error("reading a span"))?;
                Ok(Duration::from_secs_f64(ms as f64 / 1e3))
            }
            _ => Ok(Duration::ZERO),
        }
    }

    /// Waits for the last event and reads every stage's time.
    pub fn times(&self) -> Result<Vec<PhaseTime>> {
        self.list
            .iter()
            .map(|(name, start, end)| {
                end.synchronize().map_err(driver_error("waiting for a stage"))?;
                let ms = start.elapsed_ms(end).map_err(driver_error("reading a stage time"))?;
                Ok(PhaseTime { name, time: Duration::from_secs_f64(ms as f64 / 1e3) })
            })
            .collect()
    }
}
