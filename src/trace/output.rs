//! What a render leaves behind: the image (PNG, or EXR for linear radiance),
//! its hash, the timings as JSON or CSV, and the summary table. Every file is
//! written to a temporary name and renamed, and output paths are checked
//! before rendering starts, so a bad path never costs a render.

use std::path::Path;

use crate::clocks::{gap_percent, gap_sentence, millions_per_s};
use crate::files::write_atomically;
pub use crate::files::{TimingsFormat, check_output, timings_format};
use crate::report::{Fixed, csv_rows, fixed, spaced, stage_means};

use crate::trace::tonemap::{self, Tone};
use crate::trace::{FrameStats, RenderSettings, TraceError, TraceResult};

fn fail(path: &Path, why: impl ToString) -> TraceError {
    crate::files::fail(path, why).into()
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
    /// The 8-wide BVH's (built at load beside the binary one, whichever `settings.bvh` walks).
    pub wide_nodes: usize,
    pub wide_depth: u32,
    pub wide_build_ms: f64,
    pub settings: &'a RenderSettings,
    pub image_hash: String,
    pub summary: Summary,
    pub frames: &'a [FrameStats],
}

/// Means over a render's frames, per sample (a frame of one sample per pixel;
/// a samples split's round counts as its samples).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    pub frames: usize,
    /// The stages summed, ms per sample (device events on a GPU).
    pub frame_ms: f64,
    /// The wall clock, ms per sample: from a frame's start until its results are complete.
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
    /// Mean time per stage name per sample (all bounces and levels summed), in first-seen order.
    pub stage_ms: Vec<(String, f64)>,
}

impl Summary {
    /// Means per sample: a samples split's round of k samples counts as k.
    pub fn of(frames: &[FrameStats]) -> Self {
        let n = frames.iter().map(|f| f.samples() as f64).sum::<f64>().max(1.0);
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
    let samples: u64 = frames.iter().map(|f| f.samples() as u64).sum();
    // A samples split's rounds hold a sample a rank: its means are per sample.
    let rounds = samples != s.frames as u64;
    let per = if rounds { "sample" } else { "frame" };
    let _ = match rounds {
        false => writeln!(out, "{} frames, means per frame:", s.frames),
        true => writeln!(
            out,
            "{} round{} of {samples} samples (one a rank), means per sample:",
            s.frames,
            if s.frames == 1 { "" } else { "s" }
        ),
    };
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
    let _ = writeln!(out, "{:<26} {:>10} {:>7}", "stage (all bounces)", format!("ms/{per}"), "share");
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

mod bench;
pub use bench::{BenchRow, bench_report, bench_table, hashes_agree, write_bench};

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
            ..Default::default()
        };
        vec![f.clone(), FrameStats { sample: 1, ..f }]
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

    /// A split by samples' round of k samples counts as k in the means: its times and rays per sample.
    #[test]
    fn a_round_of_samples_is_summed_per_sample() {
        let one = Summary::of(&frames());
        let rounds: Vec<FrameStats> =
            frames().into_iter().map(|f| FrameStats { samples: 2, rays: 2 * f.rays, ..f }).collect();
        let per_sample = Summary::of(&rounds);
        assert_eq!((one.frames, per_sample.frames), (2, 2));
        assert_eq!(per_sample.wall_ms, one.wall_ms / 2.0);
        assert_eq!(per_sample.frame_ms, one.frame_ms / 2.0);
        assert_eq!(per_sample.rays_per_frame, one.rays_per_frame);
        assert_eq!(per_sample.wall_mrays_per_s, 2.0 * one.wall_mrays_per_s);
        let table = summary_table(&per_sample, &rounds);
        assert!(table.starts_with("2 rounds of 4 samples (one a rank), means per sample:"), "{table}");
        assert!(summary_table(&one, &frames()).starts_with("2 frames, means per frame:"));
    }
}
