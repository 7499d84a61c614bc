//! The CUB peer: bench/cub/cub_peer.cu, embedded here so any reap binary can
//! write it out, build it with nvcc for the device's architecture, run it on
//! the configurations reap just measured, and join its times to reap's rows.
//!
//! Without nvcc (or on the CPU backend) the peer is skipped and the report
//! says why; nothing else changes.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::bench::{BenchBackend, Named, Row, RowAlgorithm, RowOperation, row};

/// The harness's source (kept in the repository at bench/cub/cub_peer.cu).
pub const SOURCE: &str = include_str!("../../bench/cub/cub_peer.cu");

/// What happened to the peer in a run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PeerStatus {
    Ran { binary: String, nvcc: String, device: String, cub_version: String, cuda_runtime: String },
    Skipped { why: String },
}

/// A CUB primitive the peer times, by the job name it reads and prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerOp {
    /// `DeviceSelect::If`
    SelectIf,
    /// `DeviceSelect::Flagged`
    SelectFlagged,
    /// `DevicePartition::If`
    PartitionIf,
    /// `DeviceScan::ExclusiveSum`
    Scan,
    /// `DeviceRadixSort::SortKeys`
    SortKeys,
    /// `DeviceRadixSort::SortPairs`
    SortPairs,
    /// Seed 004's peer: mark k random elements DELETED, then `thrust::remove`
    /// in place (density is k/n, phases `mark` and `remove`).
    Remove,
}

impl PeerOp {
    /// Its job name (what the peer reads and prints, and the operation
    /// column of its rows) and its algorithm column.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            PeerOp::SelectIf => ("select_if", "cub-select-if"),
            PeerOp::SelectFlagged => ("select_flagged", "cub-select-flagged"),
            PeerOp::PartitionIf => ("partition_if", "cub-partition-if"),
            PeerOp::Scan => ("scan", "cub-scan"),
            PeerOp::SortKeys => ("sort_keys", "cub-sort-keys"),
            PeerOp::SortPairs => ("sort_pairs", "cub-sort-pairs"),
            PeerOp::Remove => ("remove", "thrust-remove"),
        }
    }

    /// The peer's row as an algorithm column: `cub-` and the name with
    /// hyphens, or `thrust-remove`.
    pub fn algorithm_name(self) -> &'static str {
        self.names().1
    }

    /// Bytes it must move at least on `n` elements of `es` bytes, `kept` kept.
    fn bytes(self, n: u64, kept: u64, es: u64) -> u64 {
        match self {
            PeerOp::Scan | PeerOp::SortKeys | PeerOp::SortPairs => 2 * n * es,
            PeerOp::SelectIf | PeerOp::SelectFlagged | PeerOp::PartitionIf | PeerOp::Remove => n * es + kept * es,
        }
    }
}

impl Named for PeerOp {
    const WHAT: &'static str = "CUB peer operation";
    fn name(self) -> &'static str {
        self.names().0
    }
    fn all() -> Vec<Self> {
        use PeerOp::*;
        vec![SelectIf, SelectFlagged, PartitionIf, Scan, SortKeys, SortPairs, Remove]
    }
}

/// One CUB measurement (a line of the peer's output).
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
pub struct PeerRow {
    #[serde(serialize_with = "row::by_name", deserialize_with = "row::from_name")]
    pub op: PeerOp,
    pub elem: usize,
    pub n: u64,
    pub density: f64,
    pub kept: u64,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Medians of the timed phases (`remove`: mark, remove); none for CUB's.
    #[serde(default)]
    pub phases: Vec<(String, f64)>,
}

/// One job line for the peer.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerJob {
    pub op: PeerOp,
    pub elem: usize,
    pub n: u64,
    pub density: f64,
}

/// nvcc on PATH, under CUDA_PATH / CUDA_HOME, or at /usr/local/cuda/bin.
pub fn find_nvcc() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("nvcc")).collect::<Vec<_>>())
        .unwrap_or_default();
    let homes = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|h| PathBuf::from(h).join("bin").join("nvcc"));
    on_path.into_iter().chain(homes).chain([PathBuf::from("/usr/local/cuda/bin/nvcc")]).find(|p| p.is_file())
}

