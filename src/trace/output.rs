//! What a render leaves behind: the image (PNG, or EXR for linear radiance),
//! its hash, the timings as JSON or CSV, and the summary table. Every file is
//! written to a temporary name and renamed, and output paths are checked
//! before rendering starts, so a bad path never costs a render.

use std::path::Path;

use crate::clocks::{gap_cell, gap_percent, gap_sentence, millions_per_s};
use crate::files::write_atomically;
pub use crate::files::{TimingsFormat, check_writable, timings_format};
use crate::report::{Fixed, csv_rows, fixed, report_head, spaced, stage_means};

use crate::trace::tonemap::{self, Tone};
use crate::trace::{FrameStats, RenderSettings, TraceError, TraceResult};

fn fail(path: &Path, why: impl ToString) -> TraceError {
    TraceError::Output { path: path.display().to_string(), why: why.to_string() }
}

/// The image's format, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Exr,
}

pub fn image_format(path: &Path) -> TraceResult<ImageFormat> {
    match path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).as_deref() {
        Some("png") => Ok(ImageFormat::Png),
        Some("exr") => Ok(ImageFormat::Exr),
        _ => Err(fail(path, "the image must end in .png or .exr")),
    }
}

/// Mean radiance per pixel (sum / samples), RGB.
pub fn mean(sum: &[[f32; 4]]) -> Vec<[f32; 3]> {
    sum.iter().map(|&p| tonemap::mean(p)).collect()
}

/// FNV-1a over the accumulated sums' bits: equal hashes mean bit-identical renders.
pub fn hash(sum: &[[f32; 4]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytemuck::cast_slice::<[f32; 4], u8>(sum) {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// 8-bit sRGB of the mean radiance after `tone` ([`Tone::CLAMP`] is what the
/// viewer shows: clamped, no tone curve, so a furnace stays exactly white).
pub fn to_rgb8(sum: &[[f32; 4]], width: u32, height: u32, tone: Tone) -> image::RgbImage {
    image::RgbImage::from_fn(width, height, |x, y| {
        let [r, g, b, _] = tonemap::tonemap_with(sum[(y * width + x) as usize], tone);
        image::Rgb([r, g, b])
    })
}

/// The image as PNG (8-bit sRGB after `tone`) or EXR (linear radiance: a
/// `tone` other than [`Tone::CLAMP`] is an error there, since it would be ignored).
pub fn write_image(path: &Path, sum: &[[f32; 4]], width: u32, height: u32, tone: Tone) -> TraceResult<()> {
    let format = image_format(path)?;
    if format == ImageFormat::Exr && tone != Tone::CLAMP {
        return Err(fail(path, "an EXR holds linear radiance: --exposure and --tonemap apply to PNG only"));
    }
    let mut bytes = std::io::Cursor::new(Vec::new());
    match format {
        ImageFormat::Png => to_rgb8(sum, width, height, tone)
            .write_to(&mut bytes, image::ImageFormat::Png)
            .map_err(|e| fail(path, e))?,
        ImageFormat::Exr => {
            let m = mean(sum);
            let img = image::Rgb32FImage::from_fn(width, height, |x, y| image::Rgb(m[(y * width + x) as usize]));
            image::DynamicImage::ImageRgb32F(img)
                .write_to(&mut bytes, image::ImageFormat::OpenExr)
                .map_err(|e| fail(path, e))?
        }
    }
    Ok(write_atomically(path, bytes.get_ref())?)
}

/// Everything a timings JSON holds.
#[derive(serde::Serialize)]
pub struct Timings<'a> {
    pub reap_commit: &'static str,
    pub backend: &'a str,
    pub device: &'a str,
    pub scene: &'a str,
    pub triangles: usize,
    pub bvh_nodes: usize,
    pub bvh_depth: u32,
    pub bvh_build_ms: f64,
    pub settings: &'a RenderSettings,
    pub image_hash: String,
    pub summary: Summary,
    pub frames: &'a [FrameStats],
}

/// Means over a render's frames.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    pub frames: usize,
    /// The stages summed, ms (device events on a GPU).
    pub frame_ms: f64,
    /// The wall clock, ms: from a frame's start until its results are complete.
    pub wall_ms: f64,
    /// How far the wall clock exceeds the summed stages, % of the latter.
    pub wall_gap_percent: Option<f64>,
    pub compaction_ms: f64,
    /// Compaction's part of the summed stages.
    pub compaction_share: f64,
    /// Rays per second by the summed stages.
    pub mrays_per_s: f64,
    /// Rays per second by the wall clock.
    pub wall_mrays_per_s: f64,
    pub rays_per_frame: f64,
    /// Mean time per stage name over frames (all bounces and levels summed), in first-seen order.
    pub stage_ms: Vec<(String, f64)>,
}

impl Summary {
    pub fn of(frames: &[FrameStats]) -> Self {
        let n = frames.len().max(1) as f64;
        let frame_ms = frames.iter().map(|f| f.frame_ms).sum::<f64>() / n;
        let wall_ms = frames.iter().map(|f| f.wall_ms).sum::<f64>() / n;
        let compaction_ms = frames.iter().map(|f| f.compaction_ms()).sum::<f64>() / n;
        let rays = frames.iter().map(|f| f.rays as f64).sum::<f64>() / n;
        let stage_ms = stage_means(frames.iter().map(|f| f.stages.iter().map(|(id, t)| (id.name, *t))), n);
        Summary {
            frames: frames.len(),
            frame_ms,
            wall_ms,
            wall_gap_percent: gap_percent(wall_ms, frame_ms),
            compaction_ms,
            compaction_share: if frame_ms > 0.0 { compaction_ms / frame_ms } else { 0.0 },
            mrays_per_s: millions_per_s(rays, frame_ms),
            wall_mrays_per_s: millions_per_s(rays, wall_ms),
            rays_per_frame: rays,
            stage_ms,
        }
    }
}

/// Writes the timings as JSON (everything) or CSV (one row per stage per frame).
pub fn write_timings(path: &Path, t: &Timings<'_>) -> TraceResult<()> {
    let bytes = match timings_format(path)? {
        TimingsFormat::Json => serde_json::to_vec_pretty(t).map_err(|e| fail(path, e))?,
        TimingsFormat::Csv => timings_csv(path, t.frames)?,
    };
    Ok(write_atomically(path, &bytes)?)
}

/// One line of a timings CSV: one stage of one frame, with the bounce's
/// queue counts and the level's frontier where the stage has them.
#[derive(Default, serde::Serialize)]
struct StageCsv<'a> {
    frame: u32,
    stage: &'a str,
    bounce: Option<u32>,
    level: Option<u32>,
    ms: Fixed,
    queue: Option<u64>,
    alive: Option<u64>,
    shadow_rays: Option<u64>,
    frontier: Option<u64>,
    frame_ms: Fixed,
    wall_ms: Fixed,
}

