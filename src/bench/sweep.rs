//! `reap bench sweep`: the single-pass kernels' shapes (threads per block,
//! vectors per thread, load style, look-back delay) timed per element size on
//! one GPU, with the benchmark's own timing method, so that the default table
//! (`DEFAULT_SHAPES` in src/compaction/cuda/single_pass.rs) is chosen from
//! measurements. Every shape of a configuration reads the same inputs, and
//! its count must equal the default shape's, or the point is marked wrong.

use std::time::Duration;

use rayon::prelude::*;

use crate::bench::{BenchError, BenchResult, Job, Settings, Timed, input, median, phases_of, sample, threshold};
use crate::compaction::cuda::runtime::{KeepMode, Variant};
use crate::compaction::cuda::single_pass::{self, ArchClass, Chaining, LoadStyle, Shape, SinglePassTuning};
use crate::compaction::cuda::{CudaBackend, WORD_BELOW};
use crate::compaction::{Algorithm, Backend, ELEMENT_SIZES, Element, Keep, Operation, Report, Result};
use crate::verify::Harness;

/// The "on" value of the look-back delay: about one poll's round trip to L2,
/// so a spinning warp polls half as often and leaves issue slots to loads.
pub const DELAY_ON_NS: u32 = 200;

/// Threads per block the sweep tries.
pub const BLOCKS: [u32; 4] = [128, 256, 384, 512];

/// 16-byte vectors per thread the sweep tries: items per thread of about
/// 8-24 for 4-byte elements (CUB's sm_90 select takes 17), 6-16 for 8-byte
/// ones (CUB: 11), 3-8 for 16-byte ones, 1-4 for 32-byte ones (whole
/// elements, so an even count).
pub fn vecs(elem_bytes: u32) -> &'static [u32] {
    match elem_bytes {
        4 => &[2, 3, 4, 6],
        32 => &[2, 4, 6, 8],
        _ => &[3, 4, 6, 8],
    }
}

/// 16-byte vectors per thread of the bulk-async ring, whose tiles live in
/// shared memory rather than registers, so larger tiles pay (up to the
/// 227 KiB a block may opt in to, three tiles deep).
pub const RING_VECS: [u32; 4] = [2, 4, 6, 8];

/// The shapes a sweep tries: every combination of these lists that builds
/// (shared memory bounds the largest tiles, 1024 threads the largest
/// blocks). The ring's look-back has its own warp, off the load path, so its
/// back-off made no difference on an H100 and it is swept at 0 only.
#[derive(Clone, Debug)]
pub struct Grid {
    pub blocks: Vec<u32>,
    /// 16-byte vectors a thread; `None`: [`vecs`] per element size for the
    /// register styles, [`RING_VECS`] for the ring.
    pub vecs: Option<Vec<u32>>,
    pub loads: Vec<LoadStyle>,
    /// Look-back back-offs of the register styles, nanoseconds.
    pub delays: Vec<u32>,
}

impl Default for Grid {
    fn default() -> Self {
        Grid { blocks: BLOCKS.to_vec(), vecs: None, loads: LoadStyle::ALL.to_vec(), delays: vec![0, DELAY_ON_NS] }
    }
}

impl Grid {
    /// Every shape of the grid that builds for `elem_bytes`-byte elements.
    pub fn shapes(&self, elem_bytes: u32) -> Vec<Shape> {
        let mut shapes = Vec::new();
        for &block in &self.blocks {
            for &load in &self.loads {
                let ring = load == LoadStyle::BulkAsync;
                let vecs = match (&self.vecs, ring) {
                    (Some(v), _) => v.as_slice(),
                    (None, true) => &RING_VECS[..],
                    (None, false) => vecs(elem_bytes),
                };
                let delays = if ring { &[0][..] } else { &self.delays[..] };
                for &v in vecs {
                    for &delay in delays {
                        shapes.push(Shape::new(block, v, load, delay));
                    }
                }
            }
        }
        shapes.retain(|s| s.check_for(elem_bytes).is_ok());
        shapes
    }
}