/// FNV-1a: a stable key for the cached binary (std's hasher may change between releases).
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// Builds the peer for `arch` (e.g. "sm_90") under `dir`, or reuses the
/// binary a previous run left there for the same source and architecture.
pub fn build(nvcc: &Path, dir: &Path, arch: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let binary = dir.join(format!("cub_peer-{:016x}-{arch}", fnv(SOURCE)));
    if binary.is_file() {
        return Ok(binary);
    }
    let source = dir.join("cub_peer.cu");
    std::fs::write(&source, SOURCE).map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    // Built under a temporary name: an interrupted build never looks cached.
    let partial = dir.join(format!("cub_peer-{arch}.partial"));
    let out = Command::new(nvcc)
        .args(["-O3", "-std=c++17", &format!("-arch={arch}"), "-o"])
        .arg(&partial)
        .arg(&source)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed to build the CUB peer:\n{}",
            nvcc.display(),
            String::from_utf8_lossy(&out.stderr).chars().take(4000).collect::<String>()
        ));
    }
    std::fs::rename(&partial, &binary).map_err(|e| format!("cannot move the CUB peer into place: {e}"))?;
    Ok(binary)
}

/// The CUB counterparts of the configurations in `rows`, each once.
pub fn jobs(rows: &[Row]) -> Vec<PeerJob> {
    let mut jobs: Vec<PeerJob> = Vec::new();
    for r in rows {
        for &op in counterparts(r.operation) {
            let (elem, density) = match (r.operation, op) {
                (RowOperation::SortPairs, _) => (4, 1.0),
                // thrust::remove takes k/n as reap's remove rows do.
                (_, PeerOp::Remove) => (r.element_bytes, r.density),
                (RowOperation::Remove | RowOperation::MarkSelect, _) => (r.element_bytes, 1.0 - r.density),
                _ => (r.element_bytes, r.density),
            };
            let j = PeerJob { op, elem, n: r.n, density };
            if !jobs.contains(&j) {
                jobs.push(j);
            }
        }
    }
    jobs
}

/// The CUB primitives that stand beside a reap operation (none beside the
/// peer's own rows).
pub fn counterparts(op: RowOperation) -> &'static [PeerOp] {
    match op {
        RowOperation::Select => &[PeerOp::SelectIf, PeerOp::SelectFlagged],
        RowOperation::Partition | RowOperation::PartitionReversed => &[PeerOp::PartitionIf],
        RowOperation::Scan => &[PeerOp::Scan],
        RowOperation::SortKeys => &[PeerOp::SortKeys],
        RowOperation::SortPairs => &[PeerOp::SortPairs],
        // Seed 004's own peer (mark + thrust::remove in place), and CUB's
        // select of the survivors after reap's marking.
        RowOperation::Remove | RowOperation::MarkSelect => &[PeerOp::Remove, PeerOp::SelectIf],
        RowOperation::Peer(_) => &[],
    }
}

#[derive(serde::Deserialize)]
struct Header {
    device: String,
    cub_version: i64,
    cuda_runtime: i64,
}

