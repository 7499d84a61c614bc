//! What `reap bench render` leaves behind: one row per configuration, the
//! table printed after the run, report.md and results.csv / results.json.

use std::path::Path;

use super::{Summary, hash};
use crate::clocks::{gap_cell, gap_percent, gap_sentence, mean_gap_sentence};
use crate::report::{Fixed, first_seen, fixed, report_head, write_bench_files};
use crate::table::{self, Column, Mark, Shown, num};
use crate::trace::{FrameStats, RenderSettings, TraceResult};

/// One configuration of `reap bench render`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    pub backend: String,
    pub scene: String,
    pub triangles: usize,
    /// The BVH the row walked (`binary` or `wide`) and its depth.
    pub bvh: String,
    pub bvh_depth: u32,
    pub width: u32,
    pub height: u32,
    pub spp: u32,
    pub max_bounces: u32,
    pub traversal: String,
    /// BVH levels one breadth-first expansion descends (the setting; unused by depth-first and by
    /// the wide BVH, whose expansions descend one wide level).
    pub descend: u32,
    /// Wide breadth-first: the levels a step descends per tile (`--block-levels`); empty otherwise.
    pub block_levels: String,
    /// Breadth-first levels sorted by node before their expansion (`--group-levels`; 0 for depth-first).
    pub group_levels: u32,
    /// Breadth-first: levels the rays' frontier entered per bounce, and items per level (the
    /// frontier each expansion read: live items under compaction, slots under `none`); 0 for
    /// depth-first.
    pub levels_per_bounce: f64,
    pub items_per_level: f64,
    /// The algorithm at both sites (paths and frontier), or `none`.
    pub compaction: String,
    /// How the sites ran it: `fused` into the producers or a `separate`
    /// pass; empty for `none` or a row that did not run.
    pub site: String,
    /// How the measured frames reached the device (`replayed` CUDA graphs,
    /// `streamed` launches); empty on the CPU.
    pub graph: String,
    /// The stages summed, ms per frame (device events on a GPU).
    pub frame_ms: f64,
    /// The wall clock, ms per frame.
    pub wall_ms: f64,
    pub compaction_ms: f64,
    pub compaction_share: f64,
    /// Rays per second by the summed stages.
    pub mrays_per_s: f64,
    /// Rays per second by the wall clock.
    pub wall_mrays_per_s: f64,
    pub rays_per_frame: f64,
    /// Mean ms per frame of each stage name.
    pub stage_ms: Vec<(String, f64)>,
    pub image_hash: String,
    /// Why the configuration could not run (e.g. a `none` frontier that outgrew memory).
    pub error: Option<String>,
}

impl BenchRow {
    fn base(backend: &str, scene: &str, triangles: usize, depth: u32, s: &RenderSettings) -> Self {
        BenchRow {
            backend: backend.into(),
            scene: scene.into(),
            triangles,
            bvh: s.bvh.name().into(),
            bvh_depth: depth,
            width: s.width,
            height: s.height,
            spp: s.spp,
            max_bounces: s.max_bounces,
            traversal: s.traversal.name().into(),
            descend: s.descend,
            block_levels: match (s.bvh, s.traversal) {
                (crate::trace::BvhKind::Wide, crate::trace::Traversal::BreadthFirst) => s.block_levels.to_string(),
                _ => String::new(),
            },
            group_levels: if s.traversal == crate::trace::Traversal::BreadthFirst { s.group_levels } else { 0 },
            levels_per_bounce: 0.0,
            items_per_level: 0.0,
            compaction: s.compact_paths.name().into(),
            site: String::new(),
            graph: String::new(),
            frame_ms: 0.0,
            wall_ms: 0.0,
            compaction_ms: 0.0,
            compaction_share: 0.0,
            mrays_per_s: 0.0,
            wall_mrays_per_s: 0.0,
            rays_per_frame: 0.0,
            stage_ms: Vec::new(),
            image_hash: String::new(),
            error: None,
        }
    }