/// The default grid's shapes for one element size.
pub fn grid(elem_bytes: u32) -> Vec<Shape> {
    Grid::default().shapes(elem_bytes)
}

/// The grid as tuning sets (`CudaTuning::set` pairs) for `reap verify
/// --tuning sweep-grid`: set i gives every element size its i-th shape (its
/// last where its grid is shorter), so every shape the sweep can pick is verified.
pub fn grid_tunings() -> Vec<Vec<(String, String)>> {
    let grids: Vec<(u32, Vec<Shape>)> = ELEMENT_SIZES.into_iter().map(|es| (es as u32, grid(es as u32))).collect();
    let longest = grids.iter().map(|(_, g)| g.len()).max().unwrap_or(0);
    (0..longest)
        .map(|i| {
            let mut set = Vec::new();
            for (es, g) in &grids {
                let Some(s) = g.get(i).or(g.last()) else { continue };
                set.push((format!("lookback.{es}.block"), s.block.to_string()));
                set.push((format!("lookback.{es}.vecs"), s.vecs.to_string()));
                set.push((format!("lookback.{es}.load"), s.load.name().to_string()));
                set.push((format!("lookback.{es}.delay"), s.delay_ns.to_string()));
            }
            set
        })
        .collect()
}

/// The single-pass algorithm and operation a sweep of `s` times: `s` must
/// name lookback or chained (they share the shapes) and select or partition.
pub fn target(s: &Settings) -> BenchResult<(Algorithm, Operation)> {
    s.check()?;
    let bad = |why: String| Err(BenchError::Settings(why));
    let op = match s.job {
        Job::Compaction(op @ (Operation::Select | Operation::Partition)) => op,
        _ => return bad("the sweep times select or partition".into()),
    };
    match s.algorithms.as_slice() {
        [a @ (Algorithm::Lookback | Algorithm::Chained)] => Ok((*a, op)),
        _ => bad("the sweep tunes one algorithm, lookback or chained".into()),
    }
}

/// Points a sweep of `s` times: the grid, plus the default where it is not in it.
pub fn planned(s: &Settings, g: &Grid) -> usize {
    let per = |e: usize| g.shapes(e as u32).len() + 1;
    s.element_sizes.iter().map(|&e| per(e) * s.sizes.len() * s.densities.len()).sum()
}

/// One timed shape at one configuration: a line of sweep.csv.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SweepPoint {
    pub algorithm: String,
    pub operation: String,
    pub element_bytes: u32,
    pub n: u64,
    pub density: f64,
    pub block: u32,
    pub vecs: u32,
    pub items_per_thread: u32,
    pub load: String,
    pub delay_ns: u32,
    /// The shape the default table gives this element size on this GPU.
    pub default: bool,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub gb_per_s: f64,
    pub pct_of_copy: f64,
    pub kept: u64,
    /// Whether the count equals the default shape's on the same input.
    pub count_ok: bool,
    /// Why the shape did not run (compile or launch error); empty when it ran.
    pub error: String,
}

impl SweepPoint {
    pub fn shape(&self) -> Option<Shape> {
        let load = self.load.parse().ok()?;
        Some(Shape::new(self.block, self.vecs, load, self.delay_ns))
    }
}

/// Times every shape of the grid at every configuration of `s`. Restores the
/// backend's tuning afterwards. `seen` gets each point as it is measured;
/// `stop` is polled between points.
pub fn run(
    b: &mut CudaBackend,
    s: &Settings,
    g: &Grid,
    stop: &dyn Fn() -> bool,
    seen: &mut dyn FnMut(&SweepPoint),
) -> BenchResult<Vec<SweepPoint>> {
    let (algorithm, operation) = target(s)?;
    let saved = b.tuning.single_pass.clone();
    let mut points = Vec::new();
    let what = What { algorithm, operation, reps: s.reps, warmup: s.warmup };
    let result = sweep_all(b, s, g, &what, stop, &mut |p| {
        seen(&p);
        points.push(p);
    });
    b.tuning.single_pass = saved;
    result?;
    Ok(points)
}

