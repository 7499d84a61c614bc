//! `reap bench hop`: the hop from one workgroup to the next, measured alone,
//! the yardstick of the single-pass algorithms (issue 44). Two
//! micro-benchmarks, in WGSL (shaders/bench/hop.wgsl) and CUDA
//! (kernels/bench/hop.cu):
//!
//! - a ping-pong between two workgroups, N round trips through two flag words
//!   a cache line apart or more: one-way = time / 2N;
//! - a chain of W workgroups in the order they take ids: each waits for its
//!   predecessor's flag, then publishes its own: one-way = time / W, polled by
//!   one invocation, by 32 with loads, or by 32 with `atomicOr(x, 0)`.
//!
//! Beside them, the library's own `chained` select on the same backend, per
//! tile. Every wait is bounded (a spin budget per invocation, within
//! lavapipe's loop limit on a software adapter); a bound hit or a loop the
//! driver cut short is an error, never a number.

use std::time::{Duration, Instant};

use crate::bench::{BenchError, BenchResult, Timed, input, median, threshold};
use crate::clocks::ms;
use crate::compaction::{Algorithm, Keep, Report};

/// How the invocations of a chain workgroup poll their predecessor's flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polling {
    /// Invocation 0 alone, with atomic loads: Decoupled Fallback's hop.
    OneLoad,
    /// 32 invocations (a subgroup on NVIDIA) with atomic loads of the same word.
    Loads32,
    /// 32 invocations with `atomicOr(x, 0)`: read-modify-write polling.
    Rmw32,
}

impl Polling {
    pub const ALL: [Polling; 3] = [Polling::OneLoad, Polling::Loads32, Polling::Rmw32];

    fn pollers(self) -> u32 {
        if self == Polling::OneLoad { 1 } else { 32 }
    }

    fn rmw(self) -> bool {
        self == Polling::Rmw32
    }
}

/// One measurement of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopCase {
    PingPong,
    Chain(Polling),
    /// The library's `chained` select, per tile.
    Chained,
}

impl HopCase {
    /// The `case` column.
    pub fn name(self) -> &'static str {
        match self {
            HopCase::PingPong => "ping-pong",
            HopCase::Chain(Polling::OneLoad) => "chain, 1 invocation polls (load)",
            HopCase::Chain(Polling::Loads32) => "chain, 32 invocations poll (load)",
            HopCase::Chain(Polling::Rmw32) => "chain, 32 invocations poll (atomicOr)",
            HopCase::Chained => "reap chained select, per tile",
        }
    }
}

/// One row of the table (and of hop.csv).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HopRow {
    pub backend: String,
    pub device: String,
    pub case: String,
    /// Hops one run makes: 2N, W, or the select's tiles.
    pub hops: u64,
    /// The device time divided by the hops, ns.
    pub one_way_ns: f64,
    /// Median of the timed runs on the backend's clock, ms.
    pub device_ms: f64,
    /// Median of the same runs on the host's clock, from submission to completion, ms.
    pub wall_ms: f64,
    /// What timed `device_ms`.
    pub clock: String,
    /// The run's size: round trips, workgroups, or elements and tile.
    pub detail: String,
}

/// What to measure; `None` takes the default of the adapter's kind.
#[derive(Clone, Debug)]
pub struct HopSettings {
    pub round_trips: Option<u32>,
    pub workgroups: Option<u32>,
    /// Elements of the `chained` select (4-byte, half kept).
    pub chained_size: Option<u64>,
    pub reps: usize,
    pub warmup: usize,
    pub seed: u64,
}

/// The defaults on a GPU (issue 44's table).
pub const ROUND_TRIPS: u32 = 20_000;
pub const WORKGROUPS: u32 = 16_384;
pub const CHAINED_SIZE: u64 = 1 << 26;
/// The defaults on a software adapter (lavapipe), which hops in microseconds
/// and ends every invocation's loops after 65,535 iterations in all.
pub const SOFTWARE_ROUND_TRIPS: u32 = 200;
pub const SOFTWARE_WORKGROUPS: u32 = 64;
pub const SOFTWARE_CHAINED_SIZE: u64 = 1 << 20;