    pub fn measured(
        backend: &str,
        scene: &str,
        triangles: usize,
        depth: u32,
        s: &RenderSettings,
        frames: &[FrameStats],
        sum: &[[f32; 4]],
    ) -> Self {
        let m = Summary::of(frames);
        // The rays' breadth-first runs: every bounce of every frame that entered one.
        let runs: Vec<&Vec<u64>> = frames.iter().flat_map(|f| &f.frontier).filter(|r| !r.is_empty()).collect();
        let levels: usize = runs.iter().map(|r| r.len()).sum();
        let items: u64 = runs.iter().flat_map(|r| r.iter()).sum();
        BenchRow {
            levels_per_bounce: levels as f64 / runs.len().max(1) as f64,
            items_per_level: items as f64 / levels.max(1) as f64,
            frame_ms: m.frame_ms,
            wall_ms: m.wall_ms,
            compaction_ms: m.compaction_ms,
            compaction_share: m.compaction_share,
            mrays_per_s: m.mrays_per_s,
            wall_mrays_per_s: m.wall_mrays_per_s,
            rays_per_frame: m.rays_per_frame,
            stage_ms: m.stage_ms,
            image_hash: format!("{:016x}", hash(sum)),
            site: frames
                .first()
                .and_then(|f| f.paths_site.or(f.frontier_site))
                .map_or(String::new(), |p| p.name().into()),
            graph: crate::replay::FramePath::summary(frames.iter().map(|f| f.graph)),
            ..Self::base(backend, scene, triangles, depth, s)
        }
    }

    pub fn failed(backend: &str, scene: &str, triangles: usize, depth: u32, s: &RenderSettings, why: String) -> Self {
        BenchRow { error: Some(why), ..Self::base(backend, scene, triangles, depth, s) }
    }

    /// This row's line of results.csv: its numbers at fixed digits.
    fn csv_line(&self) -> BenchCsv<'_> {
        BenchCsv {
            backend: &self.backend,
            scene: &self.scene,
            triangles: self.triangles,
            bvh: &self.bvh,
            bvh_depth: self.bvh_depth,
            width: self.width,
            height: self.height,
            spp: self.spp,
            max_bounces: self.max_bounces,
            traversal: &self.traversal,
            descend: self.descend,
            block_levels: &self.block_levels,
            group_levels: self.group_levels,
            levels_per_bounce: fixed(self.levels_per_bounce, 2),
            items_per_level: fixed(self.items_per_level, 0),
            compaction: &self.compaction,
            site: &self.site,
            graph: &self.graph,
            mrays_per_s: fixed(self.mrays_per_s, 3),
            frame_ms: fixed(self.frame_ms, 4),
            wall_mrays_per_s: fixed(self.wall_mrays_per_s, 3),
            wall_ms: fixed(self.wall_ms, 4),
            wall_gap_percent: gap_percent(self.wall_ms, self.frame_ms).map(|g| fixed(g, 2)),
            compaction_ms: fixed(self.compaction_ms, 4),
            compaction_share: fixed(self.compaction_share, 4),
            rays_per_frame: fixed(self.rays_per_frame, 0),
            image_hash: &self.image_hash,
            error: self.error.as_deref(),
        }
    }
}

/// Whether every measured configuration of a (backend, scene, spp) rendered the same image.
pub fn hashes_agree(rows: &[BenchRow]) -> bool {
    rows.iter().filter(|r| r.error.is_none()).all(|r| {
        rows.iter()
            .filter(|o| o.error.is_none() && o.backend == r.backend && o.scene == r.scene && o.spp == r.spp)
            .all(|o| o.image_hash == r.image_hash)
    })
}

