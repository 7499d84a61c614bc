//! report.md: each preset in its paper's layout beside the published numbers,
//! the measurements with their copy-rate and CUB columns, and a sentence
//! wherever the measured order differs from the paper's conclusion. Every
//! sentence is computed from the rows, never written by hand.

use std::fmt::Write as _;

use crate::bench::cub::{PeerOp, PeerStatus};
use crate::bench::presets::{PRESETS, PUBLISHED, Preset};
use crate::bench::{BenchBackend, Named, Platform, Row, RowAlgorithm, RowOperation};
use crate::compaction::Algorithm;

mod papers;
mod redzone;
mod vs_cub;
mod vs_cuda;

/// The inputs of a report.
pub struct Input<'a> {
    pub platform: &'a Platform,
    /// Backends timed beside `platform`'s in the same run (CUDA beside wgpu).
    pub beside: &'a [Platform],
    pub peer: &'a PeerStatus,
    pub presets: &'a [String],
    /// reap's rows (of every backend timed) and the CUB peer's (backend `cub`).
    pub rows: &'a [Row],
    pub complete: bool,
    pub command: &'a str,
}

fn size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}k", n >> 10)
    } else {
        n.to_string()
    }
}

fn msf(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "–".into())
}

fn pct(d: f64) -> String {
    format!("{:.0} %", d * 100.0)
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

fn header(s: &mut String, cols: &[&str]) {
    let _ = writeln!(s, "| {} |", cols.join(" | "));
    let _ = writeln!(s, "|{}|", cols.iter().map(|_| " --- ").collect::<Vec<_>>().join("|"));
}

fn line(s: &mut String, cells: &[String]) {
    let _ = writeln!(s, "| {} |", cells.join(" | "));
}

fn published(source: &str) -> impl Iterator<Item = &'static crate::bench::presets::Published> + '_ {
    PUBLISHED.iter().filter(move |p| p.source == source)
}

/// The rows of one preset (reap's) and the CUB rows at its configurations.
struct View<'a> {
    rows: Vec<&'a Row>,
    cub: Vec<&'a Row>,
}

impl<'a> View<'a> {
    fn new(all: &'a [Row], preset: &str, primary: Option<BenchBackend>) -> Self {
        let rows: Vec<&Row> = all.iter().filter(|r| r.preset == preset && is_primary(r, primary)).collect();
        let cub = all
            .iter()
            .filter(|c| c.backend == BenchBackend::Cub)
            .filter(|c| rows.iter().any(|r| peer_matches(r, c)))
            .collect();
        View { rows, cub }
    }

    /// The catalog algorithms measured, in first-seen order.
    fn algorithms(&self) -> Vec<Algorithm> {
        let mut v: Vec<Algorithm> = Vec::new();
        for r in &self.rows {
            if let RowAlgorithm::Catalog(a) = r.algorithm
                && !v.contains(&a)
            {
                v.push(a);
            }
        }
        v
    }

    fn get(&self, alg: Algorithm, es: usize, n: u64, d: f64) -> Option<&'a Row> {
        self.rows.iter().copied().find(|r| {
            r.algorithm == RowAlgorithm::Catalog(alg) && r.element_bytes == es && r.n == n && close(r.density, d)
        })
    }

    fn cub(&self, op: PeerOp, es: usize, n: u64, d: f64) -> Option<&'a Row> {
        self.cub
            .iter()
            .copied()
            .find(|r| r.algorithm == RowAlgorithm::Cub(op) && r.element_bytes == es && r.n == n && close(r.density, d))
    }

    fn of(&self, alg: Algorithm) -> Vec<&'a Row> {
        self.rows.iter().copied().filter(|r| r.algorithm == RowAlgorithm::Catalog(alg)).collect()
    }
}

/// The backend the report is of (`platform.backend`); `None` for a
/// platform that names none, whose report takes every reap row.
fn primary_of(p: &Platform) -> Option<BenchBackend> {
    BenchBackend::from_name(&p.backend).ok().filter(|b| *b != BenchBackend::Cub)
}

