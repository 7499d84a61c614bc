//! Mitsuba 3 as a peer: its Python package renders the exported scene through
//! `drive_mitsuba.py` (a real file, written to a temporary folder at run
//! time), which hands back raw f32 images and a JSON of timings. Where Python,
//! Mitsuba, the variant or the scene fails, the result is [`Skipped`] with the
//! reason and how to install, never an error: the bench goes on without it
//! (the driver's process and its failures: [`super::driver`]).

use std::path::Path;
use std::process::Command;

use super::driver::{Driver, Ended, Skipped, read_at_most};

const DRIVER: Driver = Driver {
    peer: "Mitsuba",
    script: "drive_mitsuba.py",
    text: include_str!("drive_mitsuba.py"),
    report: "mitsuba.json",
    install: INSTALL,
    lighter: "--peer-spp or the image size",
};

/// How to get Mitsuba, for a skipped peer's row.
pub const INSTALL: &str = "install it with `python3 -m pip install mitsuba` (on a machine without a package \
     registry, carry the mitsuba and drjit wheels and pip-install them), or point $REAP_PYTHON at a Python that has it";

/// Mitsuba's variant on the device class reap runs on: its CUDA JIT beside
/// reap on CUDA, its LLVM (CPU) JIT otherwise.
pub fn variant_for(reap_on_cuda: bool) -> &'static str {
    match reap_on_cuda {
        true => "cuda_ad_rgb",
        false => "llvm_ad_rgb",
    }
}

/// One timed render of Mitsuba.
#[derive(Clone, Debug)]
pub struct PeerImage {
    pub spp: u32,
    /// Wall clock of the timed render (after a warm-up render of the same spp), seconds.
    pub wall_s: f64,
    /// Wall clock of the warm-up render, JIT compilation included, seconds.
    pub warmup_s: f64,
    /// Mean radiance, row 0 the top of the image, as reap's images.
    pub pixels: Vec<[f32; 3]>,
}

/// What Mitsuba rendered.
#[derive(Clone, Debug)]
pub struct MitsubaRun {
    pub version: String,
    pub variant: String,
    pub load_s: f64,
    pub images: Vec<PeerImage>,
}

/// mitsuba.json as the driver writes it.
#[derive(serde::Deserialize)]
struct Driven {
    #[serde(default)]
    mitsuba: String,
    #[serde(default)]
    variant: String,
    #[serde(default)]
    load_s: f64,
    #[serde(default)]
    checkpoints: Vec<DrivenImage>,
}

#[derive(serde::Deserialize)]
struct DrivenImage {
    spp: u32,
    wall_s: f64,
    warmup_s: f64,
    image: String,
    width: u32,
    height: u32,
}

/// Renders `scene` (a Mitsuba XML file) with `python` ([`super::driver::python`])
/// at each of `spp` with `variant`; the images must be `width` x `height`.
/// `work` is an empty folder for the driver's files. `run` runs the driver's
/// command to its end (bounded, time-limited: see [`super::driver`]).
#[allow(clippy::too_many_arguments)]
pub fn render(
    python: &Path,
    scene: &Path,
    variant: &str,
    spp: &[u32],
    seed: u32,
    (width, height): (u32, u32),
    work: &Path,
    run: impl FnOnce(&mut Command) -> Ended,
) -> Result<MitsubaRun, Skipped> {
    let skip = |why: String| Skipped(why);
    let spp_list = spp.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",");
    let mut args: Vec<std::ffi::OsString> = vec!["--scene".into(), scene.into()];
    args.extend(["--variant", variant, "--spp", &spp_list, "--seed", &seed.to_string()].map(Into::into));
    args.extend(["--out".into(), work.into()]);
    let hint = |stage: &str| match stage {
        "variant" => {
            format!("; this Mitsuba build lacks the `{variant}` variant (pick another with --mitsuba-variant)")
        }
        _ => String::new(),
    };
    // The driver writes a small JSON; anything larger is not its.
    let driven: Driven = DRIVER.run(python, work, &args, 1 << 20, hint, run)?;
    let mut images = Vec::new();
    for c in driven.checkpoints {
        if (c.width, c.height) != (width, height) {
            return Err(skip(format!(
                "Mitsuba rendered {}x{} where the scene asks for {width}x{height}: the exported film is wrong",
                c.width, c.height
            )));
        }
        let path = work.join(&c.image);
        let want = width as u64 * height as u64 * 12;
        let bytes = read_at_most(&path, want).map_err(|e| skip(format!("cannot read {}: {e}", path.display())))?;
        let pixels = rgb_f32(&bytes, width, height).map_err(|why| skip(format!("{}: {why}", path.display())))?;
        // No finite pixel cannot be scored: say so here rather than blame reap's reference later.
        if !pixels.iter().any(|p| p.iter().all(|v| v.is_finite())) {
            return Err(skip(format!(
                "Mitsuba's {}-spp image holds no finite pixel (every one is NaN or infinite): its render is \
                 broken, not comparable; check the exported scene with `reap scene export` and Mitsuba's own tools",
                c.spp
            )));
        }
        images.push(PeerImage { spp: c.spp, wall_s: c.wall_s, warmup_s: c.warmup_s, pixels });
    }
    Ok(MitsubaRun { version: driven.mitsuba, variant: driven.variant, load_s: driven.load_s, images })
}

/// Raw little-endian f32 RGB, `height` rows of `width` pixels, as pixels.
pub fn rgb_f32(bytes: &[u8], width: u32, height: u32) -> Result<Vec<[f32; 3]>, String> {
    let want = width as usize * height as usize * 12;
    if bytes.len() != want {
        return Err(format!("{} bytes where {width}x{height} RGB f32 is {want}", bytes.len()));
    }
    let f = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    Ok(bytes.chunks_exact(12).map(|p| [f(&p[0..4]), f(&p[4..8]), f(&p[8..12])]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_images_read_row_by_row_and_wrong_sizes_are_refused() {
        let values: Vec<f32> = (0..2 * 3 * 3).map(|v| v as f32 * 0.5).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let px = rgb_f32(&bytes, 3, 2).expect("six pixels");
        assert_eq!(px.len(), 6);
        assert_eq!(px[0], [0.0, 0.5, 1.0]);
        assert_eq!(px[5], [7.5, 8.0, 8.5]);
        assert!(rgb_f32(&bytes, 2, 2).is_err());
        assert!(rgb_f32(&bytes[1..], 3, 2).is_err());
    }

    #[test]
    fn a_missing_python_is_a_reason_not_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A path that cannot be an interpreter: the spawn fails, the peer is skipped with the install hint.
        let python = dir.path().join("no-such-python");
        let run = |c: &mut Command| match c.output() {
            Ok(o) => Ended::Exited { status: o.status, output: o.stderr },
            Err(e) => Ended::NotStarted(e),
        };
        let got = render(&python, Path::new("scene.xml"), "scalar_rgb", &[4], 0, (4, 4), dir.path(), run);
        let Err(Skipped(why)) = got else { panic!("a missing Python must skip the peer") };
        assert!(why.contains("pip install mitsuba"), "{why}");
    }

    #[test]
    fn the_variant_follows_reaps_device() {
        assert_eq!(variant_for(true), "cuda_ad_rgb");
        assert_eq!(variant_for(false), "llvm_ad_rgb");
    }
}
