//! `reap bench noise` end to end on the CPU backend: a tiny Cornell box
//! writes the three files, its error falls with the sample count, a second
//! run reads the first as `--before`, and bad flags fail before rendering.

mod binary;

use std::path::PathBuf;
use std::process::Command;

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("noise", name)
}

/// Direct light only: the transport before issue 13 has fireflies in its
/// indirect light, and at 32x32 one of them can make 16 spp worse than 4 (it
/// does at seed 1 with 2 or more bounces, which is what the command is for, but
/// not what a test of the metrics' falloff can rely on).
fn small(cmd: &mut Command) -> &mut Command {
    cmd.args(["bench", "noise", "--backend", "cpu", "--width", "32", "--height", "32", "--spp", "4,16"]).args([
        "--reference-spp",
        "64",
        "--max-bounces",
        "1",
    ])
}

#[test]
fn bench_noise_writes_its_files_and_the_error_falls_with_spp() {
    let dir = temp("cornell");
    let out = small(&mut reap()).arg("--out").arg(&dir).output().expect("run reap");
    assert!(out.status.success(), "reap bench noise failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("rel. RMSE 4 -> 16 spp fell"), "{stdout}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("noise.json")).expect("noise.json")).expect("JSON");
    assert_eq!(json["scene"], "cornell");
    assert_eq!(json["backend"], "cpu");
    assert_eq!(json["reference_spp"], 64);
    assert!(json["reap_commit"].is_string() && json["reference_wall_s"].as_f64().is_some());
    assert_ne!(json["reference_seed"], json["test_seed"], "the reference's samples must be independent");
    let cps = json["checkpoints"].as_array().expect("checkpoints");
    assert_eq!(cps.iter().map(|c| c["spp"].as_u64()).collect::<Vec<_>>(), [Some(4), Some(16)]);
    let rmse: Vec<f64> = cps.iter().map(|c| c["rel_rmse"].as_f64().expect("rel_rmse")).collect();
    assert!(rmse[0] > 0.0 && rmse[1] < rmse[0], "rel. RMSE should fall from 4 to 16 spp: {rmse:?}");
    let wall: Vec<f64> = cps.iter().map(|c| c["wall_s"].as_f64().expect("wall_s")).collect();
    assert!(wall[1] >= wall[0], "checkpoint wall clocks accumulate: {wall:?}");

    let csv = std::fs::read_to_string(dir.join("noise.csv")).expect("noise.csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().expect("header").clone();
    for col in ["spp", "rel_rmse", "rel_mse", "fireflies", "reference_share", "wall_s"] {
        assert!(headers.iter().any(|h| h == col), "noise.csv lacks {col}");
    }
    assert_eq!(reader.records().count(), 2);
    let md = std::fs::read_to_string(dir.join("noise.md")).expect("noise.md");
    assert!(md.contains("| spp | rel. RMSE") && md.contains("4 → 16 spp"), "{md}");

    // A second run against the first: before and after columns and their ratio.
    let after = temp("after");
    let out = small(&mut reap()).arg("--out").arg(&after).arg("--before").arg(dir.join("noise.json")).output();
    let out = out.expect("run reap");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(after.join("noise.md")).expect("noise.md");
    assert!(md.contains("rel. RMSE before") && md.contains("Before: commit"), "{md}");
    // The same build and seeds render the same images: the ratio is exactly 1.
    assert!(md.contains("| 1.000 |"), "{md}");
    let leftovers = std::fs::read_dir(&after).expect("out dir").flatten();
    assert!(!leftovers.into_iter().any(|e| e.file_name().to_string_lossy().ends_with(".partial")));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&after);
}

#[test]
fn bad_noise_flags_fail_before_rendering() {
    for (args, says) in [
        (&["--width", "8", "--spp", "0,1", "--reference-spp", "2"][..], "at least 1"),
        (&["--width", "8", "--spp", "16,64", "--reference-spp", "64"], "must exceed the largest --spp"),
        (&["--width", "8", "--spp", "1", "--reference-spp", "2", "--scene", "no-such-scene"], "no-such-scene"),
        (&["--width", "0", "--spp", "1", "--reference-spp", "2"], "--width"),
        (&["--width", "8", "--spp", "1", "--reference-spp", "2", "--before", "/nonexistent/noise.json"], "--before"),
    ] {
        let out =
            reap().args(["bench", "noise", "--backend", "cpu", "--height", "8"]).args(args).output().expect("run reap");
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error:") && err.contains(says), "{args:?}: {err}");
    }
}