/// Whether `r` is one of the rows the report's tables and plots show: the
/// primary backend's (a backend timed beside it has its own section).
fn is_primary(r: &Row, primary: Option<BenchBackend>) -> bool {
    r.backend != BenchBackend::Cub && primary.is_none_or(|p| r.backend == p)
}

/// The rows the plots draw: the primary backend's and the CUB peer's.
pub fn plotted(platform: &Platform, rows: &[Row]) -> Vec<Row> {
    let p = primary_of(platform);
    rows.iter().filter(|r| r.backend == BenchBackend::Cub || is_primary(r, p)).cloned().collect()
}

/// Whether CUB row `c` is the counterpart of reap row `r` (see `cub::jobs`).
fn peer_matches(r: &Row, c: &Row) -> bool {
    let RowAlgorithm::Cub(op) = c.algorithm else {
        return false;
    };
    if r.n != c.n || !crate::bench::cub::counterparts(r.operation).contains(&op) {
        return false;
    }
    match r.operation {
        RowOperation::Select | RowOperation::Partition | RowOperation::PartitionReversed => {
            c.element_bytes == r.element_bytes && close(c.density, r.density)
        }
        // thrust::remove takes k/n as reap's rows do; CUB's select keeps the rest.
        RowOperation::Remove | RowOperation::MarkSelect if op == PeerOp::Remove => {
            c.element_bytes == r.element_bytes && close(c.density, r.density)
        }
        RowOperation::Remove | RowOperation::MarkSelect => {
            c.element_bytes == r.element_bytes && close(c.density, 1.0 - r.density)
        }
        _ => true,
    }
}

pub fn markdown(input: &Input<'_>) -> String {
    let mut s = String::new();
    let p = input.platform;
    let _ = writeln!(s, "# reap bench: {}\n", p.device);
    let _ = writeln!(s, "Command: `{}`\n", input.command);
    header(&mut s, &["", ""]);
    platform_lines(&mut s, p);
    for b in input.beside {
        let _ = writeln!(s, "| **also timed** | **{}** |", b.backend);
        platform_lines(&mut s, b);
    }
    line(&mut s, &["reap commit".into(), format!("`{}`", crate::build_info::GIT_COMMIT)]);
    match input.peer {
        PeerStatus::Ran { device, cub_version, cuda_runtime, .. } => {
            line(&mut s, &["CUB peer".into(), format!("CUB {cub_version}, CUDA runtime {cuda_runtime}, on {device}")])
        }
        PeerStatus::Skipped { why } => line(&mut s, &["CUB peer".into(), format!("skipped: {why}")]),
    }
    let _ = writeln!(s);
    if !input.complete {
        let _ = writeln!(s, "**The run was stopped before it finished: the tables show what was measured.**\n");
    }
    let _ = writeln!(
        s,
        "Times are medians of the repetitions by the device's own clock where it has one (CUDA events, wgpu \
         timestamp queries: the clock line above says which), with min and max in results.csv. \
         \"% copy\" is the rate of the operation's minimal traffic (every input read once, every output \
         written once) as a share of a device-to-device copy (on wgpu a buffer-to-buffer copy) of the same \
         elements in the same run. \
         \"vs CUB\" is reap's time over CUB's on the same configuration: below 1 is faster than CUB.\n"
    );
    let presets: Vec<&Preset> = PRESETS.iter().filter(|pr| input.presets.iter().any(|n| n == pr.name)).collect();
    let primary = primary_of(p);
    for pr in &presets {
        let view = View::new(input.rows, pr.reads, primary);
        let _ = writeln!(s, "## {} — {} ({})\n", pr.name, pr.title, pr.source);
        if view.rows.is_empty() {
            let _ = writeln!(s, "Not measured (the run stopped first, or the backend runs none of its algorithms).\n");
            continue;
        }
        match pr.name {
            "000-fig3" => papers::fig3(&mut s, &view),
            "000-fig4" => papers::fig4(&mut s, &view),
            "000-table3" => papers::table3(&mut s, &view),
            "000-table4" => papers::table4(&mut s, &view),
            "000-table5" => papers::table5(&mut s, &view),
            "003-table1" => papers::speedups(
                &mut s,
                &view,
                "003 Table I",
                Algorithm::Roger,
                &[Algorithm::Horn, Algorithm::Blelloch],
            ),
            "002-s4" => papers::speedups(&mut s, &view, "002 §4", Algorithm::Sengupta, &[Algorithm::Horn]),
            "004-fig4" => redzone::fig4(&mut s, &view),
            _ => {}
        }
        if pr.name != "000-table3" {
            measurements(&mut s, &view);
        }
    }
    if presets.is_empty() {
        let view = View::new(input.rows, "", primary);
        measurements(&mut s, &view);
    }
    vs_cub::table(&mut s, input.rows, primary);
    vs_cuda::table(&mut s, input.rows);
    s
}

