//! NCCL, loaded at run time like libcuda and libnvrtc: the collectives
//! between GPUs, enqueued on each device's own stream. One process drives
//! every GPU (one communicator per device, made by `ncclCommInitAll`), or each
//! process drives one GPU of many (`ncclCommInitRank`, the unique id passed
//! through the processes' [`Cluster`]), as separate hosts would.
//!
//! Why not cudarc's `nccl` module: its loader looks for `libnccl.so`,
//! `libnccl.so.1` and `libnccl.so.{9..13}` by bare name and panics when none
//! loads, while NVIDIA ships the library as `libnccl.so.2` (the
//! `nvidia-nccl-cu13` wheel, the NGC images, the .deb), so a machine with NCCL
//! installed would panic. reap finds the file itself (the CUDA folders, the
//! loader's path, the Python wheel) and calls the functions it needs
//! through libloading; the C API it binds has been stable since NCCL 2.7.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaStream;

use super::{Error, Result};
use crate::cluster::Cluster;

const INSTALL_NCCL: &str = "Install NCCL: `pip install nvidia-nccl-cu13` (reap finds the wheel's libnccl.so.2), \
                            the libnccl2 package, or set REAP_NCCL to the library's path; or run on one GPU \
                            (`--gpus 1`).";

/// The oldest NCCL whose API reap uses (point-to-point send/recv came in 2.7).
const MIN_VERSION: i32 = 2_07_00;

type Comm = *mut c_void;
type Res = c_int;

/// `ncclUniqueId`: what every rank of one communicator is made from (128 bytes, passed by value).
#[derive(Clone, Copy)]
#[repr(C)]
struct UniqueId([c_char; 128]);

/// `ncclDataType_t`: the element types reap moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum DataType {
    U8 = 1,
    U32 = 3,
    U64 = 5,
    F32 = 7,
}

/// The library's entry points, looked up once.
struct Lib {
    _lib: libloading::Library,
    path: PathBuf,
    version: i32,
    error_string: unsafe extern "C" fn(Res) -> *const c_char,
    comm_init_all: unsafe extern "C" fn(*mut Comm, c_int, *const c_int) -> Res,
    get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> Res,
    comm_init_rank: unsafe extern "C" fn(*mut Comm, c_int, UniqueId, c_int) -> Res,
    comm_destroy: unsafe extern "C" fn(Comm) -> Res,
    group_start: unsafe extern "C" fn() -> Res,
    group_end: unsafe extern "C" fn() -> Res,
    all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, *mut c_void) -> Res,
    all_reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> Res,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, *mut c_void) -> Res,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> Res,
}

// SAFETY: function pointers into a library that stays loaded for the process.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

/// Where libnccl.so.2 may be, most specific first: REAP_NCCL, NCCL_HOME, the
/// CUDA folders, then the Python wheel's folder in the usual site-packages.
fn candidates() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(p) = std::env::var_os("REAP_NCCL") {
        files.push(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["NCCL_HOME", "NCCL_ROOT"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(Path::new(&root).join("lib"));
            dirs.push(Path::new(&root).join("lib64"));
        }
    }
    dirs.extend(super::library::library_dirs());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut roots: Vec<PathBuf> = vec!["/usr/lib".into(), "/usr/local/lib".into(), "/opt/conda/lib".into()];
    if let Some(v) = std::env::var_os("VIRTUAL_ENV").or_else(|| std::env::var_os("CONDA_PREFIX")) {
        roots.push(Path::new(&v).join("lib"));
    }
    if let Some(h) = &home {
        roots.push(h.join(".local/lib"));
        if let Ok(versions) = std::fs::read_dir(h.join(".pyenv/versions")) {
            roots.extend(versions.flatten().map(|e| e.path().join("lib")));
        }
    }
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        for python in entries.flatten().map(|e| e.path()) {
            if python.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python3")) {
                for packages in ["site-packages", "dist-packages"] {
                    dirs.push(python.join(packages).join("nvidia/nccl/lib"));
                }
            }
        }
    }
    files.extend(dirs.into_iter().map(|d| d.join("libnccl.so.2")));
    files
}

/// Loads NCCL once: the library found first that answers a version.
fn lib() -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        // The loader's own search (LD_LIBRARY_PATH, ldconfig) first, then the files.
        let bare = ["libnccl.so.2", "libnccl.so"].map(PathBuf::from);
        let mut last = String::from("no libnccl.so.2 was found");
        for path in bare.into_iter().chain(candidates()) {
            let is_bare = path.parent().is_none_or(|p| p.as_os_str().is_empty());
            if !is_bare && !path.exists() {
                continue;
            }
            match open(&path) {
                Ok(lib) => return Ok(lib),
                Err(e) if is_bare => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    })
    .as_ref()
    .map_err(|what| Error::Unavailable { what: what.clone(), how: INSTALL_NCCL })
}

