//! What a render leaves behind: the image (PNG, or EXR for linear radiance),
//! its hash, the timings as JSON or CSV, and the summary table. Every file is
//! written to a temporary name and renamed, and output paths are checked
//! before rendering starts, so a bad path never costs a render.

use std::path::Path;

use crate::clocks::{gap_cell, gap_percent, gap_sentence, millions_per_s};
use crate::files::write_atomically;
pub use crate::files::{TimingsFormat, check_writable, timings_format};

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
        let mut stage_ms: Vec<(String, f64)> = Vec::new();
        for f in frames {
            for (id, t) in &f.stages {
                match stage_ms.iter_mut().find(|(s, _)| s == id.name) {
                    Some((_, v)) => *v += t / n,
                    None => stage_ms.push((id.name.to_string(), t / n)),
                }
            }
        }
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
        TimingsFormat::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let err = |e: csv::Error| fail(path, e);
            w.write_record([
                "frame",
                "stage",
                "bounce",
                "level",
                "ms",
                "queue",
                "alive",
                "shadow_rays",
                "frontier",
                "frame_ms",
                "wall_ms",
            ])
            .map_err(err)?;
            for f in t.frames {
                for (id, ms) in &f.stages {
                    let b = id.bounce.map(|b| b as usize);
                    let at = |v: &Vec<u64>| b.and_then(|b| v.get(b)).map(|x| x.to_string()).unwrap_or_default();
                    let frontier = match (b, id.level) {
                        (Some(b), Some(l)) => {
                            let sizes = if id.name.starts_with("shadow") || id.name.contains("shadow") {
                                &f.shadow_frontier
                            } else {
                                &f.frontier
                            };
                            sizes.get(b).and_then(|v| v.get(l as usize)).map(|x| x.to_string()).unwrap_or_default()
                        }
                        _ => String::new(),
                    };
                    w.write_record([
                        f.sample.to_string(),
                        id.name.to_string(),
                        id.bounce.map(|b| b.to_string()).unwrap_or_default(),
                        id.level.map(|l| l.to_string()).unwrap_or_default(),
                        format!("{ms:.6}"),
                        at(&f.queue),
                        at(&f.alive),
                        at(&f.shadow_rays),
                        frontier,
                        format!("{:.6}", f.frame_ms),
                        format!("{:.6}", f.wall_ms),
                    ])
                    .map_err(err)?;
                }
            }
            w.into_inner().map_err(|e| fail(path, e))?
        }
    };
    Ok(write_atomically(path, &bytes)?)
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
        let list = |v: &[u64]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ");
        let _ = writeln!(out, "queue per bounce (last frame): {}", list(&f.queue));
        let _ = writeln!(out, "alive after each bounce:       {}", list(&f.alive));
        if let Some(levels) = f.frontier.first().filter(|l| !l.is_empty()) {
            let _ = writeln!(out, "frontier per level, bounce 0:  {}", list(levels));
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
    let mut s = String::new();
    let _ = writeln!(s, "# reap bench render: {device}\n");
    let _ = writeln!(s, "Command: `{command}`\n");
    let _ = writeln!(s, "reap commit `{}`.\n", crate::build_info::GIT_COMMIT);
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

pub fn write_bench(dir: &Path, rows: &[BenchRow], report: &str) -> TraceResult<()> {
    let csv_path = dir.join("results.csv");
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| fail(&csv_path, e);
    w.write_record([
        "backend",
        "scene",
        "triangles",
        "bvh_depth",
        "width",
        "height",
        "spp",
        "max_bounces",
        "traversal",
        "descend",
        "compaction",
        "mrays_per_s",
        "frame_ms",
        "wall_mrays_per_s",
        "wall_ms",
        "wall_gap_percent",
        "compaction_ms",
        "compaction_share",
        "rays_per_frame",
        "image_hash",
        "error",
    ])
    .map_err(err)?;
    for r in rows {
        w.write_record([
            r.backend.clone(),
            r.scene.clone(),
            r.triangles.to_string(),
            r.bvh_depth.to_string(),
            r.width.to_string(),
            r.height.to_string(),
            r.spp.to_string(),
            r.max_bounces.to_string(),
            r.traversal.clone(),
            r.descend.to_string(),
            r.compaction.clone(),
            format!("{:.3}", r.mrays_per_s),
            format!("{:.4}", r.frame_ms),
            format!("{:.3}", r.wall_mrays_per_s),
            format!("{:.4}", r.wall_ms),
            gap_percent(r.wall_ms, r.frame_ms).map(|g| format!("{g:.2}")).unwrap_or_default(),
            format!("{:.4}", r.compaction_ms),
            format!("{:.4}", r.compaction_share),
            format!("{:.0}", r.rays_per_frame),
            r.image_hash.clone(),
            r.error.clone().unwrap_or_default(),
        ])
        .map_err(err)?;
    }
    let bytes = w.into_inner().map_err(|e| fail(&csv_path, e))?;
    write_atomically(&csv_path, &bytes)?;
    let json_path = dir.join("results.json");
    let json = serde_json::to_vec_pretty(rows).map_err(|e| fail(&json_path, e))?;
    write_atomically(&json_path, &json)?;
    Ok(write_atomically(&dir.join("report.md"), report.as_bytes())?)
}