/// Loop iterations an invocation may spend on a software adapter: below
/// Mesa's LP_MAX_TGSI_LOOP_ITERATIONS (65,535), past which lavapipe silently
/// ends the loop.
const SOFTWARE_LOOPS: u32 = 60_000;
/// The most round trips a software adapter's budget admits (the rest of it polls).
pub const SOFTWARE_MAX_ROUND_TRIPS: u32 = SOFTWARE_LOOPS / 4;
/// Polls a wait may spend beyond the few a healthy hop takes on a GPU: a
/// second or two of polling, then the benchmark reports a stall.
const GPU_SLACK: u32 = 1 << 22;
/// Beyond these the buffers or the run time stop making sense.
pub const MAX_ROUND_TRIPS: u32 = 1 << 24;
pub const MAX_WORKGROUPS: u32 = 1 << 20;
pub const MAX_CHAINED_SIZE: u64 = 1 << 31;

/// The settings with every default filled in for one adapter.
#[derive(Clone, Debug)]
struct Resolved {
    round_trips: u32,
    workgroups: u32,
    chained_size: u64,
    reps: usize,
    warmup: usize,
    seed: u64,
    software: bool,
}

impl HopSettings {
    /// Refuses what no adapter can measure, before anything opens.
    pub fn check(&self) -> BenchResult<()> {
        let bad = |s: String| Err(BenchError::Settings(s));
        match self.round_trips {
            Some(0) => return bad("--round-trips 0: the ping-pong needs at least 1 round trip".into()),
            Some(n) if n > MAX_ROUND_TRIPS => {
                return bad(format!("--round-trips {n}: at most {MAX_ROUND_TRIPS} (2^24)"));
            }
            _ => {}
        }
        match self.workgroups {
            Some(w) if w < 2 => {
                return bad(format!("--workgroups {w}: a chain needs at least 2 workgroups to hop between"));
            }
            Some(w) if w > MAX_WORKGROUPS => return bad(format!("--workgroups {w}: at most {MAX_WORKGROUPS} (2^20)")),
            _ => {}
        }
        match self.chained_size {
            Some(0) => return bad("--chained-size 0: the chained select needs at least 1 element".into()),
            Some(n) if n > MAX_CHAINED_SIZE => return bad(format!("--chained-size {n}: at most 2^31")),
            _ => {}
        }
        if self.reps == 0 {
            return bad("--reps must be at least 1".into());
        }
        Ok(())
    }

    fn resolve(&self, software: bool) -> BenchResult<Resolved> {
        self.check()?;
        let round_trips = self.round_trips.unwrap_or(if software { SOFTWARE_ROUND_TRIPS } else { ROUND_TRIPS });
        if software && round_trips > SOFTWARE_MAX_ROUND_TRIPS {
            return Err(BenchError::Settings(format!(
                "--round-trips {round_trips} on a software adapter: lavapipe ends an invocation's loops after \
                 65,535 iterations in all, so at most {SOFTWARE_MAX_ROUND_TRIPS} round trips leave room to poll"
            )));
        }
        Ok(Resolved {
            round_trips,
            workgroups: self.workgroups.unwrap_or(if software { SOFTWARE_WORKGROUPS } else { WORKGROUPS }),
            chained_size: self.chained_size.unwrap_or(if software { SOFTWARE_CHAINED_SIZE } else { CHAINED_SIZE }),
            reps: self.reps,
            warmup: self.warmup,
            seed: self.seed,
            software,
        })
    }
}