fn open(path: &Path) -> std::result::Result<Lib, String> {
    // SAFETY: loading NVIDIA's library runs only its initialisers.
    let lib =
        unsafe { libloading::Library::new(path) }.map_err(|e| format!("{} did not load ({e})", path.display()))?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol's C signature is the field's type (nccl.h, stable since 2.7).
            *unsafe { lib.get($name) }.map_err(|e| {
                format!("{} is not a usable NCCL: {} is missing ({e})", path.display(), String::from_utf8_lossy($name))
            })?
        };
    }
    let get_version: unsafe extern "C" fn(*mut c_int) -> Res = sym!(b"ncclGetVersion");
    let mut version = 0;
    // SAFETY: one out-parameter.
    if unsafe { get_version(&mut version) } != 0 || version < MIN_VERSION {
        return Err(format!("{} is NCCL {} and reap needs 2.7 or newer", path.display(), version_text(version)));
    }
    Ok(Lib {
        error_string: sym!(b"ncclGetErrorString"),
        comm_init_all: sym!(b"ncclCommInitAll"),
        get_unique_id: sym!(b"ncclGetUniqueId"),
        comm_init_rank: sym!(b"ncclCommInitRank"),
        comm_destroy: sym!(b"ncclCommDestroy"),
        group_start: sym!(b"ncclGroupStart"),
        group_end: sym!(b"ncclGroupEnd"),
        all_gather: sym!(b"ncclAllGather"),
        all_reduce: sym!(b"ncclAllReduce"),
        send: sym!(b"ncclSend"),
        recv: sym!(b"ncclRecv"),
        path: path.to_path_buf(),
        version,
        _lib: lib,
    })
}

/// "2.27.3" from NCCL's version code (major*10000 + minor*100 + patch).
fn version_text(code: i32) -> String {
    format!("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100)
}

/// Ok when NCCL loads; its version and file, for reports.
pub fn nccl_available() -> Result<String> {
    let l = lib()?;
    Ok(format!("NCCL {} ({})", version_text(l.version), l.path.display()))
}

/// The NCCL settings that choose its transport, where the user set them.
const TRANSPORT_VARS: &[&str] = &["NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NET", "NCCL_SOCKET_IFNAME"];

/// What carries a communicator, for reports: NCCL's version and file, and
/// the transport settings in force (`NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1`
/// sends everything over the network transport, as between hosts).
pub fn carrier() -> String {
    let mut text = nccl_available().unwrap_or_else(|e| e.to_string());
    let set: Vec<String> =
        TRANSPORT_VARS.iter().filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v}"))).collect();
    if !set.is_empty() {
        text += &format!(" with {}", set.join(" "));
    }
    text
}

fn check(l: &Lib, r: Res, during: &'static str) -> Result<()> {
    if r == 0 {
        return Ok(());
    }
    // SAFETY: NCCL returns a static string for every result code.
    let text = unsafe { CStr::from_ptr((l.error_string)(r)) }.to_string_lossy().into_owned();
    Err(Error::Driver { during, error: format!("NCCL error {r}: {text}") })
}

/// The NCCL settings reap defaults where the user set nothing: NVLink
/// multicast (NVLS) off. On the H200 hosts reap is measured on it must stay
/// off (their KINDS.md), and the collectives reap issues (all-gathers of a
/// word per rank, point-to-point row moves) do not use it.
pub const DEFAULTS: &[(&str, &str)] = &[("NCCL_NVLS_ENABLE", "0")];

/// The [`DEFAULTS`] that `is_set` says the environment lacks: what
/// [`set_defaults`] sets.
pub fn missing_defaults(is_set: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    DEFAULTS.iter().copied().filter(|(k, _)| !is_set(k)).collect()
}

/// Sets every [`DEFAULTS`] entry the environment lacks, before NCCL reads it
/// (it reads each variable once, when the first communicator is made). The
/// `reap` binary calls it first thing; a program using the library calls it
/// the same way or sets the variables itself.
///
/// # Safety
/// No other thread may read or write the environment meanwhile (call it
/// before starting any): it calls [`std::env::set_var`].
pub unsafe fn set_defaults() {
    for (key, value) in missing_defaults(|k| std::env::var_os(k).is_some()) {
        // SAFETY: the caller guarantees no other thread touches the environment.
        unsafe { std::env::set_var(key, value) };
    }
}

