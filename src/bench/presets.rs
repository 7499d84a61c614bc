//! The papers' experiments as named presets, and the numbers the papers
//! published for them (one table, each entry with its seed file and section).
//!
//! A preset is one or more measurement series ([`Settings`]); the report
//! lays each preset out as its paper did. Seed 000's Table 3 reads the rows
//! of Fig. 3 (the same 4M measurement, averaged over densities), so asking
//! for both measures once.

use crate::bench::{BenchError, BenchResult, Job, Settings};
use crate::compaction::{Algorithm, Operation};

const M: u64 = 1 << 20;

/// One published number.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Published {
    /// Seed file prefix and section, e.g. "000 §5.1 Table 3".
    pub source: &'static str,
    /// What the paper calls the contender.
    pub contender: &'static str,
    /// The reap algorithm that stands for it, if any.
    pub reap: Option<&'static str>,
    /// Problem size in elements (0 when the entry is not per size).
    pub n: u64,
    pub value: f64,
    /// "ms", or "x" for a ratio.
    pub unit: &'static str,
    pub note: &'static str,
}

const fn p(
    source: &'static str,
    contender: &'static str,
    reap: Option<&'static str>,
    n: u64,
    value: f64,
    unit: &'static str,
    note: &'static str,
) -> Published {
    Published { source, contender, reap, n, value, unit, note }
}

/// Every published number the report sets beside a measurement.
pub const PUBLISHED: &[Published] = &[
    // 000_87217f6aa4074247.txt §5.1, Table 3: 4M 32-bit, mean over 0-100 % valid (GTX 280 unless noted).
    p(
        "000 §5.1 Table 3",
        "Billeter et al. (selective)",
        Some("billeter-popc-selective"),
        4 * M,
        0.561,
        "ms",
        "min 0.435 / max 0.648",
    ),
    p("000 §5.1 Table 3", "CUDPP (scan + scatter)", Some("blelloch"), 4 * M, 1.81, "ms", "min 1.22 / max 1.95"),
    p("000 §5.1 Table 3", "Ziegler et al. 2006 (HistoPyramid)", None, 4 * M, 2.54, "ms", "min 0.539 / max 4.04"),
    p("000 §5.1 Table 3", "Geometry shaders", None, 4 * M, 7.05, "ms", "min 7.03 / max 7.09"),
    p("000 §5.1 Table 3", "Roger et al. 2007", Some("roger"), 4 * M, 10.6, "ms", "8800 GTS; min 9.09 / max 11.4"),
    p("000 §5.1 Table 3", "Billeter et al. (selective)", Some("billeter-popc-selective"), 4 * M, 1.0, "x", ""),
    p("000 §5.1 Table 3", "CUDPP (scan + scatter)", Some("blelloch"), 4 * M, 3.22, "x", ""),
    p("000 §5.1 Table 3", "Ziegler et al. 2006 (HistoPyramid)", None, 4 * M, 4.53, "x", ""),
    p("000 §5.1 Table 3", "Geometry shaders", None, 4 * M, 12.6, "x", ""),
    p("000 §5.1 Table 3", "Roger et al. 2007", Some("roger"), 4 * M, 18.9, "x", ""),
    // §5.2, Table 4: exclusive scan of 32M 32-bit.
    p("000 §5.2 Table 4", "Billeter et al.", Some("billeter-prefix-staged"), 32 * M, 3.7, "ms", "GTX 280"),
    p("000 §5.2 Table 4", "CUDPP (Sengupta et al. 2007)", Some("blelloch"), 32 * M, 5.3, "ms", "GTX 280"),
    p("000 §5.2 Table 4", "Dotsenko et al. 2008", None, 32 * M, 8.5, "ms", "8800 GTX"),
    // §5.3, Table 5: radix sort of 4M 32-bit keys (GTX 280).
    p("000 §5.3 Table 5", "Billeter et al. (split), keys", Some("billeter-popc-selective"), 4 * M, 28.2, "ms", ""),
    p("000 §5.3 Table 5", "Satish et al. 2008, keys", None, 4 * M, 27.6, "ms", "CUDA 2.1 SDK"),
    p("000 §5.3 Table 5", "CUDPP, keys", None, 4 * M, 50.1, "ms", ""),
    p(
        "000 §5.3 Table 5",
        "Billeter et al. (split), key-value separate",
        Some("billeter-popc-selective"),
        4 * M,
        36.5,
        "ms",
        "",
    ),
    p("000 §5.3 Table 5", "Satish et al. 2008, key-value separate", None, 4 * M, 38.5, "ms", ""),
    // 003_6517c8565b1343e6.txt §VI, Table I: speed-up of Roger et al. (60 % valid).
    p("003 Table I", "vs Horn", Some("horn"), M / 4, 5.5, "x", ""),
    p("003 Table I", "vs Horn", Some("horn"), M, 7.8, "x", ""),
    p("003 Table I", "vs Horn", Some("horn"), 4 * M, 9.1, "x", ""),
    p("003 Table I", "vs Blelloch", Some("blelloch"), M / 4, 3.9, "x", ""),
    p("003 Table I", "vs Blelloch", Some("blelloch"), M, 3.7, "x", ""),
    p("003 Table I", "vs Blelloch", Some("blelloch"), 4 * M, 3.6, "x", ""),
    p("003 Table I", "vs Blelloch", Some("blelloch"), 16 * M, 4.8, "x", ""),
    // 002_564b2bd0f5066ca7.txt §4: hybrid compaction vs Horn's.
    p("002 §4", "hybrid vs Horn", Some("horn"), M / 4, 3.0, "x", "9 reduce steps"),
    p("002 §4", "hybrid vs Horn", Some("horn"), M, 4.0, "x", "10 reduce steps"),
    // 004_40e93abdacd3a7cd.txt §5.1 and §6: Redzone vs thrust::remove (A100, RTX 3070).
    p(
        "004 §6",
        "Redzone vs O(n) compaction, k/n = 2 %",
        Some("redzone-grid"),
        0,
        10.0,
        "x",
        "\"roughly an order of magnitude\"",
    ),
    p("004 §6", "Redzone vs O(n) compaction, k/n = 50 %", Some("redzone-grid"), 0, 1.0, "x", "\"on par\""),
    p(
        "004 §5.1",
        "Redzone vs thrust::remove, k/n = 90 %",
        Some("redzone-grid"),
        0,
        0.9,
        "x",
        "\"only slightly slower\"",
    ),
];

