//! `reap collide` and `reap bench collide` end to end on the CPU backend at
//! small n (what CI runs): the timings files hold every frame with the
//! expected fields, bad flags fail with a message before anything is
//! simulated or written, and the benchmark writes its report.

mod binary;

use std::path::PathBuf;
use std::process::Command;

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("collide", name)
}

fn small(cmd: &mut Command) -> &mut Command {
    cmd.args(["collide", "--backend", "cpu", "--bodies", "500", "--frames", "5"])
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn collide_writes_every_frame_as_json_and_csv() {
    let dir = temp("timings");
    let (json, csv) = (dir.join("t.json"), dir.join("t.csv"));

    let out = small(&mut reap()).arg("--out").arg(&json).output().expect("run");
    assert!(out.status.success(), "reap collide failed:\n{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for says in [
        "build",
        "traverse",
        "compact",
        "narrow",
        "solve",
        "broad phase",
        "peak frontier",
        "contacts",
        // The run line names how contacts push out (the scenario's default).
        "colours, split contacts, 5 frames",
        "frame, wall clock",
        "the wall clock exceeds the summed stage times by",
        "quality: ",
        "contacts per body, penetration mean",
        // 5 frames: the start, a quarter (1), half way (2) and the end.
        "energy: kinetic 0.0000 J at frame 0, ",
        " J at frame 1, ",
        " J at frame 5; total ",
        "potential from y = ",
    ] {
        assert!(stdout.contains(says), "summary lacks `{says}`:\n{stdout}");
    }

    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("JSON");
    assert_eq!(t["bodies"], 500);
    assert_eq!(t["settings"]["compact_pairs"], "lookback");
    assert_eq!(t["settings"]["sort"], "fast");
    assert_eq!(t["summary"]["frames"], 4, "frame 0 is left out of the means");
    assert!(t["summary"]["wall_gap_percent"].as_f64().is_some_and(|g| g >= 0.0), "{}", t["summary"]);
    let frames = t["frames"].as_array().expect("frames");
    assert_eq!(frames.len(), 5);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f["frame"], i);
        assert_eq!(f["bodies"], 500);
        assert_eq!(f["backend"], "cpu");
        assert_eq!(f["scenario"], "pile");
        assert_eq!(f["compact_pairs"], "lookback");
        assert_eq!(f["sort"], "fast");
        let stages = f["stages"].as_array().expect("stages");
        assert!(stages.iter().all(|s| s["name"].is_string() && s["ms"].is_f64() && s.get("level").is_some()));
        assert!(stages.iter().any(|s| s["name"] == "expand level" && s["level"] == 0), "{stages:?}");
        for part in ["build", "traverse", "compact", "narrow", "solve"] {
            assert!(f["parts"][part].as_f64().is_some_and(|ms| ms >= 0.0), "part {part}: {f}");
        }
        assert!(f["broad_ms"].as_f64().is_some_and(|ms| ms > 0.0));
        assert!(f["frame_ms"].as_f64() >= f["broad_ms"].as_f64());
        // The wall clock holds every stage and the host work between them.
        assert!(f["wall_ms"].as_f64() >= f["frame_ms"].as_f64(), "{f}");
        let frontier = f["frontier"].as_array().expect("frontier");
        assert!(!frontier.is_empty() && frontier[0] == 1, "the traversal starts at (root, root): {frontier:?}");
        assert_eq!(f["live"].as_array().map(|l| l.len()), Some(frontier.len()));
        assert_eq!(f["levels"], frontier.len());
        for count in ["pairs_tested", "candidates", "contacts"] {
            assert!(f[count].is_u64(), "{count}: {f}");
        }
        assert!(f["contacts"].as_u64() <= f["candidates"].as_u64());
    }

    // The same run as CSV: one row per frame, the same counts (seeded, deterministic).
    let out = small(&mut reap()).arg("--out").arg(&csv).output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut r = csv::Reader::from_path(&csv).expect("csv");
    let header = r.headers().expect("header").clone();
    for col in [
        "frame",
        "bodies",
        "backend",
        "scenario",
        "compact_pairs",
        "sort",
        "build_ms",
        "traverse_ms",
        "compact_ms",
        "narrow_ms",
        "solve_ms",
        "broad_ms",
        "frame_ms",
        "wall_ms",
        "levels",
        "pairs_tested",
        "candidates",
        "contacts",
        "frontier",
        "live",
        "stage_expand_level_ms",
    ] {
        assert!(header.iter().any(|h| h == col), "no column {col} in {header:?}");
    }
    let col = |name: &str| header.iter().position(|h| h == name).expect("column");
    let rows: Vec<csv::StringRecord> = r.records().collect::<Result<_, _>>().expect("rows");
    assert_eq!(rows.len(), 5);
    for (row, f) in rows.iter().zip(frames) {
        assert_eq!(row[col("bodies")].to_string(), "500");
        assert_eq!(row[col("candidates")].to_string(), f["candidates"].to_string());
        assert_eq!(row[col("contacts")].to_string(), f["contacts"].to_string());
        assert!(row[col("stage_expand_level_ms")].starts_with("0:"), "{row:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_fail_with_a_message_and_write_nothing() {
    let dir = temp("bad");
    let json = dir.join("t.json").display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--compact-pairs".into(), "quicksort".into()], "lookback"),
        (vec!["--sort".into(), "bogosort".into()], "fast"),
        (vec!["--bodies".into(), "0".into()], "--bodies"),
        (vec!["--frames".into(), "0".into()], "--frames"),
        (vec!["--scenario".into(), "volcano".into()], "pile"),
        (vec!["--iterations".into(), "0".into()], "--iterations"),
        (vec!["--substeps".into(), "0".into()], "--substeps"),
        (vec!["--substeps".into(), "65".into()], "between 1 and 64"),
        (vec!["--colours".into(), "25".into()], "--colours must be between 0 and 24"),
        (vec!["--colours".into(), "-1".into()], "-1"),
        (vec!["--max-candidates".into(), "0".into()], "--max-candidates must be at least 1"),
        (vec!["--contacts".into(), "hard".into()], "expected `split`, `soft` or `soft:HZ`"),
        (vec!["--contacts".into(), "soft:0".into()], "a stiffness from 1 to 1000"),
        (vec!["--contacts".into(), "soft".into(), "--iterations".into(), "1".into()], "a solve pass and a relax pass"),
        // The drum's bodies touch from the start: past a bound of 50 slots, a typed error, and no file.
        (
            vec!["--scenario".into(), "drum".into(), "--max-candidates".into(), "50".into()],
            "more than --max-candidates 50",
        ),
        (vec!["--out".into(), dir.join("t.txt").display().to_string()], ".json or .csv"),
        (vec!["--out".into(), "/nonexistent-dir/t.json".into()], "/nonexistent-dir/t.json"),
    ];
    for (mut args, says) in cases {
        // Every case names a good --out too, so that its error also proves nothing was written there.
        if !args.contains(&"--out".to_string()) {
            args.extend(["--out".to_string(), json.clone()]);
        }
        let out = small(&mut reap()).args(&args).output().expect("run");
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(err.contains(says), "{args:?}: expected `{says}` in:\n{err}");
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    }
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(files.is_empty(), "files left: {files:?}");

    // The benchmark checks its folder before measuring.
    let out = reap()
        .args(["bench", "collide", "--backend", "cpu", "--bodies", "300", "--frames", "2"])
        .args(["--out", "/proc/reap-cannot-write-here"])
        .output()
        .expect("run");
    assert!(!out.status.success() && stderr(&out).contains("reap-cannot-write-here"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_collide_writes_its_report_and_agrees_across_algorithms() {
    let dir = temp("bench");
    let out = reap()
        .args(["bench", "collide", "--backend", "cpu", "--bodies", "300", "--frames", "2"])
        .args(["--algorithms", "lookback,none,atomic"])
        // Keeps the uncompacted baseline's memory small; it either finishes or becomes a row saying why not.
        .args(["--max-frontier", "4000000"])
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("run");
    assert!(out.status.success(), "reap bench collide failed:\n{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("lookback") && stdout.contains("atomic"), "{stdout}");

    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    for says in [
        "## pile, 300 bodies",
        "| sort | compaction |",
        "| frame | wall | gap |",
        "Clocks: over the configurations that ran",
        "fastest",
        "5 ms target",
        "Agreement: every",
        "- Last frame (`lookback`): quality: ",
        "- energy: kinetic 0.0000 J at frame 0, ",
    ] {
        assert!(md.contains(says), "report lacks `{says}`:\n{md}");
    }
    // Two sorts (the default fast,split:lookback) x three choices.
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    assert_eq!(csv.lines().count(), 1 + 2 * 3, "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).expect("results.json")).expect("JSON");
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 6);
    let header = csv.lines().next().unwrap_or_default();
    assert!(header.contains(",frame_ms,wall_ms,wall_gap_percent,"), "{header}");
    assert!(rows.iter().filter(|r| r["error"].is_null()).all(|r| r["wall_ms"].as_f64() >= r["frame_ms"].as_f64()));
    let compacted: Vec<_> = rows.iter().filter(|r| r["compaction"] != "none").collect();
    assert!(compacted.iter().all(|r| r["error"].is_null() && r["candidates_per_frame"].as_array().unwrap().len() == 2));
    assert!(compacted.windows(2).all(|w| w[0]["candidates_per_frame"] == w[1]["candidates_per_frame"]));
    assert!(
        header.contains(",contacts_per_body,mean_depth_r,max_depth_r,kinetic_start,kinetic_end,energy_drift_percent,")
    );
    // The energy series: the start and each of the 2 frames, the pile falling from rest.
    for r in &compacted {
        let energy = r["energy"]["samples"].as_array().expect("energy samples");
        assert_eq!(energy.len(), 3, "{r}");
        assert!(energy[0]["kinetic"] == 0.0 && energy[2]["kinetic"].as_f64() > Some(0.0), "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