/// One transfer of a grouped exchange: `bytes` from `src` on rank `from` to
/// `dst` on rank `to` (device addresses). A move within one rank is a copy.
#[derive(Clone, Copy, Debug)]
pub struct Move {
    pub from: usize,
    pub src: u64,
    pub to: usize,
    pub dst: u64,
    pub bytes: u64,
}

/// One NCCL communicator per device, each on that device's stream. NVLink
/// multicast stays off where [`set_defaults`] ran (the binary) or the user set
/// `NCCL_NVLS_ENABLE`.
pub struct Comms {
    lib: &'static Lib,
    /// This process's communicators: ranks `first..first + comms.len()` of `world`.
    comms: Vec<Comm>,
    streams: Vec<Arc<CudaStream>>,
    first: usize,
    world: usize,
}

// SAFETY: NCCL communicators may be used from any thread, one call at a time;
// every method takes &self and groups its calls, and reap drives a group from one thread.
unsafe impl Send for Comms {}
unsafe impl Sync for Comms {}

impl Comms {
    /// Communicators over the devices of `streams` (one stream per device, in
    /// rank order).
    pub fn new(streams: Vec<Arc<CudaStream>>) -> Result<Self> {
        let lib = lib()?;
        let devices: Vec<c_int> = streams.iter().map(|s| s.context().ordinal() as c_int).collect();
        let mut comms = vec![std::ptr::null_mut(); streams.len()];
        // SAFETY: one output slot per device listed.
        check(
            lib,
            unsafe { (lib.comm_init_all)(comms.as_mut_ptr(), devices.len() as c_int, devices.as_ptr()) },
            "creating NCCL communicators",
        )?;
        let world = comms.len();
        Ok(Comms { lib, comms, streams, first: 0, world })
    }

    /// This process's one communicator among the cluster's ranks, on
    /// `stream`'s device: rank 0 makes the unique id, the cluster carries it
    /// to every rank, and every rank joins with it.
    pub fn join(stream: Arc<CudaStream>, cluster: &Cluster) -> Result<Self> {
        let lib = lib()?;
        let mut id = UniqueId([0; 128]);
        if cluster.rank() == 0 {
            // SAFETY: one out-parameter of the id's size.
            check(lib, unsafe { (lib.get_unique_id)(&mut id) }, "making the NCCL unique id")?;
        }
        let mine: Vec<u8> = id.0.iter().map(|&c| c as u8).collect();
        let got = cluster
            .broadcast((cluster.rank() == 0).then_some(mine.as_slice()))
            .map_err(|e| Error::Driver { during: "passing the NCCL unique id to every rank", error: e.to_string() })?;
        if got.len() != 128 {
            return Err(Error::Driver {
                during: "passing the NCCL unique id to every rank",
                error: format!("rank 0 sent {} bytes, an id has 128", got.len()),
            });
        }
        got.iter().zip(id.0.iter_mut()).for_each(|(&b, c)| *c = b as c_char);
        stream.context().bind_to_thread().map_err(super::driver_error("binding a context"))?;
        let mut comm = std::ptr::null_mut();
        let (ranks, rank) = (cluster.ranks() as c_int, cluster.rank() as c_int);
        // SAFETY: one output slot; the id came from rank 0's ncclGetUniqueId.
        let joined = unsafe { (lib.comm_init_rank)(&mut comm, ranks, id, rank) };
        // The usual cause on one host: more ranks than GPUs, so two ranks share a device.
        check(lib, joined, "joining the NCCL communicator").map_err(|e| match e {
            Error::Driver { during, error } => Error::Driver {
                during,
                error: format!(
                    "{error} (each rank needs a GPU of its own: on one host start at most as many ranks as it has \
                     GPUs, or set REAP_LOCAL_RANK per process)"
                ),
            },
            other => other,
        })?;
        Ok(Comms { lib, comms: vec![comm], streams: vec![stream], first: cluster.rank(), world: cluster.ranks() })
    }

    /// Ranks across every process.
    pub fn ranks(&self) -> usize {
        self.world
    }

    /// This process's communicator for global rank `rank`, if it holds that rank.
    fn local(&self, rank: usize) -> Option<usize> {
        rank.checked_sub(self.first).filter(|&i| i < self.comms.len())
    }

    fn stream(&self, rank: usize) -> *mut c_void {
        self.streams[rank].cu_stream() as *mut c_void
    }