/// The columns of `reap bench render`'s tables, console and report.md.
fn columns() -> Vec<Column<BenchRow>> {
    type C = Column<BenchRow>;
    vec![
        // report.md names the scene in each section's heading.
        C::key("scene", 14, |r| r.scene.clone()).only(Shown::Console),
        C::key("bvh", 6, |r| r.bvh.clone()),
        C::key("traversal", 13, |r| r.traversal.clone()),
        C::key("block", 5, |r| r.block_levels.clone()).reported_as("block levels"),
        C::key("grouped", 7, |r| if r.group_levels > 0 { format!("1-{}", r.group_levels) } else { String::new() })
            .reported_as("grouped levels"),
        table::compaction_column(|r| r.compaction.clone()),
        C::key("site", 9, |r| r.site.clone()),
        C::key("graph", 9, |r| r.graph.clone()),
        C::value("Mrays/s", 9, |r| num(r.wall_mrays_per_s, 1)).reported_as("Mrays/s (wall)").marked(Mark::Bold),
        C::value("ms", 9, |r| num(r.wall_ms, 3)).reported_as("wall ms"),
        C::value("Mrays/s", 9, |r| num(r.mrays_per_s, 1)).reported_as("Mrays/s (stages)"),
        C::value("ms", 9, |r| num(r.frame_ms, 3)).reported_as("stages ms"),
        C::value("gap", 8, |r| gap_cell(r.wall_ms, r.frame_ms)),
        C::value("compact ms", 10, |r| num(r.compaction_ms, 3)).reported_as("compaction ms"),
        C::value("share", 7, |r| num(100.0 * r.compaction_share, 1)).marked(Mark::Percent),
        C::value("levels", 6, |r| level_cell(r.levels_per_bounce, 1)).reported_as("levels/bounce"),
        C::value("items/lvl", 9, |r| level_cell(r.items_per_level, 0)).reported_as("items/level"),
        C::value("image hash", 0, |r| r.image_hash.clone()).left().after_gap(2).marked(Mark::Code),
    ]
}

/// A breadth-first statistic, blank for depth-first rows.
fn level_cell(v: f64, decimals: usize) -> String {
    if v > 0.0 { num(v, decimals) } else { String::new() }
}

fn failed(r: &BenchRow) -> Option<String> {
    table::did_not_run(&r.error)
}

/// The plain-text table printed after `reap bench render`.
pub fn bench_table(rows: &[BenchRow]) -> String {
    // Over the two clocks' pairs of columns.
    let over = format!("{:<66} {:<19} {:<19}\n", "", "--- wall clock ---", "-- summed stages --");
    over + &table::console(&columns(), rows, failed)
}