/// A named experiment.
pub struct Preset {
    pub name: &'static str,
    pub title: &'static str,
    /// Where the experiment is in the seeds.
    pub source: &'static str,
    /// The preset whose rows this one reads, when it measures nothing itself.
    pub reads: &'static str,
}

pub const PRESETS: &[Preset] = &[
    Preset {
        name: "000-fig3",
        title: "Compaction of 4M 32-bit elements vs fraction kept",
        source: "000 §5.1 Fig. 3",
        reads: "000-fig3",
    },
    Preset {
        name: "000-fig4",
        title: "Compaction time vs n, 32/64/128-bit elements",
        source: "000 §5.1 Fig. 4",
        reads: "000-fig4",
    },
    Preset {
        name: "000-table3",
        title: "4M 32-bit, mean / min / max over 0-100 % kept, relative to Billeter",
        source: "000 §5.1 Table 3",
        reads: "000-fig3",
    },
    Preset {
        name: "000-table4",
        title: "Exclusive scan of 32M 32-bit elements",
        source: "000 §5.2 Table 4",
        reads: "000-table4",
    },
    Preset {
        name: "000-table5",
        title: "Radix sort by split, 4M keys and key-value pairs",
        source: "000 §5.3 Table 5",
        reads: "000-table5",
    },
    Preset {
        name: "003-table1",
        title: "Speed-up of Roger et al. over Horn and Blelloch (60 % kept)",
        source: "003 Table I",
        reads: "003-table1",
    },
    Preset { name: "002-s4", title: "Hybrid (Sengupta) vs Horn compaction", source: "002 §4", reads: "002-s4" },
    Preset {
        name: "004-fig4",
        title: "Redzone remove vs marking + O(n) select and vs thrust::remove, k/n = 2/10/50/90 %",
        source: "004 §5.1 Fig. 4",
        reads: "004-fig4",
    },
];