impl Resolved {
    /// Polls one invocation may spend in all.
    fn budget(&self, case: HopCase) -> u32 {
        match (case, self.software) {
            (HopCase::PingPong, true) => SOFTWARE_LOOPS - self.round_trips,
            (HopCase::PingPong, false) => GPU_SLACK.saturating_add(self.round_trips.saturating_mul(64)),
            (_, true) => SOFTWARE_LOOPS,
            (_, false) => GPU_SLACK,
        }
    }

    /// Workgroups, the count the kernel gets, hops and the detail column.
    fn shape(&self, case: HopCase) -> (u32, u32, u64, String) {
        match case {
            HopCase::PingPong => {
                let n = self.round_trips;
                (2, n, 2 * n as u64, format!("{n} round trips"))
            }
            _ => {
                let w = self.workgroups;
                (w, w, w as u64, format!("{w} workgroups"))
            }
        }
    }
}

/// Where the flags are, in bytes from the buffer's start: the same in both
/// kernels, whose words are 4 (WGSL) and 8 (CUDA) bytes. Keep in sync with
/// hop.wgsl's and hop.cu's constants.
mod layout {
    /// One flag per 128-byte line.
    pub const LINE: u64 = 128;
    pub const ERR: u64 = 0;
    pub const DONE: u64 = 128;
    pub const FLAGS: u64 = 512;
    /// The ping-pong's second flag, 1 KiB after the first.
    pub const PONG: u64 = FLAGS + 8 * LINE;

    pub fn flag(k: u64) -> u64 {
        FLAGS + k * LINE
    }

    /// Bytes a case's buffer needs.
    pub fn bytes(pingpong: bool, workgroups: u32) -> u64 {
        if pingpong { PONG + LINE } else { flag(workgroups as u64) }
    }
}

/// A run's outcome as its words tell it: the error code, the workgroups that
/// finished, and the last flag written.
struct Readout {
    err: u64,
    done: u64,
    last: u64,
}

impl Readout {
    /// From the buffer's bytes, words of `word` bytes.
    fn of(bytes: &[u8], word: usize, case: HopCase, workgroups: u32) -> Readout {
        let at = |offset: u64| {
            let i = offset as usize;
            let mut w = [0u8; 8];
            w[..word].copy_from_slice(&bytes[i..i + word]);
            u64::from_le_bytes(w)
        };
        let last = match case {
            HopCase::PingPong => at(layout::PONG),
            _ => at(layout::flag(workgroups as u64 - 1)),
        };
        Readout { err: at(layout::ERR), done: at(layout::DONE), last }
    }

    /// Ok when every wait saw its flag and every workgroup finished.
    fn check(&self, backend: &'static str, case: HopCase, r: &Resolved) -> BenchResult<()> {
        let (groups, count, _, _) = r.shape(case);
        let fail = |why: String| Err(BenchError::Hop { backend, case: case.name(), why });
        let budget = r.budget(case);
        match self.err {
            0 => {}
            1 => {
                return fail(format!(
                    "a wait spent its {budget} polls without seeing the flag it waited for: the workgroup that \
                     should publish it did not run beside the waiting one (this benchmark needs the GPU to run \
                     both at once); lower --round-trips or --workgroups, or try another adapter"
                ));
            }
            2 => {
                return fail(
                    "a wait loop ended before its bound without seeing its flag: the driver cut the loop short \
                     (lavapipe ends an invocation's loops after 65,535 iterations); lower --round-trips"
                        .into(),
                );
            }
            code => return fail(format!("the kernel reported an unknown error code {code}")),
        }
        let want_last = count as u64;
        if self.done != groups as u64 || self.last != want_last {
            return fail(format!(
                "{} of {groups} workgroups finished and the last flag reads {} (expected {want_last}): a loop was \
                 cut short (lavapipe ends an invocation's loops after 65,535 iterations); lower --round-trips or \
                 --workgroups",
                self.done, self.last
            ));
        }
        Ok(())
    }
}