/// report.md of `reap bench render`: one table per scene, traversal modes side by side.
pub fn bench_report(rows: &[BenchRow], device: &str, command: &str) -> String {
    use std::fmt::Write;
    let mut s = report_head("render", device, command);
    let _ = writeln!(
        s,
        "Each configuration renders `spp` frames of one sample per pixel after two warm-up frames (the first \
         compiles and allocates, the second records the frame's CUDA graph; a split over several GPUs renders \
         more, at most six, until its bands stop moving, and one to record the graph again). Two clocks \
         per frame: the wall clock (host time from the frame's start until its results are complete) and the \
         stages' own times summed (device events on a GPU); Mrays/s is given by each, and \"gap\" is how far \
         the wall clock exceeds the summed stages (launch overhead, host work between stages, and the host \
         waiting for counts). Rays are path segments entering each bounce plus shadow rays. \"compaction\" is \
         the algorithm at both sites (the live-path queue after each bounce and the breadth-first frontier \
         after each level); `none` leaves dead items flagged in place. \"site\" says how it ran: `fused` into \
         the kernels that produce the items (shading, the frontier's init and expansion), which then write only \
         live items, or as a `separate` pass over the slots they wrote, dead ones included. \"share\" is the \
         separate compaction passes' part of the summed stages (a fused site has none). \"graph\" says how the \
         measured frames reached a GPU: `replayed`, one CUDA graph a frame recorded from the frame's launches \
         (per-stage times from its event nodes), or `streamed`, every launch enqueued by the host. A split \
         by samples (backend `… samples`) renders rounds of one whole frame a GPU, each its own sample, warmed \
         up by two rounds; each GPU then adds every GPU's sample of its own band of the image in sample order \
         (stage \"gather samples\", by the host's clock); its times are per sample (a round's over its \
         samples), and its summed stages are the slowest GPU's plus the gather.\n"
    );
    for scene in first_seen(rows.iter().map(|r| r.scene.as_str())) {
        let at: Vec<&BenchRow> = rows.iter().filter(|r| r.scene == scene).collect();
        let first = at[0];
        let depths: Vec<String> = first_seen(at.iter().map(|r| r.bvh.as_str()))
            .into_iter()
            .filter_map(|b| at.iter().find(|r| r.bvh == b).map(|r| format!("{} {b}", r.bvh_depth)))
            .collect();
        let _ = writeln!(
            s,
            "## {scene}: {} triangles, BVH depth {}, {}x{}, {} spp, {} bounces, breadth-first descends {} binary \
             BVH levels or one wide level per expansion\n",
            first.triangles,
            depths.join(", "),
            first.width,
            first.height,
            first.spp,
            first.max_bounces,
            first.descend
        );
        s += &table::markdown(&columns(), at.iter().copied(), failed);
        let kinds = first_seen(at.iter().map(|r| r.bvh.as_str()));
        // The fastest compaction choice of a (BVH, traversal) by the wall clock: what a user waits for.
        let fastest = |bvh: &str, t: &str| {
            at.iter()
                .filter(|r| r.bvh == bvh && r.traversal == t && r.error.is_none() && r.compaction != "none")
                .max_by(|a, b| a.wall_mrays_per_s.total_cmp(&b.wall_mrays_per_s))
                .copied()
        };
        for (bvh, t) in kinds.iter().flat_map(|&b| ["breadth-first", "depth-first"].map(|t| (b, t))) {
            let ok: Vec<&&BenchRow> =
                at.iter().filter(|r| r.bvh == bvh && r.traversal == t && r.error.is_none()).collect();
            let t = format!("{t} ({bvh} BVH)");
            // Ranked by the wall clock: what a user of the tracer waits for.
            let best = ok
                .iter()
                .filter(|r| r.compaction != "none")
                .max_by(|a, b| a.wall_mrays_per_s.total_cmp(&b.wall_mrays_per_s));
            let none = ok.iter().find(|r| r.compaction == "none");
            if let Some(b) = best {
                let vs = none.map_or(String::new(), |n| {
                    format!(
                        ", {:.2}x the `none` baseline ({:.1} Mrays/s)",
                        b.wall_mrays_per_s / n.wall_mrays_per_s.max(1e-9),
                        n.wall_mrays_per_s
                    )
                });
                let _ = writeln!(
                    s,
                    "\n{t}: fastest with `{}`{} at {:.1} Mrays/s by wall clock ({:.1} by the summed stages: {}), \
                     separate compaction {:.1} % of the summed stages{vs}.",
                    b.compaction,
                    if b.site.is_empty() { String::new() } else { format!(" ({})", b.site) },
                    b.wall_mrays_per_s,
                    b.mrays_per_s,
                    gap_sentence(b.wall_ms, b.frame_ms),
                    100.0 * b.compaction_share
                );
            }
            // What fusion is worth, per algorithm that ran both ways.
            for f in ok.iter().filter(|r| r.site == "fused") {
                if let Some(sep) = ok.iter().find(|r| r.site == "separate" && r.compaction == f.compaction) {
                    let _ = writeln!(
                        s,
                        "\n{t}, `{}`: fused {:.1} Mrays/s against separate {:.1} by wall clock ({:.2}x; summed \
                         stages {:.3} against {:.3} ms).",
                        f.compaction,
                        f.wall_mrays_per_s,
                        sep.wall_mrays_per_s,
                        f.wall_mrays_per_s / sep.wall_mrays_per_s.max(1e-9),
                        f.frame_ms,
                        sep.frame_ms
                    );
                }
            }
        }
        // Breadth-first against depth-first on each BVH (issue 47's ratio), per wide block levels.
        for &bvh in &kinds {
            let Some(df) = fastest(bvh, "depth-first") else { continue };
            let levels = first_seen(
                at.iter().filter(|r| r.bvh == bvh && r.traversal == "breadth-first").map(|r| r.block_levels.as_str()),
            );
            let ratios: Vec<String> = levels
                .iter()
                .filter_map(|&k| {
                    let best = at
                        .iter()
                        .filter(|r| r.bvh == bvh && r.traversal == "breadth-first" && r.block_levels == k)
                        .filter(|r| r.error.is_none() && r.compaction != "none")
                        .max_by(|a, b| a.wall_mrays_per_s.total_cmp(&b.wall_mrays_per_s))?;
                    let ratio = best.wall_mrays_per_s / df.wall_mrays_per_s.max(1e-9);
                    let at_levels = if k.is_empty() { String::new() } else { format!(" at {k} block levels") };
                    Some(format!("{ratio:.2}x{at_levels} ({:.1} Mrays/s)", best.wall_mrays_per_s))
                })
                .collect();
            if !ratios.is_empty() {
                let _ = writeln!(
                    s,
                    "
Breadth-first against depth-first on the {bvh} BVH, fastest of each by wall clock: {} \
                     against {:.1} Mrays/s.",
                    ratios.join(", "),
                    df.wall_mrays_per_s
                );
            }
        }
        // The BVH kinds against each other, and breadth-first against depth-first on each.
        if let (Some(wd), Some(bd)) = (fastest("wide", "depth-first"), fastest("binary", "depth-first")) {
            let bf = fastest("wide", "breadth-first").map_or(String::new(), |wb| {
                format!(
                    "; breadth-first on the wide BVH {:.1} Mrays/s, {:.2}x depth-first on it",
                    wb.wall_mrays_per_s,
                    wb.wall_mrays_per_s / wd.wall_mrays_per_s.max(1e-9)
                )
            });
            let bb = fastest("binary", "breadth-first").map_or(String::new(), |b| {
                format!(" (binary: {:.2}x)", b.wall_mrays_per_s / bd.wall_mrays_per_s.max(1e-9))
            });
            let _ = writeln!(
                s,
                "\nWide against binary: depth-first {:.1} against {:.1} Mrays/s by wall clock ({:.2}x){bf}{bb}.",
                wd.wall_mrays_per_s,
                bd.wall_mrays_per_s,
                wd.wall_mrays_per_s / bd.wall_mrays_per_s.max(1e-9)
            );
        }
        if let Some(clocks) =
            mean_gap_sentence(at.iter().filter(|r| r.error.is_none()).map(|r| (r.wall_ms, r.frame_ms)))
        {
            let _ = writeln!(s, "\nClocks: {clocks}.");
        }
        let _ = writeln!(s);
    }
    let agree = hashes_agree(rows);
    let _ = writeln!(
        s,
        "Image hashes: {}.",
        if agree {
            "every configuration that ran (compaction choice, traversal mode, BVH kind) rendered a bit-identical \
             image per scene"
        } else {
            "**some configurations differ** (see the hash column)"
        }
    );
    s
}