pub fn find(name: &str) -> BenchResult<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| BenchError::UnknownPreset {
        name: name.to_string(),
        known: PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
    })
}

/// The presets named (with `all` for every one), in catalog order, each once.
pub fn resolve(names: &[String]) -> BenchResult<Vec<&'static Preset>> {
    let mut chosen = Vec::new();
    for n in names {
        if n == "all" {
            return Ok(PRESETS.iter().collect());
        }
        chosen.push(find(n)?.name);
    }
    Ok(PRESETS.iter().filter(|p| chosen.contains(&p.name)).collect())
}

fn algs(names: &[&str]) -> Vec<Algorithm> {
    names.iter().filter_map(|n| n.parse().ok()).collect()
}

/// Everything but the in-place Redzone (seed 004's own preset) and the CPU-only stencil.
fn compactors() -> Vec<Algorithm> {
    Algorithm::ALL.iter().copied().filter(|a| !a.in_place() && *a != Algorithm::Stencil).collect()
}

fn densities(step: f64) -> Vec<f64> {
    let steps = (1.0 / step).round() as usize;
    (0..=steps).map(|i| i as f64 * step).collect()
}

/// The series a set of presets measures; `reps`, `warmup` and `seed` from the command line.
pub fn series(presets: &[&Preset], reps: usize, warmup: usize, seed: u64) -> Vec<Settings> {
    let mut measured: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for p in presets {
        if measured.contains(&p.reads) {
            continue;
        }
        measured.push(p.reads);
        let base =
            |job: Job, algorithms: Vec<Algorithm>, sizes: Vec<u64>, densities: Vec<f64>, elements: Vec<usize>| {
                Settings {
                    preset: p.reads.to_string(),
                    job,
                    algorithms,
                    sizes,
                    densities,
                    element_sizes: elements,
                    reps,
                    warmup,
                    seed,
                }
            };
        let select = Job::Compaction(Operation::Select);
        match p.reads {
            "000-fig3" => out.push(base(select, compactors(), vec![4 * M], densities(0.1), vec![4])),
            "000-fig4" => out.push(base(
                select,
                algs(&["billeter-popc-selective", "billeter-prefix-selective", "blelloch", "lookback"]),
                vec![M, 2 * M, 4 * M, 8 * M, 16 * M, 24 * M, 32 * M, 40 * M],
                vec![0.0, 0.25, 0.5, 0.75, 1.0],
                vec![4, 8, 16],
            )),
            "000-table4" => out.push(base(Job::Scan, Algorithm::ALL.to_vec(), vec![32 * M], vec![1.0], vec![4])),
            "000-table5" => {
                for pairs in [false, true] {
                    out.push(base(Job::Sort { pairs }, Algorithm::ALL.to_vec(), vec![4 * M], vec![1.0], vec![4]));
                }
            }
            "003-table1" => out.push(base(
                select,
                algs(&["roger", "horn", "blelloch", "billeter-popc-selective", "lookback"]),
                vec![M / 4, M, 4 * M, 16 * M],
                vec![0.6],
                vec![4],
            )),
            "002-s4" => {
                out.push(base(select, algs(&["sengupta", "horn", "lookback"]), vec![M / 4, M], vec![0.5], vec![4]))
            }
            "004-fig4" => {
                let k = vec![0.02, 0.1, 0.5, 0.9];
                out.push(base(
                    Job::Remove,
                    algs(&["redzone-grid", "lookback", "blelloch", "atomic", "billeter-popc-selective"]),
                    vec![1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28],
                    k.clone(),
                    vec![4],
                ));
                // Alg. 1 is one block (seed 004 Fig. 5): large n would only measure one SM.
                out.push(base(Job::Remove, algs(&["redzone-block"]), vec![1 << 20, 1 << 22, 1 << 24], k, vec![4]));
            }
            _ => {}
        }
    }
    out
}