/// Timed runs of one case: device and host times, ms.
#[derive(Default)]
struct Times {
    device: Vec<f64>,
    wall: Vec<f64>,
}

impl Times {
    fn push(&mut self, device: Duration, wall: Duration) {
        self.device.push(ms(device));
        self.wall.push(ms(wall));
    }

    fn row(mut self, backend: &str, device: &str, case: HopCase, hops: u64, clock: &str, detail: String) -> HopRow {
        let device_ms = median(&mut self.device);
        HopRow {
            backend: backend.into(),
            device: device.into(),
            case: case.name().into(),
            hops,
            one_way_ns: device_ms * 1e6 / hops.max(1) as f64,
            device_ms,
            wall_ms: median(&mut self.wall),
            clock: clock.into(),
            detail,
        }
    }
}

/// The library's `chained` select of `chained_size` 4-byte elements, half
/// kept, per tile of `tile` elements; its count is checked against the host's.
fn chained<B: Timed>(b: &B, r: &Resolved, backend: &'static str, tile: u64, clock: &str) -> BenchResult<HopRow> {
    let n = r.chained_size;
    let mut rng = fastrand::Rng::with_seed(r.seed);
    let host = input::<u32>(n as usize, &mut rng);
    let bound = threshold(0.5);
    let want = host.iter().filter(|x| (**x as u64) < bound).count() as u64;
    let data = b.upload(&host)?;
    drop(host);
    let mut out = b.alloc::<u32>(n)?;
    let pred = b.word_below::<u32>(bound);
    let mut times = Times::default();
    for rep in 0..r.warmup + r.reps {
        let start = Instant::now();
        let report = b.select(Algorithm::Chained, &data, Keep::Predicate(&*pred), &mut out)?;
        let span = report.span()?;
        let wall = start.elapsed();
        let got = report.count()?;
        if got != want {
            return Err(BenchError::Hop {
                backend,
                case: HopCase::Chained.name(),
                why: format!("the select kept {got} elements; the input has {want} below the bound"),
            });
        }
        if rep >= r.warmup {
            times.push(span, wall);
        }
    }
    let tiles = n.div_ceil(tile.max(1));
    let detail = format!("{n} 4-byte elements, 50 % kept, {tiles} tiles of {tile}");
    Ok(times.row(backend, &b.device_name(), HopCase::Chained, tiles, clock, detail))
}

/// Every case of the table, in order.
fn cases() -> impl Iterator<Item = HopCase> {
    std::iter::once(HopCase::PingPong).chain(Polling::ALL.map(HopCase::Chain)).chain([HopCase::Chained])
}

#[cfg(feature = "wgpu")]
pub use on_wgpu::{SHADER, about_wgpu, measure_wgpu};

#[cfg(feature = "wgpu")]
mod on_wgpu {
    use super::*;
    use crate::compaction::KeepMode;
    use crate::compaction::wgpu::runtime::{COMMON, NO_WORD, Params, Variant};
    use crate::compaction::wgpu::{Bind, Plan, WgpuBackend};
    use crate::wgpu_runtime::timer::Clock;
    use crate::wgpu_runtime::{Shader, wgsl_source};

    /// The hop in WGSL: its flags are `words` (binding 4 of common.wgsl).
    pub const SHADER: Shader = wgsl_source!("bench/hop.wgsl", headers: &[COMMON]);

    /// Invocations per workgroup: a subgroup on NVIDIA, so that 32 pollers are one.
    const WG: u32 = 32;

    /// The adapter, its subgroup sizes and the clock, for the table's head.
    pub fn about_wgpu(b: &WgpuBackend) -> String {
        let dev = b.device();
        let (lo, hi) = dev.subgroup_sizes;
        let subgroups = match (dev.subgroups, lo == hi) {
            (false, _) => "no subgroups".to_string(),
            (true, true) => format!("subgroups {lo} wide"),
            (true, false) => format!("subgroups {lo}-{hi} wide"),
        };
        let clock = if dev.timestamps { Clock::Timestamps } else { Clock::Host };
        format!("wgpu: {}; {subgroups}; clock: {}", b.name(), clock.name())
    }

