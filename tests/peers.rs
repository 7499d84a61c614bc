//! `reap bench render --peers mitsuba` and Mitsuba 3 against reap, end to end.
//!
//! Where Mitsuba's Python package is importable ($REAP_PYTHON or python3), the
//! exported Cornell box renders in Mitsuba to reap's mean radiance within 1 %
//! per channel, at 1 and 8 bounces; elsewhere those tests print why they
//! skipped (REAP_REQUIRE_MITSUBA=1 makes the skip a failure). Mitsuba's variant
//! is cuda_ad_rgb where reap's CUDA backend runs, llvm_ad_rgb otherwise, or
//! $REAP_MITSUBA_VARIANT. Without Mitsuba the bench still writes its peer
//! section, saying why the peer was skipped, with an unchanged exit code.

mod binary;

use std::path::{Path, PathBuf};
use std::process::Command;

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("peers", name)
}

/// `None` where Mitsuba imports, else why not; a skip fails under REAP_REQUIRE_MITSUBA=1.
fn mitsuba_missing() -> Option<String> {
    binary::peer_missing("mitsuba, drjit", "Mitsuba", "python3 -m pip install mitsuba", "REAP_REQUIRE_MITSUBA")
}

/// Whether reap's CUDA backend renders here (else the CPU backend, which renders the same bits).
fn cuda_works(dir: &Path) -> bool {
    let out = reap()
        .args(["render", "--backend", "cuda", "--width", "8", "--height", "8", "--spp", "1", "--out"])
        .arg(dir.join("probe.exr"))
        .output()
        .expect("run reap");
    out.status.success()
}

fn variant(cuda: bool) -> String {
    std::env::var("REAP_MITSUBA_VARIANT").unwrap_or_else(|_| if cuda { "cuda_ad_rgb" } else { "llvm_ad_rgb" }.into())
}

fn mean(pixels: impl Iterator<Item = [f32; 3]>) -> [f64; 3] {
    let (mut sum, mut n) = ([0.0f64; 3], 0.0);
    for p in pixels {
        for c in 0..3 {
            sum[c] += p[c] as f64;
        }
        n += 1.0;
    }
    sum.map(|s| s / n)
}

/// reap's and Mitsuba's mean radiance of the exported Cornell box at `bounces`.
fn means(dir: &Path, bounces: u32, cuda: bool) -> ([f64; 3], [f64; 3]) {
    // 256x256 at 1024 spp on a GPU; the CPU backend (no GPU here) takes a smaller image with the same
    // sample count, which bounds the mean's noise well under the 1 % tested.
    let (w, h, spp) = if cuda { (256, 256, 1024) } else { (64, 64, 1024) };
    let size = |c: &mut Command| {
        let args = ["--width", &w.to_string(), "--height", &h.to_string(), "--spp", &spp.to_string()].map(String::from);
        c.args(args).args(["--max-bounces", &bounces.to_string()]);
    };
    let export = dir.join(format!("export{bounces}"));
    let mut cmd = reap();
    cmd.args(["scene", "export", "--scene", "cornell", "--format", "mitsuba", "--out"]).arg(&export);
    size(&mut cmd);
    let out = cmd.output().expect("run reap scene export");
    assert!(out.status.success(), "reap scene export failed:\n{}", String::from_utf8_lossy(&out.stderr));

    let work = dir.join(format!("mitsuba{bounces}"));
    std::fs::create_dir_all(&work).expect("work folder");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bench/peers/drive_mitsuba.py");
    let out = Command::new(binary::python())
        .arg(driver)
        .arg("--scene")
        .arg(export.join("scene.xml"))
        .args(["--variant", &variant(cuda), "--spp", &spp.to_string(), "--seed", "7", "--out"])
        .arg(&work)
        .output()
        .expect("run the Mitsuba driver");
    let json = std::fs::read_to_string(work.join("mitsuba.json")).unwrap_or_else(|_| {
        panic!("the Mitsuba driver wrote no mitsuba.json:\n{}", String::from_utf8_lossy(&out.stderr))
    });
    let doc: serde_json::Value = serde_json::from_str(&json).expect("mitsuba.json");
    assert!(doc["error"].is_null(), "Mitsuba failed: {doc}");
    let raw = std::fs::read(work.join(format!("mitsuba_{spp}.f32"))).expect("Mitsuba's image");
    assert_eq!(raw.len(), (w * h * 12) as usize, "Mitsuba's image is {w}x{h} RGB f32");
    let f = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let mitsuba = mean(raw.chunks_exact(12).map(|p| [f(&p[0..4]), f(&p[4..8]), f(&p[8..12])]));

    let exr = dir.join(format!("reap{bounces}.exr"));
    let mut cmd = reap();
    cmd.args(["render", "--scene", "cornell", "--backend", if cuda { "cuda" } else { "cpu" }, "--out"]).arg(&exr);
    size(&mut cmd);
    let out = cmd.output().expect("run reap render");
    assert!(out.status.success(), "reap render failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let img = image::open(&exr).expect("reap's EXR").to_rgb32f();
    (mean(img.pixels().map(|p| p.0)), mitsuba)
}

fn agrees_at(bounces: u32) {
    if mitsuba_missing().is_some() {
        return;
    }
    let dir = temp(&format!("agree{bounces}"));
    let (reap, mitsuba) = means(&dir, bounces, cuda_works(&dir));
    eprintln!("cornell, {bounces} bounces: reap mean {reap:?}, Mitsuba {mitsuba:?}");
    for c in 0..3 {
        let off = (reap[c] - mitsuba[c]).abs() / mitsuba[c];
        assert!(off <= 0.01, "channel {c}: reap {reap:?} and Mitsuba {mitsuba:?} differ by {:.2} %", 100.0 * off);
    }
}

#[test]
fn mitsuba_renders_reaps_cornell_mean_within_one_percent_at_one_bounce() {
    agrees_at(1);
}

#[test]
fn mitsuba_renders_reaps_cornell_mean_within_one_percent_at_eight_bounces() {
    agrees_at(8);
}

/// A tiny bench with peers: one configuration of rows, cornell at 32x24.
fn tiny_bench(dir: &Path) -> Command {
    let mut cmd = reap();
    cmd.args(["bench", "render", "--scenes", "cornell", "--backend", "cpu", "--width", "32", "--height", "24"])
        .args(["--spp", "1", "--algorithms", "lookback", "--fusion", "auto", "--bvh", "wide", "--max-bounces", "2"])
        .args(["--peers", "mitsuba", "--peer-spp", "4,16", "--reference-spp", "64", "--out"])
        .arg(dir);
    cmd
}

#[test]
fn without_mitsuba_the_peer_row_says_why_and_the_bench_succeeds() {
    let dir = temp("skipped");
    let out = tiny_bench(&dir).env("REAP_PYTHON", dir.join("no-python-here")).output().expect("run reap");
    assert!(out.status.success(), "a missing peer must not fail the bench:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pip install mitsuba"), "the console says how to install:\n{stdout}");
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Peers") && md.contains("skipped"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("peers.json")).expect("peers.json")).expect("JSON");
    let scene = &json["scenes"][0];
    assert_eq!(scene["outcome"]["status"], "skipped");
    assert!(scene["outcome"]["why"].as_str().is_some_and(|w| w.contains("no-python-here")), "{scene}");
    // Nothing to compare with: reap's reference and renders, which only the peer needs, are skipped.
    assert!(stdout.contains("reap's reference is not rendered"), "{stdout}");
    assert!(scene["reference_wall_s"].is_null(), "{scene}");
    assert_eq!(scene["reap"].as_array().map(Vec::len), Some(0), "{scene}");
    assert!(std::fs::read_to_string(dir.join("peers.csv")).expect("peers.csv").contains("skipped: "));
}