/// What every point of a sweep runs.
struct What {
    algorithm: Algorithm,
    operation: Operation,
    reps: usize,
    warmup: usize,
}

fn sweep_all(
    b: &mut CudaBackend,
    s: &Settings,
    g: &Grid,
    what: &What,
    stop: &dyn Fn() -> bool,
    seen: &mut dyn FnMut(SweepPoint),
) -> Result<()> {
    let mut rng = fastrand::Rng::with_seed(s.seed);
    for es in s.element_sizes.iter().map(|&e| e as u32) {
        let default = SinglePassTuning::default().shape(es, &b.info)?;
        // The default first: its count is what every other shape's must equal.
        let mut shapes = vec![default];
        let runs = |g: &Shape| g.load.runs_on(b.info.compute_capability);
        shapes.extend(g.shapes(es).into_iter().filter(|g| *g != default && runs(g)));
        precompile(b, what.algorithm, es, &shapes);
        for &n in &s.sizes {
            let copy = b.copy_time(n * es as u64, s.reps.max(5))?;
            for &d in &s.densities {
                if stop() {
                    return Ok(());
                }
                let at = At { n, density: d, copy, default };
                crate::with_element_size!(es, T => shapes_at::<T>(b, what, &at, &shapes, &mut rng, stop, seen)?,
                    other => return Err(crate::compaction::Error::ElementSize { size: other as usize }))
            }
        }
    }
    Ok(())
}

/// Compiles the grid's modules on every core before timing (one NVRTC run a
/// shape, about a second each); a shape that fails here fails again, with its
/// error recorded, when it is timed.
fn precompile(b: &CudaBackend, alg: Algorithm, es: u32, shapes: &[Shape]) {
    let v = variant(es);
    let c = chaining(alg);
    shapes.par_iter().for_each(|shape| {
        let _ = single_pass::compile(b, c, &v, shape);
    });
}

fn variant(es: u32) -> Variant {
    let mut v = Variant::new(es as usize, KeepMode::Predicate);
    v.predicate = Some(WORD_BELOW.into());
    v
}

fn chaining(alg: Algorithm) -> Chaining {
    if alg == Algorithm::Chained { Chaining::Chained } else { Chaining::Decoupled }
}

/// One configuration of the sweep.
struct At {
    n: u64,
    density: f64,
    copy: Duration,
    default: Shape,
}

