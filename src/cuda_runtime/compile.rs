//! Kernel sources, their specialisation, NVRTC, and the process-wide cache of
//! loaded modules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

use super::{Error, Result, driver_error, library::nvrtc_available};

/// A kernel source file, embedded at build time (see [`kernel_source!`](super::kernel_source)).
#[derive(Clone, Copy, Debug)]
pub struct Source {
    /// Path under `kernels/`.
    pub name: &'static str,
    pub text: &'static str,
    /// The headers this file `#include "…"`s: NVRTC gets one string, not a
    /// folder, so each file names what it includes and the include lines are
    /// replaced by the headers' text.
    pub headers: &'static [Source],
    /// NVRTC options of this source beyond the common ones.
    pub options: &'static [&'static str],
}

/// IEEE single precision as the CPU computes it: no fused multiply-add
/// (NVRTC contracts `a * b + c` by default, which rounds once instead of
/// twice), correctly rounded division and square root, no flush of
/// subnormals to zero. The last three are NVRTC's defaults, spelled out so
/// that a change of defaults cannot break a CPU twin's bit-for-bit match.
pub const IEEE: &[&str] = &["--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"];

/// What specialises one compiled module: `#define`s before the source, and
/// text placed right after one header (a user's predicate after the header
/// that declares the types it uses).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Spec {
    pub defines: Vec<(&'static str, u32)>,
    /// (header path under `kernels/`, text).
    pub after_header: Option<(&'static str, Arc<str>)>,
}

impl Spec {
    /// The same spec with `defines` added.
    pub fn with(mut self, defines: &[(&'static str, u32)]) -> Self {
        self.defines.extend_from_slice(defines);
        self
    }
}

/// Anything that says how to specialise a source: the library's element size
/// and keep rule, a workload's tuning numbers.
pub trait Specialise {
    fn spec(&self) -> Spec;
}

impl Specialise for Spec {
    fn spec(&self) -> Spec {
        self.clone()
    }
}

impl<T: Specialise + ?Sized> Specialise for &T {
    fn spec(&self) -> Spec {
        (**self).spec()
    }
}

/// One translation unit: the defines, then the source with its headers inlined.
pub fn translation_unit(source: &Source, spec: &Spec) -> Result<String> {
    let mut tu = String::new();
    for (name, value) in &spec.defines {
        tu.push_str(&format!("#define {name} {value}\n"));
    }
    let mut seen = Vec::new();
    inline_includes(source, spec, &mut seen, &mut tu)?;
    Ok(tu)
}

/// Appends `source` with its `#include "…"` lines replaced by the headers'
/// text, each header once (they all `#pragma once`).
fn inline_includes(source: &Source, spec: &Spec, seen: &mut Vec<&'static str>, tu: &mut String) -> Result<()> {
    // Includes resolve against the including file's folder, as a compiler's would.
    let folder = source.name.rsplit_once('/').map_or("", |(f, _)| f);
    for line in source.text.lines() {
        let Some(include) = line.trim().strip_prefix("#include \"").and_then(|r| r.strip_suffix('"')) else {
            tu.push_str(line);
            tu.push('\n');
            continue;
        };
        let path = joined(folder, include);
        let header = source.headers.iter().find(|h| h.name == path).ok_or_else(|| Error::Compile {
            kernel: source.name.into(),
            options: String::new(),
            log: format!("it includes \"{include}\" (kernels/{path}), which its `Source` does not list in `headers`"),
        })?;
        if seen.contains(&header.name) {
            continue;
        }
        seen.push(header.name);
        inline_includes(header, spec, seen, tu)?;
        if let Some((_, text)) = spec.after_header.as_ref().filter(|(after, _)| *after == header.name) {
            tu.push_str(text);
            tu.push('\n');
        }
    }
    Ok(())
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

/// Compiles one specialisation to PTX for `arch` (e.g. "sm_90"; "compute_90" without a GPU).
pub fn compile(source: &Source, spec: &(impl Specialise + ?Sized), arch: &'static str) -> Result<Ptx> {
    nvrtc_available()?;
    let tu = translation_unit(source, &spec.spec())?;
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
    cudarc::nvrtc::compile_ptx_with_opts(tu, opts).map_err(|e| match e {
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

/// A loaded module: the context (its driver handle) it lives in, the source and the spec.
type ModuleKey = (usize, &'static str, Spec);

/// Every module loaded in this process. The modules hold their contexts, so a
/// handle here never outlives its context; a second backend or engine on the
/// same device (one primary context) finds its kernels already built.
fn modules() -> &'static Mutex<HashMap<ModuleKey, Arc<CudaModule>>> {
    static MODULES: OnceLock<Mutex<HashMap<ModuleKey, Arc<CudaModule>>>> = OnceLock::new();
    MODULES.get_or_init(Default::default)
}

/// Kernel functions of one context, compiled on first use and cached for the process.
#[derive(Clone)]
pub struct Kernels {
    ctx: Arc<CudaContext>,
    arch: &'static str,
}

impl Kernels {
    pub fn new(ctx: Arc<CudaContext>, arch: &'static str) -> Self {
        Kernels { ctx, arch }
    }

    /// The architecture the kernels are compiled for ("sm_90").
    pub fn arch(&self) -> &'static str {
        self.arch
    }

    /// The function `name` of `source` specialised by `spec`, compiled on first use.
    pub fn function(&self, source: &Source, spec: &(impl Specialise + ?Sized), name: &str) -> Result<CudaFunction> {
        let key: ModuleKey = (self.ctx.cu_ctx() as usize, source.name, spec.spec());
        let cached = modules().lock().unwrap_or_else(|p| p.into_inner()).get(&key).cloned();
        let module = match cached {
            Some(m) => m,
            None => {
                // Compiled without the lock: another thread's compile of another module need not wait.
                let ptx = compile(source, &key.2, self.arch)?;
                let m = self.ctx.load_module(ptx).map_err(driver_error("loading a compiled kernel module"))?;
                let mut all = modules().lock().unwrap_or_else(|p| p.into_inner());
                all.entry(key).or_insert(m).clone()
            }
        };
        module.load_function(name).map_err(driver_error("finding a kernel function"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMON: Source =
        Source { name: "lib/common.cuh", text: "#pragma once\nint common;", headers: &[], options: &[] };
    const MID: Source = Source {
        name: "lib/mid.cuh",
        text: "#pragma once\n#include \"common.cuh\"\nint mid;",
        headers: &[COMMON],
        options: &[],
    };
    const USER: Source = Source {
        name: "work/user.cu",
        text: "#include \"../lib/mid.cuh\"\n#include \"../lib/common.cuh\"\nint user;",
        headers: &[MID, COMMON],
        options: &[],
    };

    #[test]
    fn headers_are_inlined_once_after_the_defines() {
        let spec = Spec::default().with(&[("A", 1), ("B", 2)]);
        let tu = translation_unit(&USER, &spec).unwrap();
        assert_eq!(tu, "#define A 1\n#define B 2\n#pragma once\n#pragma once\nint common;\nint mid;\nint user;\n");
    }

    #[test]
    fn text_goes_right_after_its_header() {
        let spec = Spec { defines: Vec::new(), after_header: Some(("lib/common.cuh", "int p;".into())) };
        let tu = translation_unit(&USER, &spec).unwrap();
        assert_eq!(tu, "#pragma once\n#pragma once\nint common;\nint p;\nint mid;\nint user;\n");
    }

    #[test]
    fn an_undeclared_include_is_an_error_that_names_it() {
        let bad = Source { name: "work/bad.cu", text: "#include \"../lib/mid.cuh\"\n", headers: &[], options: &[] };
        let e = translation_unit(&bad, &Spec::default()).unwrap_err().to_string();
        assert!(e.contains("kernels/work/bad.cu") && e.contains("kernels/lib/mid.cuh"), "{e}");
    }

    #[test]
    fn paths_join_with_parent_steps() {
        assert_eq!(joined("bench", "../compaction/common.cuh"), "compaction/common.cuh");
        assert_eq!(joined("", "./a.cuh"), "a.cuh");
    }
}