/// One row per stage per frame.
fn timings_csv(path: &Path, frames: &[FrameStats]) -> TraceResult<Vec<u8>> {
    let rows = frames.iter().flat_map(|f| {
        f.stages.iter().map(move |(id, ms)| {
            let b = id.bounce.map(|b| b as usize);
            let at = |v: &[u64]| b.and_then(|b| v.get(b)).copied();
            let sizes = if id.name.contains("shadow") { &f.shadow_frontier } else { &f.frontier };
            StageCsv {
                frame: f.sample,
                stage: id.name,
                bounce: id.bounce,
                level: id.level,
                ms: fixed(*ms, 6),
                queue: at(&f.queue),
                alive: at(&f.alive),
                shadow_rays: at(&f.shadow_rays),
                frontier: b.zip(id.level).and_then(|(b, l)| sizes.get(b)?.get(l as usize).copied()),
                frame_ms: fixed(f.frame_ms, 6),
                wall_ms: fixed(f.wall_ms, 6),
            }
        })
    });
    csv_rows(rows).map_err(|e| fail(path, e))
}

/// The summary table printed after a render.
pub fn summary_table(s: &Summary, frames: &[FrameStats]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{} frames, means per frame:", s.frames);
    let _ = writeln!(out, "{:<26} {:>10.3} ms {:>9.1} Mrays/s", "wall clock", s.wall_ms, s.wall_mrays_per_s);
    let _ = writeln!(
        out,
        "{:<26} {:>10.3} ms {:>9.1} Mrays/s  (device events on a GPU)",
        "summed stages", s.frame_ms, s.mrays_per_s
    );
    let _ = writeln!(out, "{}", gap_sentence(s.wall_ms, s.frame_ms));
    let _ = writeln!(
        out,
        "{:<26} {:>10.3} ms {:>9.1} % of the summed stages",
        "compaction",
        s.compaction_ms,
        100.0 * s.compaction_share
    );
    let _ = writeln!(out, "{:<26} {:>10} {:>7}", "stage (all bounces)", "ms/frame", "share");
    for (name, ms) in &s.stage_ms {
        let share = if s.frame_ms > 0.0 { 100.0 * ms / s.frame_ms } else { 0.0 };
        let _ = writeln!(out, "{name:<26} {ms:>10.3} {share:>6.1}%");
    }
    if let Some(f) = frames.last() {
        let _ = writeln!(out, "queue per bounce (last frame): {}", spaced(&f.queue));
        let _ = writeln!(out, "alive after each bounce:       {}", spaced(&f.alive));
        if let Some(levels) = f.frontier.first().filter(|l| !l.is_empty()) {
            let _ = writeln!(out, "frontier per level, bounce 0:  {}", spaced(levels));
        }
    }
    out
}