#[allow(clippy::too_many_arguments)]
fn shapes_at<T: Element>(
    b: &mut CudaBackend,
    s: &What,
    at: &At,
    shapes: &[Shape],
    rng: &mut fastrand::Rng,
    stop: &dyn Fn() -> bool,
    seen: &mut dyn FnMut(SweepPoint),
) -> Result<()> {
    let es = std::mem::size_of::<T>() as u32;
    let n = at.n;
    // As the benchmark: enough distinct inputs that each run reads memory, not the cache.
    let sets = (b.cache_bytes() * 2).div_ceil((n * es as u64).max(1)).clamp(1, 8) as usize;
    let inputs = (0..sets).map(|_| b.upload(&input::<T>(n as usize, rng))).collect::<Result<Vec<_>>>()?;
    let mut output = b.alloc::<T>(n)?;
    let pred = b.word_below::<T>(threshold(at.density));
    let mut want = None;
    for &shape in shapes {
        if stop() {
            return Ok(());
        }
        b.tuning.single_pass.set_shape(Some(es), |x| *x = shape);
        let b = &*b;
        let timed = sample(s.warmup, s.reps, |rep| {
            let keep = Keep::Predicate(&*pred);
            let r = match s.operation {
                Operation::Partition => b.partition(s.algorithm, &inputs[rep % sets], keep, &mut output)?,
                _ => b.select(s.algorithm, &inputs[rep % sets], keep, &mut output)?,
            };
            Ok((r.span()?, phases_of(&r)?, r.count()?))
        });
        let mut p = SweepPoint {
            algorithm: s.algorithm.name().into(),
            operation: s.operation.name().into(),
            element_bytes: es,
            n,
            density: at.density,
            block: shape.block,
            vecs: shape.vecs,
            items_per_thread: shape.vecs * 16 / es,
            load: shape.load.name().into(),
            delay_ns: shape.delay_ns,
            default: shape == at.default,
            ..Default::default()
        };
        match timed {
            Ok(mut smp) => {
                let med = median(&mut smp.times);
                let written = if s.operation == Operation::Partition { n } else { smp.count };
                let bytes = (n + written) * es as u64;
                let rate = bytes as f64 / (med / 1e3);
                let copy_rate = (2 * n * es as u64) as f64 / at.copy.as_secs_f64();
                p.median_ms = med;
                p.min_ms = smp.times.first().copied().unwrap_or(0.0);
                p.max_ms = smp.times.last().copied().unwrap_or(0.0);
                p.gb_per_s = if med > 0.0 { rate / 1e9 } else { 0.0 };
                p.pct_of_copy = if med > 0.0 { 100.0 * rate / copy_rate } else { 0.0 };
                p.kept = smp.count;
                p.count_ok = *want.get_or_insert(smp.count) == smp.count;
            }
            // A shape that does not build or launch is a result of the sweep, not its end.
            Err(e) => p.error = e.to_string(),
        }
        seen(p);
    }
    Ok(())
}