/// A platform's lines of the table at the top: backend, device, clock, versions.
fn platform_lines(s: &mut String, p: &Platform) {
    line(s, &["backend".into(), p.backend.clone()]);
    line(s, &["device".into(), p.device.clone()]);
    let facts = [
        ("driver", &p.driver),
        ("CUDA (driver API)", &p.cuda_driver),
        ("NVRTC", &p.nvrtc),
        ("arch", &p.arch),
        ("clock", &p.clock),
        ("workgroup scans", &p.workgroup_scans),
        ("copy rates", &p.copy_rates),
    ];
    for (k, v) in facts {
        if let Some(v) = v {
            line(s, &[k.into(), v.clone()]);
        }
    }
}

/// Every row of a view with its copy-rate and CUB columns.
fn measurements(s: &mut String, v: &View<'_>) {
    let _ = writeln!(s, "<details><summary>Measurements ({} rows)</summary>\n", v.rows.len());
    header(
        s,
        &[
            "algorithm",
            "operation",
            "bytes/elem",
            "n",
            "density",
            "median ms",
            "min ms",
            "max ms",
            "% copy",
            "CUB ms",
            "vs CUB",
            "phases (ms)",
        ],
    );
    // The CUB rows carry their own time as `cub_ms` and 1 as `vs_cub`, so
    // they read in the same columns.
    for r in v.rows.iter().chain(&v.cub) {
        let phases: Vec<String> = r.phases.iter().map(|(n, t)| format!("{n} {}", msf(*t))).collect();
        line(
            s,
            &[
                r.algorithm.name().to_string(),
                r.operation.name().to_string(),
                r.element_bytes.to_string(),
                size(r.n),
                pct(r.density),
                msf(r.median_ms),
                msf(r.min_ms),
                msf(r.max_ms),
                format!("{:.1}", r.pct_of_copy),
                opt(r.cub_ms, msf),
                opt(r.vs_cub, |x| format!("{x:.2}")),
                phases.join(", "),
            ],
        );
    }
    let _ = writeln!(s, "\n</details>\n");
}

/// "a at x, y and z; b at w": (name, place) pairs grouped by name, in first-seen order.
fn grouped(pairs: &[(String, String)]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, at) in pairs {
        match groups.iter_mut().find(|g| g.0 == name) {
            Some(g) => g.1.push(at),
            None => groups.push((name, vec![at])),
        }
    }
    let list = |v: &[&str]| match v {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    groups.iter().map(|(name, at)| format!("{name} at {}", list(at))).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn grouped_lists_places_per_name() {
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(grouped(&[p("blelloch", "1M")]), "blelloch at 1M");
        assert_eq!(
            grouped(&[p("x", "0 %"), p("y", "10 %"), p("x", "30 %"), p("x", "50 %")]),
            "x at 0 %, 30 % and 50 %; y at 10 %"
        );
    }
}
