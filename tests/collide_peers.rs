//! `reap bench collide --peers bullet` end to end on the CPU backend.
//!
//! Without PyBullet (no Python at $REAP_PYTHON, or a Python that cannot
//! import it) the bench still writes its rows and a peer row saying why and
//! how to install, with an unchanged exit code; the drum, which PyBullet
//! cannot express, is skipped saying so. Where PyBullet imports ($REAP_PYTHON
//! or python3), a tiny pile is stepped by it and measured by reap's ruler;
//! elsewhere that test prints why it skipped (REAP_REQUIRE_PYBULLET=1 makes
//! the skip a failure).

mod binary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("collide-peers", name)
}

/// `None` where PyBullet imports, else why not; a skip fails under REAP_REQUIRE_PYBULLET=1.
fn pybullet_missing() -> Option<String> {
    binary::peer_missing("pybullet", "PyBullet", "python3 -m pip install pybullet numpy", "REAP_REQUIRE_PYBULLET")
}

/// A tiny bench with the peer: one configuration, `scenario` at 20 bodies, 6 frames.
fn tiny_bench(dir: &Path, scenario: &str) -> Command {
    let mut cmd = reap();
    cmd.args(["bench", "collide", "--backend", "cpu", "--scenario", scenario, "--bodies", "20", "--frames", "6"])
        .args(["--algorithms", "lookback", "--sorts", "fast", "--peers", "bullet", "--out"])
        .arg(dir);
    cmd
}

fn results(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("JSON")
}

/// The bench succeeded with reap's row, and its one peer row was skipped saying `why`, everywhere.
fn assert_skipped(dir: &Path, out: &Output, why: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "a missing peer must not fail the bench:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(why), "the console says `{why}`:\n{stdout}");
    let json = results(dir);
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(1), "reap's row is kept");
    let peer = &json["peers"][0];
    assert_eq!(peer["peer"], "bullet");
    assert!(peer["skipped"].as_str().is_some_and(|w| w.contains(why)), "{peer}");
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Peers") && md.contains("bullet was skipped") && md.contains(why), "{md}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    let row = csv.lines().find(|l| l.starts_with("bullet,")).expect("a peer line in results.csv");
    assert!(row.contains(why), "{row}");
}

#[test]
fn without_python_the_peer_row_says_why_and_how_to_install_and_the_exit_code_is_unchanged() {
    let dir = temp("no_python");
    let out = tiny_bench(&dir, "pile").env("REAP_PYTHON", dir.join("no-python-here")).output().expect("run reap");
    assert_skipped(&dir, &out, "no-python-here");
    assert_skipped(&dir, &out, "python3 -m pip install pybullet numpy");
    // The same bench without the peer exits the same way.
    let alone = temp("no_python_alone");
    let mut cmd = reap();
    cmd.args(["bench", "collide", "--backend", "cpu", "--scenario", "pile", "--bodies", "20", "--frames", "6"])
        .args(["--algorithms", "lookback", "--sorts", "fast", "--out"])
        .arg(&alone);
    assert_eq!(cmd.output().expect("run reap").status.code(), out.status.code());
}

#[test]
fn a_python_without_pybullet_skips_the_peer_at_its_import() {
    let dir = temp("no_pybullet");
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no python3 to run without its site-packages");
        return;
    }
    // `-S`: no site-packages, so no PyBullet, whatever this machine has installed.
    let script = dir.join("python");
    std::fs::write(&script, "#!/bin/sh\nexec python3 -S \"$@\"\n").expect("script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = tiny_bench(&dir, "pile").env("REAP_PYTHON", &script).output().expect("run reap");
    assert_skipped(&dir, &out, "PyBullet failed at import: ModuleNotFoundError");
    assert_skipped(&dir, &out, "pip install pybullet numpy");
}

#[test]
fn the_drum_is_skipped_saying_why_before_any_python_runs() {
    let dir = temp("drum");
    let out = tiny_bench(&dir, "drum").env("REAP_PYTHON", dir.join("no-python-here")).output().expect("run reap");
    assert_skipped(&dir, &out, "turning cylinder");
}

#[test]
fn an_unknown_peer_fails_before_anything_runs() {
    let out = reap().args(["bench", "collide", "--backend", "cpu", "--peers", "mitsuba"]).output().expect("run reap");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("unknown engine `mitsuba`; use bullet"), "{stderr}");
}

#[test]
fn with_pybullet_a_tiny_pile_is_stepped_and_measured_by_reaps_ruler() {
    if pybullet_missing().is_some() {
        return;
    }
    let dir = temp("ran");
    let out = tiny_bench(&dir, "pile").args(["--bullet-iterations", "7"]).output().expect("run reap");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json = results(&dir);
    let peer = &json["peers"][0];
    assert!(peer["skipped"].is_null(), "{peer}");
    assert!(peer["version"].as_str().is_some_and(|v| v.starts_with("PyBullet ")), "{peer}");
    // reap's rows step 4 warm-up frames before their 6; the peer steps as many.
    assert_eq!(peer["frames"], 10);
    assert_eq!(peer["substeps"], json["rows"][0]["substeps"]);
    assert_eq!(peer["solver_iterations"], 7, "--bullet-iterations reaches PyBullet");
    assert!(peer["wall_ms"].as_f64().is_some_and(|t| t > 0.0), "{peer}");
    let frames: Vec<u64> =
        peer["energy"]["samples"].as_array().expect("samples").iter().filter_map(|s| s["frame"].as_u64()).collect();
    assert_eq!(frames, [0, 1, 3, 6], "the frames reap's energy line quotes");
    // The same start: the energy before the first frame is reap's, to the bit.
    assert_eq!(peer["energy"]["samples"][0]["total"], json["rows"][0]["energy"]["samples"][0]["total"]);
    let q = &peer["quality"];
    for k in ["contacts_per_body", "mean_depth", "max_depth"] {
        assert!(q[k].as_f64().is_some_and(|v| v.is_finite() && v >= 0.0), "{k}: {q}");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Peers") && md.contains("reap's penetration is"), "{md}");
}