/// sweep.csv: every point.
pub fn csv(points: &[SweepPoint]) -> std::result::Result<String, csv::Error> {
    let bytes = crate::report::csv_rows(points.iter().cloned())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A shape's standing over every configuration of one element size.
#[derive(Clone, Debug)]
pub struct Standing {
    pub shape: Shape,
    /// Geometric mean over the configurations of its time / the default's.
    pub vs_default: f64,
    /// Its worst configuration's ratio.
    pub worst: f64,
    /// Its % of the copy rate at the largest size, averaged over densities.
    pub pct_of_copy: f64,
}

/// Shapes of one element size that ran at every configuration with the
/// right count, best first.
pub fn standings(points: &[SweepPoint], elem_bytes: u32) -> Vec<Standing> {
    let of: Vec<&SweepPoint> = points.iter().filter(|p| p.element_bytes == elem_bytes).collect();
    let configs: Vec<(u64, u64)> = {
        let mut c: Vec<(u64, u64)> = of.iter().map(|p| (p.n, p.density.to_bits())).collect();
        c.sort();
        c.dedup();
        c
    };
    let largest = configs.iter().map(|c| c.0).max().unwrap_or(0);
    let default_ms = |c: &(u64, u64)| {
        of.iter().find(|p| p.default && (p.n, p.density.to_bits()) == *c && p.error.is_empty()).map(|p| p.median_ms)
    };
    let mut shapes: Vec<Shape> = of.iter().filter_map(|p| p.shape()).collect();
    shapes.sort_by_key(|s| (s.block, s.vecs, s.load.name(), s.delay_ns));
    shapes.dedup();
    let mut out = Vec::new();
    'shape: for shape in shapes {
        let (mut log_sum, mut worst, mut pct, mut at_largest) = (0.0, 0.0f64, 0.0, 0);
        for c in &configs {
            let p = of.iter().find(|p| p.shape() == Some(shape) && (p.n, p.density.to_bits()) == *c);
            let (Some(p), Some(base)) = (p, default_ms(c)) else { continue 'shape };
            if !p.error.is_empty() || !p.count_ok || p.median_ms <= 0.0 || base <= 0.0 {
                continue 'shape;
            }
            let r = p.median_ms / base;
            log_sum += r.ln();
            worst = worst.max(r);
            if p.n == largest {
                pct += p.pct_of_copy;
                at_largest += 1;
            }
        }
        if configs.is_empty() {
            continue;
        }
        out.push(Standing {
            shape,
            vs_default: (log_sum / configs.len() as f64).exp(),
            worst,
            pct_of_copy: pct / at_largest.max(1) as f64,
        });
    }
    out.sort_by(|a, b| a.vs_default.total_cmp(&b.vs_default));
    out
}

/// The winners as lines of `DEFAULT_SHAPES`, ready to paste.
pub fn table(points: &[SweepPoint], elem_sizes: &[u32], arch: ArchClass) -> String {
    let mut t = String::new();
    for &es in elem_sizes {
        if let Some(best) = standings(points, es).first() {
            let s = best.shape;
            let load = match s.load {
                LoadStyle::Vectorised => "Vectorised",
                LoadStyle::WarpTransposed => "WarpTransposed",
                LoadStyle::BulkAsync => "BulkAsync",
            };
            t.push_str(&format!(
                "    // Swept: {:.3}x the old default's time (geometric mean), {:.1} % of copy at the largest size.\n",
                best.vs_default, best.pct_of_copy
            ));
            t.push_str(&format!(
                "    entry(ArchClass::{}, {es}, Shape::new({}, {}, LoadStyle::{load}, {})),\n",
                arch.name(),
                s.block,
                s.vecs,
                s.delay_ns
            ));
        }
    }
    t
}

/// sweep.md: per element size the best shapes against the default, and the table to paste.
pub fn markdown(points: &[SweepPoint], elem_sizes: &[u32], device: &str, arch: ArchClass, command: &str) -> String {
    let mut md = format!("# Single-pass shape sweep on {device}\n\n`{command}`\n\n");
    md.push_str(
        "Each shape's time is divided by the default shape's on the same input; `vs default` is the geometric mean \
         of that ratio over every size and density, `worst` its largest. Shapes with a wrong count or an error at \
         any point are left out (see sweep.csv).\n\n",
    );
    for &es in elem_sizes {
        let st = standings(points, es);
        md.push_str(&format!("## {es}-byte elements\n\n"));
        if let Some(d) = points.iter().find(|p| p.element_bytes == es && p.default).and_then(SweepPoint::shape) {
            md.push_str(&format!("Default: {d}.\n\n"));
        }
        md.push_str(
            "| shape | items/thread | vs default | worst | % of copy (largest n) |\n| --- | --- | --- | --- | --- |\n",
        );
        for s in st.iter().take(8) {
            md.push_str(&format!(
                "| {} | {} | {:.3} | {:.3} | {:.1} |\n",
                s.shape,
                s.shape.vecs * 16 / es,
                s.vs_default,
                s.worst,
                s.pct_of_copy
            ));
        }
        let failed = points.iter().filter(|p| p.element_bytes == es && (!p.error.is_empty() || !p.count_ok)).count();
        md.push_str(&format!("\n{} shapes ranked; {failed} points failed or counted wrong.\n\n", st.len()));
    }
    md.push_str("## Winners as `DEFAULT_SHAPES` lines (src/compaction/cuda/single_pass.rs)\n\n```rust\n");
    md.push_str(&table(points, elem_sizes, arch));
    md.push_str("```\n");
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_builds_and_stays_within_eighty_shapes() {
        for es in ELEMENT_SIZES.map(|e| e as u32) {
            let g = grid(es);
            assert!(g.len() <= 80 && g.len() >= 60, "{es}: {} shapes", g.len());
            assert!(g.iter().any(|s| s.load == LoadStyle::BulkAsync && s.block == 512 && s.vecs == 8));
            assert!(g.iter().all(|s| s.check_for(es).is_ok()));
            assert!(g.iter().any(|s| s.load == LoadStyle::WarpTransposed && s.delay_ns == DELAY_ON_NS));
        }
    }

    #[test]
    fn the_default_table_tells_an_h200_from_an_h100_and_covers_every_element_size() {
        use crate::compaction::cuda::single_pass::GpuTraits;
        let t = SinglePassTuning::default();
        let h100 = GpuTraits { compute_capability: (9, 0), dram_gbps: 3352.3 };
        let h200 = GpuTraits { compute_capability: (9, 0), dram_gbps: 4915.2 };
        assert_eq!(ArchClass::of(h100), ArchClass::Sm90);
        assert_eq!(ArchClass::of(h200), ArchClass::Sm90Hbm3e);
        assert_eq!(ArchClass::of((8, 6)), ArchClass::Any);
        assert_eq!(t.shape(4, h100).unwrap(), Shape::new(512, 8, LoadStyle::BulkAsync, 0));
        assert_eq!(t.shape(4, h200).unwrap(), Shape::new(512, 8, LoadStyle::BulkAsync, 0));
        // Each class has its own line for every element size.
        for es in ELEMENT_SIZES.map(|e| e as u32) {
            for arch in ArchClass::ALL {
                assert!(t.shapes.iter().any(|e| e.arch == arch && e.elem_bytes == es), "{arch:?} {es}");
            }
        }
        for es in ELEMENT_SIZES.map(|e| e as u32) {
            for gpu in [h100, h200, (8, 6).into()] {
                let s = t.shape(es, gpu).unwrap();
                assert!(s.check_for(es).is_ok(), "{es}-byte {gpu:?}: {s}");
            }
        }
    }

    #[test]
    fn the_grid_tunings_set_every_shape_of_the_grid() {
        let sets = grid_tunings();
        for es in ELEMENT_SIZES.map(|e| e as u32) {
            let mut seen = Vec::new();
            for set in &sets {
                let mut t = SinglePassTuning::default();
                for (k, v) in set {
                    t.set(k, v).unwrap();
                }
                seen.push(t.shape(es, (9, 0)).unwrap());
            }
            for shape in grid(es) {
                assert!(seen.contains(&shape), "{es}: {shape} is never verified");
            }
        }
    }

    fn point(es: u32, n: u64, shape: Shape, ms: f64, default: bool) -> SweepPoint {
        SweepPoint {
            element_bytes: es,
            n,
            density: 0.5,
            block: shape.block,
            vecs: shape.vecs,
            load: shape.load.name().into(),
            delay_ns: shape.delay_ns,
            default,
            median_ms: ms,
            pct_of_copy: 50.0 / ms,
            count_ok: true,
            ..Default::default()
        }
    }

    #[test]
    fn the_fastest_shape_over_every_size_wins_and_is_printed_as_a_table_line() {
        let d = Shape::new(128, 8, LoadStyle::Vectorised, 0);
        let fast = Shape::new(384, 4, LoadStyle::WarpTransposed, DELAY_ON_NS);
        let spiky = Shape::new(256, 4, LoadStyle::Vectorised, 0);
        let mut pts = vec![
            point(4, 1 << 24, d, 1.0, true),
            point(4, 1 << 26, d, 4.0, true),
            point(4, 1 << 24, fast, 0.8, false),
            point(4, 1 << 26, fast, 3.6, false),
            point(4, 1 << 24, spiky, 0.5, false),
            point(4, 1 << 26, spiky, 4.0, false),
        ];
        // A wrong count removes a shape, however fast.
        pts[5].count_ok = false;
        let st = standings(&pts, 4);
        assert_eq!(st.len(), 2);
        assert_eq!(st[0].shape, fast);
        assert!((st[0].vs_default - (0.8f64 * 0.9).sqrt()).abs() < 1e-9);
        assert!((st[0].worst - 0.9).abs() < 1e-9);
        let t = table(&pts, &[4], ArchClass::Sm90);
        assert!(t.contains("entry(ArchClass::Sm90, 4, Shape::new(384, 4, LoadStyle::WarpTransposed, 200)),"), "{t}");
        let md = markdown(&pts, &[4], "H100", ArchClass::Sm90, "reap bench sweep");
        assert!(md.contains("| 384x4 warp-transposed delay 200 ns | 16 |"), "{md}");
    }
}