    /// Every case on `b`, each row to `seen` as it is measured.
    pub fn measure_wgpu(b: &WgpuBackend, s: &HopSettings, seen: &mut dyn FnMut(&HopRow)) -> BenchResult<Vec<HopRow>> {
        let r = s.resolve(!b.device().is_hardware())?;
        let clock = if b.device().timestamps { "timestamp queries" } else { "host clock" };
        let mut rows = Vec::new();
        for case in cases() {
            let row = match case {
                HopCase::Chained => {
                    let t = &b.tuning.single_pass;
                    chained(b, &r, "wgpu", t.select_tile(b, 4)?, clock)?
                }
                _ => hop(b, &r, case, clock)?,
            };
            seen(&row);
            rows.push(row);
        }
        Ok(rows)
    }

    fn hop(b: &WgpuBackend, r: &Resolved, case: HopCase, clock: &str) -> BenchResult<HopRow> {
        let (groups, count, hops, detail) = r.shape(case);
        let (entry, constants) = match case {
            HopCase::Chain(p) => ("chain", vec![("WG", WG), ("POLLERS", p.pollers()), ("RMW", p.rmw() as u32)]),
            _ => ("pingpong", vec![("WG", WG)]),
        };
        // Workgroup scans through subgroups are not used: any adapter builds it.
        let v = Variant::new(4, KeepMode::Flags, None, false);
        let pipeline = b.pipeline(&SHADER, &v, entry, &constants)?;
        let bytes = layout::bytes(case == HopCase::PingPong, r.workgroups);
        let words = b.raw_buffer("the hop's flags", bytes)?;
        let params = Params { cap: count, len_word: NO_WORD, a: r.budget(case), ..Default::default() };
        let bind = Bind { words: Some(words.clone()), ..Default::default() };
        let mut times = Times::default();
        for rep in 0..r.warmup + r.reps {
            let mut plan = Plan::default();
            plan.stage(entry).clear(&words, 0, None);
            plan.dispatch(pipeline.clone(), params, bind.clone(), groups);
            let start = Instant::now();
            let span = b.run(plan)?.span().map_err(crate::compaction::Error::from)?;
            let wall = start.elapsed();
            let back = b.device().read(&words, 0, bytes, "reading the hop's flags");
            let back = back.map_err(crate::compaction::Error::from)?;
            Readout::of(&back, 4, case, r.workgroups).check("wgpu", case, r)?;
            if rep >= r.warmup {
                times.push(span, wall);
            }
        }
        Ok(times.row("wgpu", b.name(), case, hops, clock, detail))
    }
}

#[cfg(feature = "cuda")]
pub use on_cuda::{KERNEL, about_cuda, measure_cuda};

#[cfg(feature = "cuda")]
mod on_cuda {
    use cudarc::driver::{LaunchConfig, PushKernelArg};

    use super::*;
    use crate::compaction::Backend;
    use crate::compaction::cuda::CudaBackend;
    use crate::compaction::cuda::runtime::{Stages, TILE_STATE, driver_error};
    use crate::cuda_runtime::{Source, Spec, kernel_source};

    /// The hop in CUDA, on the single-pass kernels' relaxed loads and stores.
    pub const KERNEL: Source = kernel_source!("bench/hop.cu", headers: &[TILE_STATE]);

    /// Threads per block: one warp, so that 32 pollers are one.
    const BLOCK: u32 = 32;

    /// The device and the clock, for the table's head.
    pub fn about_cuda(b: &CudaBackend) -> String {
        let (major, minor) = b.info.compute_capability;
        format!("cuda: {} (sm_{major}{minor}, {} SMs); warps 32 wide; clock: CUDA events", b.info.name, b.info.sms)
    }