/// One line of `reap bench render`'s results.csv.
#[derive(Default, serde::Serialize)]
struct BenchCsv<'a> {
    backend: &'a str,
    scene: &'a str,
    triangles: usize,
    bvh: &'a str,
    bvh_depth: u32,
    width: u32,
    height: u32,
    spp: u32,
    max_bounces: u32,
    traversal: &'a str,
    descend: u32,
    block_levels: &'a str,
    group_levels: u32,
    levels_per_bounce: Fixed,
    items_per_level: Fixed,
    compaction: &'a str,
    site: &'a str,
    graph: &'a str,
    mrays_per_s: Fixed,
    frame_ms: Fixed,
    wall_mrays_per_s: Fixed,
    wall_ms: Fixed,
    wall_gap_percent: Option<Fixed>,
    compaction_ms: Fixed,
    compaction_share: Fixed,
    rays_per_frame: Fixed,
    image_hash: &'a str,
    error: Option<&'a str>,
}

/// Writes DIR/results.csv, results.json and report.md.
pub fn write_bench(dir: &Path, rows: &[BenchRow], report: &str) -> TraceResult<()> {
    Ok(write_bench_files(dir, rows.iter().map(BenchRow::csv_line), &rows, report)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::csv_rows;

    fn bench_rows() -> Vec<BenchRow> {
        let ok = BenchRow {
            backend: "cpu".into(),
            scene: "cornell".into(),
            triangles: 36,
            bvh: "wide".into(),
            bvh_depth: 7,
            width: 64,
            height: 48,
            spp: 2,
            max_bounces: 4,
            traversal: "breadth-first".into(),
            descend: 2,
            block_levels: "all".into(),
            group_levels: 2,
            levels_per_bounce: 3.25,
            items_per_level: 1234.4,
            compaction: "lookback".into(),
            site: "fused".into(),
            graph: "replayed".into(),
            frame_ms: 1.234_56,
            wall_ms: 1.5,
            compaction_ms: 0.1,
            compaction_share: 0.081,
            mrays_per_s: 12.345_6,
            wall_mrays_per_s: 10.0,
            rays_per_frame: 1234.5,
            stage_ms: vec![("shade".into(), 0.5)],
            image_hash: "00ff00ff00ff00ff".into(),
            error: None,
        };
        let failed = BenchRow {
            compaction: "none".into(),
            site: String::new(),
            graph: String::new(),
            frame_ms: 0.0,
            wall_ms: 0.0,
            error: Some("out of memory, frontier too large".into()),
            ..ok.clone()
        };
        vec![ok, failed]
    }

    /// The report puts breadth-first against depth-first on each BVH, one ratio per block levels.
    #[test]
    fn the_report_gives_breadth_first_against_depth_first_per_block_levels() {
        let bf = bench_rows().remove(0);
        let two = BenchRow { block_levels: "2".into(), wall_mrays_per_s: 5.0, ..bf.clone() };
        let df = BenchRow {
            traversal: "depth-first".into(),
            block_levels: String::new(),
            wall_mrays_per_s: 20.0,
            ..bf.clone()
        };
        let report = bench_report(&[bf, two, df], "a CPU", "reap bench render");
        let want = "Breadth-first against depth-first on the wide BVH, fastest of each by wall clock: 0.50x at \
                    all block levels (10.0 Mrays/s), 0.25x at 2 block levels (5.0 Mrays/s) against 20.0 Mrays/s.";
        assert!(report.contains(want), "{report}");
    }

    /// The same for `reap bench render`'s results.csv.
    #[test]
    fn bench_csv_keeps_its_columns_and_formats() {
        let want = concat!(
            "backend,scene,triangles,bvh,bvh_depth,width,height,spp,max_bounces,traversal,descend,block_levels,group_levels,levels_per_bounce,items_per_level,compaction,site,graph,mrays_per_s,frame_ms,wall_mrays_per_s,wall_ms,wall_gap_percent,compaction_ms,compaction_share,rays_per_frame,image_hash,error\n",
            "cpu,cornell,36,wide,7,64,48,2,4,breadth-first,2,all,2,3.25,1234,lookback,fused,replayed,12.346,1.2346,10.000,1.5000,21.50,0.1000,0.0810,1234,00ff00ff00ff00ff,\n",
            "cpu,cornell,36,wide,7,64,48,2,4,breadth-first,2,all,2,3.25,1234,none,,,12.346,0.0000,10.000,0.0000,,0.1000,0.0810,1234,00ff00ff00ff00ff,\"out of memory, frontier too large\"\n",
        );
        assert_eq!(String::from_utf8(csv_rows(bench_rows().iter().map(BenchRow::csv_line)).unwrap()).unwrap(), want);
    }
}