/// One configuration of `reap bench render`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    pub backend: String,
    pub scene: String,
    pub triangles: usize,
    pub bvh_depth: u32,
    pub width: u32,
    pub height: u32,
    pub spp: u32,
    pub max_bounces: u32,
    pub traversal: String,
    /// BVH levels one breadth-first expansion descends (the setting; unused by depth-first).
    pub descend: u32,
    /// The algorithm at both sites (paths and frontier), or `none`.
    pub compaction: String,
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
            bvh_depth: depth,
            width: s.width,
            height: s.height,
            spp: s.spp,
            max_bounces: s.max_bounces,
            traversal: s.traversal.name().into(),
            descend: s.descend,
            compaction: s.compact_paths.name().into(),
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
        BenchRow {
            frame_ms: m.frame_ms,
            wall_ms: m.wall_ms,
            compaction_ms: m.compaction_ms,
            compaction_share: m.compaction_share,
            mrays_per_s: m.mrays_per_s,
            wall_mrays_per_s: m.wall_mrays_per_s,
            rays_per_frame: m.rays_per_frame,
            stage_ms: m.stage_ms,
            image_hash: format!("{:016x}", hash(sum)),
            ..Self::base(backend, scene, triangles, depth, s)
        }
    }

    pub fn failed(backend: &str, scene: &str, triangles: usize, depth: u32, s: &RenderSettings, why: String) -> Self {
        BenchRow { error: Some(why), ..Self::base(backend, scene, triangles, depth, s) }
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

/// The plain-text table printed after `reap bench render`.
pub fn bench_table(rows: &[BenchRow]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{:<56} {:<19} {:<19}", "", "--- wall clock ---", "-- summed stages --");
    let _ = writeln!(
        out,
        "{:<14} {:<13} {:<27} {:>9} {:>9} {:>9} {:>9} {:>8} {:>10} {:>7}  image hash",
        "scene", "traversal", "compaction", "Mrays/s", "ms", "Mrays/s", "ms", "gap", "compact ms", "share"
    );
    for r in rows {
        match &r.error {
            Some(e) => {
                let _ = writeln!(out, "{:<14} {:<13} {:<27} did not run: {e}", r.scene, r.traversal, r.compaction);
            }
            None => {
                let _ = writeln!(
                    out,
                    "{:<14} {:<13} {:<27} {:>9.1} {:>9.3} {:>9.1} {:>9.3} {:>8} {:>10.3} {:>6.1}%  {}",
                    r.scene,
                    r.traversal,
                    r.compaction,
                    r.wall_mrays_per_s,
                    r.wall_ms,
                    r.mrays_per_s,
                    r.frame_ms,
                    gap_cell(r.wall_ms, r.frame_ms),
                    r.compaction_ms,
                    100.0 * r.compaction_share,
                    r.image_hash
                );
            }
        }
    }
    out
}

/// report.md of `reap bench render`: one table per scene, traversal modes side by side.
pub fn bench_report(rows: &[BenchRow], device: &str, command: &str) -> String {
    use std::fmt::Write;
    let mut s = report_head("render", device, command);
    let _ = writeln!(
        s,
        "Each configuration renders `spp` frames of one sample per pixel after one warm-up frame. Two clocks \
         per frame: the wall clock (host time from the frame's start until its results are complete) and the \
         stages' own times summed (device events on a GPU); Mrays/s is given by each, and \"gap\" is how far \
         the wall clock exceeds the summed stages (launch overhead, host work between stages, and the host \
         waiting for counts). Rays are path segments entering each bounce plus shadow rays. \"compaction\" is \
         the algorithm at both sites (the live-path queue after each bounce and the breadth-first frontier \
         after each level); `none` leaves dead items flagged in place. \"share\" is compaction's part of the \
         summed stages.\n"
    );
    let mut scenes: Vec<&str> = Vec::new();
    for r in rows {
        if !scenes.contains(&r.scene.as_str()) {
            scenes.push(&r.scene);
        }
    }
    for scene in scenes {
        let at: Vec<&BenchRow> = rows.iter().filter(|r| r.scene == scene).collect();
        let first = at[0];
        let _ = writeln!(
            s,
            "## {scene}: {} triangles, BVH depth {}, {}x{}, {} spp, {} bounces, breadth-first descends {} BVH \
             levels per expansion\n",
            first.triangles, first.bvh_depth, first.width, first.height, first.spp, first.max_bounces, first.descend
        );
        let _ = writeln!(
            s,
            "| traversal | compaction | Mrays/s (wall) | wall ms | Mrays/s (stages) | stages ms | gap | compaction ms \
             | share | image hash |"
        );
        let _ = writeln!(s, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
        for r in &at {
            match &r.error {
                Some(e) => {
                    let _ = writeln!(
                        s,
                        "| {} | `{}` | – | – | – | – | – | – | – | did not run: {e} |",
                        r.traversal, r.compaction
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "| {} | `{}` | **{:.1}** | {:.3} | {:.1} | {:.3} | {} | {:.3} | {:.1} % | `{}` |",
                        r.traversal,
                        r.compaction,
                        r.wall_mrays_per_s,
                        r.wall_ms,
                        r.mrays_per_s,
                        r.frame_ms,
                        gap_cell(r.wall_ms, r.frame_ms),
                        r.compaction_ms,
                        100.0 * r.compaction_share,
                        r.image_hash
                    );
                }
            }
        }
        for t in ["breadth-first", "depth-first"] {
            let ok: Vec<&&BenchRow> = at.iter().filter(|r| r.traversal == t && r.error.is_none()).collect();
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
                    "\n{t}: fastest with `{}` at {:.1} Mrays/s by wall clock ({:.1} by the summed stages: {}), \
                     compaction {:.1} % of the summed stages{vs}.",
                    b.compaction,
                    b.wall_mrays_per_s,
                    b.mrays_per_s,
                    gap_sentence(b.wall_ms, b.frame_ms),
                    100.0 * b.compaction_share
                );
            }
        }
        let ran: Vec<&&BenchRow> = at.iter().filter(|r| r.error.is_none()).collect();
        if !ran.is_empty() {
            let n = ran.len() as f64;
            let wall = ran.iter().map(|r| r.wall_ms).sum::<f64>() / n;
            let stages = ran.iter().map(|r| r.frame_ms).sum::<f64>() / n;
            let _ = writeln!(s, "\nClocks: over the configurations that ran, {}.", gap_sentence(wall, stages));
        }
        let _ = writeln!(s);
    }
    let agree = hashes_agree(rows);
    let _ = writeln!(
        s,
        "Image hashes: {}.",
        if agree {
            "every compaction choice and both traversal modes rendered a bit-identical image per scene"
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
    bvh_depth: u32,
    width: u32,
    height: u32,
    spp: u32,
    max_bounces: u32,
    traversal: &'a str,
    descend: u32,
    compaction: &'a str,
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

/// results.csv of `reap bench render`.
fn bench_csv(csv_path: &Path, rows: &[BenchRow]) -> TraceResult<Vec<u8>> {
    let rows = rows.iter().map(|r| BenchCsv {
        backend: &r.backend,
        scene: &r.scene,
        triangles: r.triangles,
        bvh_depth: r.bvh_depth,
        width: r.width,
        height: r.height,
        spp: r.spp,
        max_bounces: r.max_bounces,
        traversal: &r.traversal,
        descend: r.descend,
        compaction: &r.compaction,
        mrays_per_s: fixed(r.mrays_per_s, 3),
        frame_ms: fixed(r.frame_ms, 4),
        wall_mrays_per_s: fixed(r.wall_mrays_per_s, 3),
        wall_ms: fixed(r.wall_ms, 4),
        wall_gap_percent: gap_percent(r.wall_ms, r.frame_ms).map(|g| fixed(g, 2)),
        compaction_ms: fixed(r.compaction_ms, 4),
        compaction_share: fixed(r.compaction_share, 4),
        rays_per_frame: fixed(r.rays_per_frame, 0),
        image_hash: &r.image_hash,
        error: r.error.as_deref(),
    });
    csv_rows(rows).map_err(|e| fail(csv_path, e))
}

pub fn write_bench(dir: &Path, rows: &[BenchRow], report: &str) -> TraceResult<()> {
    let csv_path = dir.join("results.csv");
    let bytes = bench_csv(&csv_path, rows)?;
    write_atomically(&csv_path, &bytes)?;
    let json_path = dir.join("results.json");
    let json = serde_json::to_vec_pretty(rows).map_err(|e| fail(&json_path, e))?;
    write_atomically(&json_path, &json)?;
    Ok(write_atomically(&dir.join("report.md"), report.as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::StageId;

    fn frames() -> Vec<FrameStats> {
        let f = FrameStats {
            sample: 0,
            stages: vec![
                (StageId::frame("generate"), 0.25),
                (StageId { name: "expand", bounce: Some(0), level: Some(1) }, 1.0 / 3.0),
                (StageId { name: "shadow expand", bounce: Some(0), level: Some(0) }, 0.5),
                (StageId::bounce("shade", 1), 2.0),
                (StageId::bounce("shade", 7), 2.0),
            ],
            queue: vec![100, 50],
            alive: vec![50, 20],
            shadow_rays: vec![40, 10],
            frontier: vec![vec![1, 4]],
            shadow_frontier: vec![vec![3]],
            rays: 190,
            frame_ms: 5.083,
            wall_ms: 6.0,
        };
        vec![f.clone(), FrameStats { sample: 1, ..f }]
    }

    fn bench_rows() -> Vec<BenchRow> {
        let ok = BenchRow {
            backend: "cpu".into(),
            scene: "cornell".into(),
            triangles: 36,
            bvh_depth: 7,
            width: 64,
            height: 48,
            spp: 2,
            max_bounces: 4,
            traversal: "breadth-first".into(),
            descend: 2,
            compaction: "lookback".into(),
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
            frame_ms: 0.0,
            wall_ms: 0.0,
            error: Some("out of memory, frontier too large".into()),
            ..ok.clone()
        };
        vec![ok, failed]
    }

    /// The header, column order and number formats of a timings CSV, pinned.
    #[test]
    fn timings_csv_keeps_its_columns_and_formats() {
        let want = concat!(
            "frame,stage,bounce,level,ms,queue,alive,shadow_rays,frontier,frame_ms,wall_ms\n",
            "0,generate,,,0.250000,,,,,5.083000,6.000000\n",
            "0,expand,0,1,0.333333,100,50,40,4,5.083000,6.000000\n",
            "0,shadow expand,0,0,0.500000,100,50,40,3,5.083000,6.000000\n",
            "0,shade,1,,2.000000,50,20,10,,5.083000,6.000000\n",
            "0,shade,7,,2.000000,,,,,5.083000,6.000000\n",
            "1,generate,,,0.250000,,,,,5.083000,6.000000\n",
            "1,expand,0,1,0.333333,100,50,40,4,5.083000,6.000000\n",
            "1,shadow expand,0,0,0.500000,100,50,40,3,5.083000,6.000000\n",
            "1,shade,1,,2.000000,50,20,10,,5.083000,6.000000\n",
            "1,shade,7,,2.000000,,,,,5.083000,6.000000\n",
        );
        assert_eq!(String::from_utf8(timings_csv(Path::new("t.csv"), &frames()).unwrap()).unwrap(), want);
    }

    /// The same for `reap bench render`'s results.csv.
    #[test]
    fn bench_csv_keeps_its_columns_and_formats() {
        let want = concat!(
            "backend,scene,triangles,bvh_depth,width,height,spp,max_bounces,traversal,descend,compaction,mrays_per_s,frame_ms,wall_mrays_per_s,wall_ms,wall_gap_percent,compaction_ms,compaction_share,rays_per_frame,image_hash,error\n",
            "cpu,cornell,36,7,64,48,2,4,breadth-first,2,lookback,12.346,1.2346,10.000,1.5000,21.50,0.1000,0.0810,1234,00ff00ff00ff00ff,\n",
            "cpu,cornell,36,7,64,48,2,4,breadth-first,2,none,12.346,0.0000,10.000,0.0000,,0.1000,0.0810,1234,00ff00ff00ff00ff,\"out of memory, frontier too large\"\n",
        );
        assert_eq!(String::from_utf8(bench_csv(Path::new("t.csv"), &bench_rows()).unwrap()).unwrap(), want);
    }
}