#[test]
fn with_mitsuba_the_bench_times_reap_to_its_error() {
    if mitsuba_missing().is_some() {
        return;
    }
    let dir = temp("ran");
    let mut cmd = tiny_bench(&dir);
    if let Ok(v) = std::env::var("REAP_MITSUBA_VARIANT") {
        cmd.args(["--mitsuba-variant", &v]);
    }
    let out = cmd.output().expect("run reap");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("peers.json")).expect("peers.json")).expect("JSON");
    let scene = &json["scenes"][0];
    assert_eq!(scene["outcome"]["status"], "ran", "{scene}");
    let peer = scene["outcome"]["checkpoints"].as_array().expect("Mitsuba's checkpoints");
    assert_eq!(peer.len(), 2);
    let target = peer[1]["rel_mse"].as_f64().expect("relMSE");
    for run in scene["reap"].as_array().expect("reap runs") {
        let last = run["checkpoints"].as_array().and_then(|c| c.last()).expect("a checkpoint");
        // reap stops once past 16 spp at Mitsuba's error, or at the reference's 64 spp.
        let (spp, err) = (last["spp"].as_u64().expect("spp"), last["rel_mse"].as_f64().expect("relMSE"));
        assert!(spp >= 16 && (err <= target || spp == 64), "{run}");
        assert!(run["reach"]["how"].is_string(), "{run}");
    }
}

#[test]
fn bad_peer_flags_fail_before_anything_renders() {
    let dir = temp("flags");
    let cases: [(&[&str], &str); 3] = [
        (&["--peer-spp", "16,4096"], "--reference-spp 4096 must exceed the largest --peer-spp"),
        (&["--peer-spp", "0"], "--peer-spp"),
        (&["--gpus", "2"], "leave out --gpus"),
    ];
    for (flags, says) in cases {
        let out = reap()
            .args(["bench", "render", "--backend", "cpu", "--scenes", "no-such-scene.obj", "--peers", "mitsuba"])
            .args(flags)
            .arg("--out")
            .arg(&dir)
            .output()
            .expect("run reap");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{flags:?}: {stderr}");
        assert!(!stderr.contains("no-such-scene"), "{flags:?} must fail before the scene loads: {stderr}");
    }
}