    /// Runs `f` between ncclGroupStart and ncclGroupEnd: one thread issues
    /// every rank's part of a collective, which NCCL then launches together.
    fn group(&self, during: &'static str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        // SAFETY: no arguments.
        check(self.lib, unsafe { (self.lib.group_start)() }, during)?;
        let r = f();
        // SAFETY: closes the group opened above, also when a call inside failed.
        let end = check(self.lib, unsafe { (self.lib.group_end)() }, during);
        r.and(end)
    }

    /// Each rank's `count` elements at `send[rank]` into every rank's
    /// `recv[rank]`, in rank order (`count * ranks` elements there); `send`
    /// and `recv` list this process's ranks.
    pub fn all_gather(&self, send: &[u64], recv: &[u64], count: usize, ty: DataType) -> Result<()> {
        self.group("an NCCL all-gather", || {
            for (r, comm) in self.comms.iter().enumerate() {
                // SAFETY: the caller's buffers on rank r's device hold count and count * ranks elements.
                let res = unsafe {
                    (self.lib.all_gather)(
                        send[r] as *const c_void,
                        recv[r] as *mut c_void,
                        count,
                        ty as c_int,
                        *comm,
                        self.stream(r),
                    )
                };
                check(self.lib, res, "an NCCL all-gather")?;
            }
            Ok(())
        })
    }

    /// Element-wise sum of every rank's `count` elements at `send[rank]`
    /// into every rank's `recv[rank]` (they may be the same address); `send`
    /// and `recv` list this process's ranks.
    pub fn all_reduce_sum(&self, send: &[u64], recv: &[u64], count: usize, ty: DataType) -> Result<()> {
        self.group("an NCCL all-reduce", || {
            for (r, comm) in self.comms.iter().enumerate() {
                // SAFETY: the caller's buffers on rank r's device hold count elements.
                let res = unsafe {
                    (self.lib.all_reduce)(
                        send[r] as *const c_void,
                        recv[r] as *mut c_void,
                        count,
                        ty as c_int,
                        0, // ncclSum
                        *comm,
                        self.stream(r),
                    )
                };
                check(self.lib, res, "an NCCL all-reduce")?;
            }
            Ok(())
        })
    }

    /// The moves (global ranks), as one group of sends and receives: this
    /// process issues the sends of the ranks it holds and their receives
    /// (copies within a rank go through the copy engine on that rank's stream).
    pub fn exchange(&self, moves: &[Move]) -> Result<()> {
        for m in moves.iter().filter(|m| m.from == m.to && m.bytes > 0) {
            let Some(r) = self.local(m.from) else { continue };
            self.streams[r].context().bind_to_thread().map_err(super::driver_error("binding a context"))?;
            // SAFETY: both ranges lie in the caller's buffers on that device.
            let res = unsafe {
                cudarc::driver::sys::cuMemcpyDtoDAsync_v2(m.dst, m.src, m.bytes as usize, self.streams[r].cu_stream())
            };
            res.result().map_err(super::driver_error("copying within a rank"))?;
        }
        self.group("an NCCL exchange", || {
            for m in moves.iter().filter(|m| m.from != m.to && m.bytes > 0) {
                if let Some(r) = self.local(m.from) {
                    // SAFETY: the range lies in the caller's buffer on the sender's device; bytes as u8.
                    let s = unsafe {
                        (self.lib.send)(
                            m.src as *const c_void,
                            m.bytes as usize,
                            DataType::U8 as c_int,
                            m.to as c_int,
                            self.comms[r],
                            self.stream(r),
                        )
                    };
                    check(self.lib, s, "an NCCL send")?;
                }
                if let Some(r) = self.local(m.to) {
                    // SAFETY: as above, on the receiver's device.
                    let res = unsafe {
                        (self.lib.recv)(
                            m.dst as *mut c_void,
                            m.bytes as usize,
                            DataType::U8 as c_int,
                            m.from as c_int,
                            self.comms[r],
                            self.stream(r),
                        )
                    };
                    check(self.lib, res, "an NCCL receive")?;
                }
            }
            Ok(())
        })
    }
}

impl Drop for Comms {
    fn drop(&mut self) {
        for (comm, stream) in self.comms.iter().zip(&self.streams) {
            // Work still queued on the stream may use the communicator.
            let _ = stream.synchronize();
            // SAFETY: each communicator was made by ncclCommInitAll or ncclCommInitRank and is destroyed once.
            unsafe { (self.lib.comm_destroy)(*comm) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvlink_multicast_is_off_unless_the_user_set_it() {
        assert_eq!(missing_defaults(|_| false), vec![("NCCL_NVLS_ENABLE", "0")]);
        // Whatever the user set (even 1) stays theirs.
        assert!(missing_defaults(|k| k == "NCCL_NVLS_ENABLE").is_empty());
    }
}
