//! Mitsuba 3 as a peer: its Python package renders the exported scene through
//! `drive_mitsuba.py` (a real file, written to a temporary folder at run
//! time), which hands back raw f32 images and a JSON of timings. Where Python,
//! Mitsuba, the variant or the scene fails, the result is [`Skipped`] with the
//! reason and how to install, never an error: the bench goes on without it.
//!
//! The driver is a stranger's process: the caller runs it ([`render`]'s `run`)
//! time-limited, in a process group of its own that is killed on every exit
//! path, with its output kept as a bounded [`Tail`], never whole.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

const DRIVER: &str = include_str!("drive_mitsuba.py");

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

/// Why Mitsuba did not render: the exception or failure, with [`INSTALL`]
/// where the package itself is missing.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped(pub String);

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
    error: Option<String>,
    stage: Option<String>,
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

/// How many bytes of the driver's output (stdout and stderr) are kept for its
/// last words: a flood of output costs no more memory than this.
pub const TAIL_BYTES: usize = 64 << 10;

/// The last [`TAIL_BYTES`] bytes a process wrote.
#[derive(Clone, Debug, Default)]
pub struct Tail {
    kept: VecDeque<u8>,
}

impl Tail {
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
        let over = (self.kept.len() + bytes.len()).saturating_sub(TAIL_BYTES);
        self.kept.drain(..over);
        self.kept.extend(bytes);
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.kept.iter().copied().collect()
    }
}

/// How the driver's process ended, as the caller's runner saw it.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself (or by a signal not of reap's), with its last output.
    Exited { status: ExitStatus, output: Vec<u8> },
    /// It ran past the time limit and was killed.
    TimedOut { after: Duration, output: Vec<u8> },
    /// reap was asked to stop (SIGINT, SIGTERM) and killed it.
    Interrupted,
    /// It could not be started.
    NotStarted(std::io::Error),
}

/// The Python that runs the driver: $REAP_PYTHON, else `python3`.
pub fn python() -> PathBuf {
    std::env::var_os("REAP_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// Renders `scene` (a Mitsuba XML file) with `python` ([`python`]) at each
/// of `spp` with `variant`; the images must be `width` x `height`. `work` is
/// an empty folder for the driver's files. `run` runs the driver's command to
/// its end (bounded, time-limited: see the module's note).
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
    let script = work.join("drive_mitsuba.py");
    std::fs::write(&script, DRIVER).map_err(|e| skip(format!("cannot write {}: {e}", script.display())))?;
    let spp_list = spp.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args(["--scene".as_ref(), scene.as_os_str()])
        .args(["--variant", variant, "--spp", &spp_list, "--seed", &seed.to_string()])
        .args(["--out".as_ref(), work.as_os_str()]);
    let (status, output) = match run(&mut command) {
        Ended::Exited { status, output } => (status, output),
        Ended::TimedOut { after, output } => {
            return Err(skip(format!(
                "{} timed out after {} s and was killed (last output: {}); raise --peer-timeout, or lower \
                 --peer-spp or the image size",
                python.display(),
                after.as_secs(),
                tail(&output)
            )));
        }
        Ended::Interrupted => return Err(skip("interrupted by a signal; the peer was stopped".into())),
        Ended::NotStarted(e) => {
            return Err(skip(format!("cannot run {} ({e}): Mitsuba needs Python 3; {INSTALL}", python.display())));
        }
    };
    let json = work.join("mitsuba.json");
    // The driver writes a small JSON; anything larger is not its.
    let driven: Driven = match read_at_most(&json, 1 << 20) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| skip(format!("{}: {e}", json.display())))?,
        // No JSON: the interpreter itself died (a crash in Mitsuba's JIT, a signal): its last words say why.
        Err(_) => return Err(skip(format!("{} exited with {status}: {}", python.display(), tail(&output)))),
    };
    if let Some(error) = driven.error {
        let stage = driven.stage.unwrap_or_default();
        let hint = match stage.as_str() {
            "import" => format!("; {INSTALL}"),
            "variant" => {
                format!("; this Mitsuba build lacks the `{variant}` variant (pick another with --mitsuba-variant)")
            }
            _ => String::new(),
        };
        return Err(skip(format!("Mitsuba failed at {stage}: {error}{hint}")));
    }
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

/// The file at `path`, refused past `most` bytes (a stranger's file is never read whole blindly).
fn read_at_most(path: &Path, most: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(most + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > most {
        return Err(std::io::Error::other(format!("larger than the {most} bytes expected")));
    }
    Ok(bytes)
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

/// The longest line of a process's output quoted in a message.
const QUOTED_LINE: usize = 200;

/// A process's output in one line: its first line that names an error (a
/// crash's own message, before its dump), else its last lines; control
/// characters dropped and each line cut short, so a flood of bytes reads as
/// a short message.
fn tail(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let printable: String = l.chars().filter(|c| !c.is_control()).collect();
            let line = printable.trim();
            match line.char_indices().nth(QUOTED_LINE) {
                Some((at, _)) => format!("{}…", &line[..at]),
                None => line.to_string(),
            }
        })
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(error) = lines.iter().find(|l| l.to_ascii_lowercase().contains("error")) {
        return error.clone();
    }
    match lines.len() {
        0 if output.iter().all(u8::is_ascii_whitespace) => "no message".into(),
        0 => format!("{} bytes of no text", output.len()),
        n => lines[n.saturating_sub(3)..].join(" / "),
    }
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
    fn a_crash_is_told_by_its_error_line() {
        let dump = b"LLVM ERROR: Cannot select: fminimum\n  0x5: f32 = extract\n\nIn function: drjit_3429\n";
        assert_eq!(tail(dump), "LLVM ERROR: Cannot select: fminimum");
        assert_eq!(tail(b"a\nb\n\nc\nd\n"), "b / c / d");
        assert_eq!(tail(b""), "no message");
        assert_eq!(tail(&[0; 1000]), "1000 bytes of no text", "a flood of NULs is not quoted");
        let long = "x".repeat(10_000);
        assert_eq!(tail(long.as_bytes()).chars().count(), QUOTED_LINE + 1, "a long line is cut");
    }

    #[test]
    fn a_tail_keeps_only_the_last_bytes() {
        let mut t = Tail::default();
        for _ in 0..100 {
            t.push(&[b'a'; 4096]);
        }
        t.push(b"the end");
        let kept = t.bytes();
        assert_eq!(kept.len(), TAIL_BYTES);
        assert!(kept.ends_with(b"aathe end"));
        t.push(&vec![b'z'; 3 * TAIL_BYTES]);
        assert_eq!(t.bytes(), vec![b'z'; TAIL_BYTES]);
    }

    #[test]
    fn the_variant_follows_reaps_device() {
        assert_eq!(variant_for(true), "cuda_ad_rgb");
        assert_eq!(variant_for(false), "llvm_ad_rgb");
    }
}