    /// Every case on `b`, each row to `seen` as it is measured.
    pub fn measure_cuda(b: &CudaBackend, s: &HopSettings, seen: &mut dyn FnMut(&HopRow)) -> BenchResult<Vec<HopRow>> {
        let r = s.resolve(false)?;
        let clock = "CUDA events";
        let mut rows = Vec::new();
        for case in cases() {
            let row = match case {
                HopCase::Chained => {
                    let tile = b.tuning.single_pass.shape(4, &b.info)?.tile(4);
                    chained(b, &r, "cuda", tile, clock)?
                }
                _ => hop(b, &r, case, clock)?,
            };
            seen(&row);
            rows.push(row);
        }
        Ok(rows)
    }

    fn hop(b: &CudaBackend, r: &Resolved, case: HopCase, clock: &str) -> BenchResult<HopRow> {
        let (groups, count, hops, detail) = r.shape(case);
        let (entry, rmw, pollers) = match case {
            HopCase::Chain(p) => ("chain", p.rmw(), p.pollers()),
            _ => ("pingpong", false, 1),
        };
        let spec = Spec::default().with(&[("REAP_HOP_RMW", rmw as u32)]);
        let f = b.kernels().function(&KERNEL, &spec, entry).map_err(crate::compaction::Error::from)?;
        let words = (layout::bytes(case == HopCase::PingPong, r.workgroups) / 8) as usize;
        let budget = r.budget(case);
        let cfg = LaunchConfig { grid_dim: (groups, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let mut times = Times::default();
        for rep in 0..r.warmup + r.reps {
            let buffer = b.upload(&vec![0u64; words])?;
            let ptr = buffer.ptr();
            let mut st = Stages::new(b.stream());
            let start = Instant::now();
            st.run(entry, || {
                let mut l = b.stream().launch_builder(&f);
                match case {
                    HopCase::PingPong => l.arg(&count).arg(&budget).arg(&ptr),
                    _ => l.arg(&count).arg(&budget).arg(&pollers).arg(&ptr),
                };
                // SAFETY: matches `pingpong(u32, u32, u64*)` / `chain(u32, u32, u32, u64*)`;
                // the buffer holds every word the kernel indexes for this count.
                unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching the hop benchmark"))
            })?;
            let span = st.span()?;
            let wall = start.elapsed();
            let back = b.download(&buffer)?;
            Readout::of(bytemuck::cast_slice(&back), 8, case, r.workgroups).check("cuda", case, r)?;
            if rep >= r.warmup {
                times.push(span, wall);
            }
        }
        Ok(times.row("cuda", &b.info.name, case, hops, clock, detail))
    }
}

/// hop.csv: every row.
pub fn csv(rows: &[HopRow]) -> std::result::Result<String, csv::Error> {
    let bytes = crate::report::csv_rows(rows.iter().cloned())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// hop.md: the devices, the table, and how to read it.
pub fn markdown(rows: &[HopRow], about: &[String], command: &str) -> String {
    let mut md = format!("# The inter-workgroup hop\n\n`{command}`\n\n");
    for a in about {
        md.push_str(&format!("- {a}\n"));
    }
    md.push_str(
        "\nOne-way ns is the device time divided by the hops: 2N for the ping-pong, W for a chain, the tiles \
         for reap's `chained` select (4-byte elements, half kept, tile = the tuning's block x items). The wall \
         clock runs from submission to completion on the host. Every wait is bounded; a run whose wait ran out \
         is an error, not a row.\n\n",
    );
    md.push_str("| backend | case | hops | one-way ns | device ms | wall ms | clock | run |\n");
    md.push_str("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n");
    for r in rows {
        md.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.4} | {:.4} | {} | {} |\n",
            r.backend, r.case, r.hops, r.one_way_ns, r.device_ms, r.wall_ms, r.clock, r.detail
        ));
    }
    md
}

#[cfg(test)]
mod tests;