/// Runs the peer on `jobs`; `each` sees every row as it arrives.
pub fn run(
    binary: &Path,
    jobs: &[PeerJob],
    reps: usize,
    warmup: usize,
    seed: u64,
    each: &mut dyn FnMut(&PeerRow),
) -> Result<(String, String, String, Vec<PeerRow>), String> {
    let mut child = Command::new(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    {
        let mut stdin = child.stdin.take().ok_or("no stdin to the CUB peer")?;
        let mut text = String::new();
        for j in jobs {
            text.push_str(&format!(
                "{} {} {} {:.9} {} {} {}\n",
                j.op.name(),
                j.elem,
                j.n,
                j.density,
                reps,
                warmup,
                seed
            ));
        }
        stdin.write_all(text.as_bytes()).map_err(|e| format!("cannot send jobs to the CUB peer: {e}"))?;
    }
    let stdout = child.stdout.take().ok_or("no stdout from the CUB peer")?;
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().ok_or("the CUB peer printed nothing")?.map_err(|e| e.to_string())?;
    let header: Header = serde_json::from_str(&first).map_err(|e| format!("CUB peer header `{first}`: {e}"))?;
    let mut rows = Vec::new();
    for line in lines {
        let line = line.map_err(|e| e.to_string())?;
        if line.contains("\"error\"") {
            let _ = child.wait();
            return Err(format!("the CUB peer failed: {line}"));
        }
        let row: PeerRow = serde_json::from_str(&line).map_err(|e| format!("CUB peer line `{line}`: {e}"))?;
        each(&row);
        rows.push(row);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("the CUB peer exited with {status}"));
    }
    let v = header.cub_version;
    let rt = header.cuda_runtime;
    Ok((
        header.device,
        format!("{}.{}.{}", v / 100000, v / 100 % 1000, v % 100),
        format!("{}.{}", rt / 1000, rt % 1000 / 10),
        rows,
    ))
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

/// Sets `cub_ms` and `vs_cub` on every reap row that has a CUB counterpart:
/// select and partition against `If`, scan against `ExclusiveSum`, sorts
/// against `DeviceRadixSort`, and seed 004's rows against the competitor's
/// own marking plus `DeviceSelect::If` of the survivors (thrust::remove's work).
pub fn join(rows: &mut [Row], peer: &[PeerRow]) {
    let find = |op: PeerOp, elem: usize, n: u64, d: f64| {
        peer.iter().find(|p| p.op == op && p.elem == elem && p.n == n && same(p.density, d)).map(|p| p.median_ms)
    };
    let marks: Vec<(usize, u64, f64, f64)> = rows
        .iter()
        .filter(|r| r.operation == RowOperation::MarkSelect)
        .filter_map(|r| r.phases.iter().find(|(p, _)| p == "mark").map(|(_, t)| (r.element_bytes, r.n, r.density, *t)))
        .collect();
    for r in rows.iter_mut() {
        let cub = match r.operation {
            RowOperation::Select => find(PeerOp::SelectIf, r.element_bytes, r.n, r.density),
            RowOperation::Partition | RowOperation::PartitionReversed => {
                find(PeerOp::PartitionIf, r.element_bytes, r.n, r.density)
            }
            RowOperation::Scan => find(PeerOp::Scan, r.element_bytes, r.n, 1.0),
            RowOperation::SortKeys => find(PeerOp::SortKeys, 4, r.n, 1.0),
            RowOperation::SortPairs => find(PeerOp::SortPairs, 4, r.n, 1.0),
            RowOperation::Remove | RowOperation::MarkSelect => {
                let mark = marks
                    .iter()
                    .filter(|m| m.0 == r.element_bytes && m.1 == r.n && same(m.2, r.density))
                    .map(|m| m.3)
                    .fold(f64::INFINITY, f64::min);
                find(PeerOp::SelectIf, r.element_bytes, r.n, 1.0 - r.density)
                    .map(|s| s + if mark.is_finite() { mark } else { 0.0 })
            }
            _ => None,
        };
        r.cub_ms = cub;
        r.vs_cub = cub.filter(|c| *c > 0.0).map(|c| r.median_ms / c);
    }
}

/// The peer's measurements as rows of their own (backend `cub`), with the
/// copy rate of the CUDA rows at the same size (a CUDA memcpy on the same
/// GPU, not a wgpu run's copy).
pub fn as_rows(peer: &[PeerRow], reap: &[Row], device: &str) -> Vec<Row> {
    peer.iter()
        .map(|p| {
            let es = if p.op == PeerOp::SortPairs { 8 } else { p.elem };
            let copy_ms = reap
                .iter()
                .find(|r| r.backend == BenchBackend::Cuda && r.n == p.n && r.element_bytes == es)
                .map(|r| r.copy_ms)
                .unwrap_or(0.0);
            let bytes = p.op.bytes(p.n, p.kept, es as u64);
            let pct = if copy_ms > 0.0 && p.median_ms > 0.0 {
                100.0 * (bytes as f64 / p.median_ms) / ((2 * p.n * es as u64) as f64 / copy_ms)
            } else {
                0.0
            };
            Row {
                preset: String::new(),
                backend: BenchBackend::Cub,
                device: device.to_string(),
                algorithm: RowAlgorithm::Cub(p.op),
                operation: p.op.into(),
                element_bytes: es,
                n: p.n,
                density: p.density,
                kept: p.kept,
                median_ms: p.median_ms,
                min_ms: p.min_ms,
                max_ms: p.max_ms,
                phases: p.phases.clone(),
                bytes,
                copy_ms,
                pct_of_copy: pct,
                cub_ms: Some(p.median_ms),
                vs_cub: Some(1.0),
            }
        })
        .collect()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::compaction::Algorithm;

    fn reap_row(algorithm: Algorithm, operation: RowOperation, es: usize, density: f64, ms: f64) -> Row {
        Row {
            preset: "004-fig4".into(),
            backend: BenchBackend::Cuda,
            device: "Fake GPU".into(),
            algorithm: RowAlgorithm::Catalog(algorithm),
            operation,
            element_bytes: es,
            n: 1 << 20,
            density,
            kept: 0,
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            phases: Vec::new(),
            bytes: 0,
            copy_ms: 0.02,
            pct_of_copy: 0.0,
            cub_ms: None,
            vs_cub: None,
        }
    }

    /// What the GPU run does after reap's rows: jobs for the peer, its output
    /// read back (here from a script that prints what cub_peer.cu prints),
    /// joined, stored as rows, and reported.
    #[test]
    fn the_peers_partition_scan_and_thrust_remove_rows_reach_the_report() {
        let phases = |p: &[(&str, f64)]| p.iter().map(|(n, t)| (n.to_string(), *t)).collect::<Vec<_>>();
        let grid = Row {
            phases: phases(&[("mark red zone", 0.01), ("fill holes", 0.02), ("process orphans", 0.005)]),
            ..reap_row(Algorithm::RedzoneGrid, RowOperation::Remove, 4, 0.02, 0.04)
        };
        let marked = Row {
            phases: phases(&[("mark", 0.03)]),
            ..reap_row(Algorithm::Lookback, RowOperation::MarkSelect, 4, 0.02, 0.1)
        };
        let partition = reap_row(Algorithm::Lookback, RowOperation::Partition, 4, 0.5, 0.2);
        let scan = reap_row(Algorithm::Lookback, RowOperation::Scan, 8, 1.0, 0.3);
        let mut rows = vec![grid, marked, partition, scan];

        let want = [
            PeerJob { op: PeerOp::Remove, elem: 4, n: 1 << 20, density: 0.02 },
            PeerJob { op: PeerOp::SelectIf, elem: 4, n: 1 << 20, density: 0.98 },
            PeerJob { op: PeerOp::PartitionIf, elem: 4, n: 1 << 20, density: 0.5 },
            PeerJob { op: PeerOp::Scan, elem: 8, n: 1 << 20, density: 1.0 },
        ];
        assert_eq!(jobs(&rows), want);

        let dir = std::env::temp_dir().join(format!("reap-fake-peer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("cub_peer");
        std::fs::write(
            &script,
            concat!(
                "#!/bin/sh\ncat > /dev/null\n",
                r#"echo '{"device":"Fake GPU","cc":"9.0","l2_bytes":52428800,"cuda_runtime":13000,"cub_version":300000}'"#,
                "\n",
                r#"echo '{"op":"remove","elem":4,"n":1048576,"density":0.020000,"kept":1027604,"median_ms":0.200000,"min_ms":0.2,"max_ms":0.3,"phases":[["mark",0.008000],["remove",0.192000]]}'"#,
                "\n",
                r#"echo '{"op":"select_if","elem":4,"n":1048576,"density":0.980000,"kept":1027604,"median_ms":0.050000,"min_ms":0.05,"max_ms":0.05}'"#,
                "\n",
                r#"echo '{"op":"partition_if","elem":4,"n":1048576,"density":0.500000,"kept":524288,"median_ms":0.250000,"min_ms":0.25,"max_ms":0.25}'"#,
                "\n",
                r#"echo '{"op":"scan","elem":8,"n":1048576,"density":1.000000,"kept":1048576,"median_ms":0.600000,"min_ms":0.6,"max_ms":0.6}'"#,
                "\n",
            ),
        )
        .unwrap();
        std::process::Command::new("chmod").arg("+x").arg(&script).status().unwrap();
        let (device, cub_version, cuda_runtime, peer) = run(&script, &want, 3, 1, 1, &mut |_| {}).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!((device.as_str(), cub_version.as_str(), cuda_runtime.as_str()), ("Fake GPU", "3.0.0", "13.0"));
        assert_eq!(peer[0].phases, phases(&[("mark", 0.008), ("remove", 0.192)]));

        join(&mut rows, &peer);
        // Beside the current comparison: reap's own marking + CUB's select.
        assert!((rows[0].cub_ms.unwrap() - (0.03 + 0.05)).abs() < 1e-9);
        assert!((rows[2].vs_cub.unwrap() - 0.8).abs() < 1e-9, "partition: 0.2 / 0.25");
        assert!((rows[3].vs_cub.unwrap() - 0.5).abs() < 1e-9, "u64 scan: 0.3 / 0.6");
        let extra = as_rows(&peer, &rows, &device);
        assert_eq!(extra[0].algorithm.name(), "thrust-remove");
        assert_eq!(extra[0].operation, RowOperation::Remove);
        assert_eq!(extra[0].backend, BenchBackend::Cub);
        rows.extend(extra);

        let md = crate::bench::report::markdown(&crate::bench::report::Input {
            platform: &crate::bench::Platform::default(),
            beside: &[],
            peer: &PeerStatus::Ran { binary: String::new(), nvcc: String::new(), device, cub_version, cuda_runtime },
            presets: &["004-fig4".to_string()],
            rows: &rows,
            complete: true,
            command: "test",
        });
        // mark + thrust::remove 0.2 ms against redzone-grid's 0.04 ms.
        assert!(md.contains("| 0.2000 (mark 0.0080, remove 0.1920) | 5.00x |"), "{md}");
        // 20972 removed, 20552.6 expected holes in 0.02 ms; copy 8 MiB in 0.02 ms / 32 B;
        // the peer's mark: 20972 random writes in 0.008 ms.
        assert!(md.contains("| 1M | 2 % | 0.02M | 0.0200 | 1.03 | 13.11 | 8 % | 2.62 | 39 % |"), "{md}");
        assert!(md.contains("| partition | 4 | lookback | 1M | `cub-partition-if` | 0.80 |"), "{md}");
        assert!(md.contains("| scan | 8 | lookback | 1M | `cub-scan` | 0.50 |"), "{md}");
    }
}
