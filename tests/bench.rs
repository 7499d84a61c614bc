//! `reap bench` end to end on the CPU backend: the command of issue 4's
//! "Done when" runs without a GPU and writes every file, and the files parse.

use std::process::Command;

fn reap() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reap"))
}

#[test]
fn bench_compaction_on_the_cpu_writes_every_file() {
    let dir = std::env::temp_dir().join(format!("reap-bench-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = reap()
        .args(["bench", "compaction", "--backend", "cpu", "--sizes", "65536", "--reps", "3", "--warmup", "1"])
        .args(["--algorithms", "sequential,lookback,blelloch", "--densities", "0,0.5,1", "--out"])
        .arg(&dir)
        .output()
        .expect("run reap");
    assert!(out.status.success(), "reap bench failed:\n{}", String::from_utf8_lossy(&out.stderr));

    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().expect("header").clone();
    for col in ["algorithm", "median_ms", "min_ms", "max_ms", "pct_of_copy", "vs_cub"] {
        assert!(headers.iter().any(|h| h == col), "results.csv lacks {col}");
    }
    let records: Vec<_> = reader.records().collect::<Result<_, _>>().expect("CSV rows");
    assert_eq!(records.len(), 3 * 3, "3 algorithms x 3 densities");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).expect("results.json")).expect("JSON");
    assert_eq!(json["platform"]["backend"], "cpu");
    assert_eq!(json["cub_peer"]["status"], "skipped");
    assert_eq!(json["rows"].as_array().map(|r| r.len()), Some(9));
    assert!(json["reap_commit"].is_string());

    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("lookback") && md.contains("% copy"), "{md}");
    for plot in ["time_vs_density", "pct_of_copy"] {
        let png = std::fs::read(dir.join(format!("{plot}.png"))).expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let svg = std::fs::read_to_string(dir.join(format!("{plot}.svg"))).expect("svg");
        assert!(svg.contains("<svg"));
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("out dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind");

    // `reap bench report` draws the same report again from results.json alone.
    std::fs::remove_file(dir.join("report.md")).expect("remove report.md");
    std::fs::remove_file(dir.join("time_vs_density.png")).expect("remove a plot");
    let out = reap().args(["bench", "report"]).arg(&dir).output().expect("run reap");
    assert!(out.status.success(), "reap bench report failed:\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("report.md")).expect("report.md again"), md);
    assert!(dir.join("time_vs_density.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_fail_before_measuring() {
    for args in [
        &["--preset", "nope"][..],
        &["--densities", "1.5"],
        &["--elements", "3"],
        &["--reps", "0"],
        &["--operation", "shuffle"],
        &["--ops", "select,shuffle"],
        &["--operation", "scan", "--elements", "16"],
        &["--algorithms", "bogus"],
    ] {
        let out = reap().args(["bench", "compaction", "--backend", "cpu"]).args(args).output().expect("run reap");
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error:"), "{args:?}: {err}");
    }
}

/// `reap bench compaction --backend cpu ARGS --out DIR` into a fresh folder named after `tag`; the folder.
fn bench_on_the_cpu(tag: &str, args: &[&str]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("reap-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = reap()
        .args(["bench", "compaction", "--backend", "cpu"])
        .args(args)
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("run reap");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir
}

#[test]
fn presets_run_on_the_cpu_at_tiny_sizes() {
    // The preset machinery end to end without a GPU: remove (Redzone) and sort need restores.
    let dir = bench_on_the_cpu(
        "remove",
        &[
            "--operation",
            "remove",
            "--sizes",
            "4096",
            "--algorithms",
            "redzone-grid,lookback",
            "--densities",
            "0.02,0.5",
            "--reps",
            "3",
        ],
    );
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    assert!(csv.contains("remove") && csv.contains("mark+select"), "{csv}");
    assert!(dir.join("redzone_vs_k.png").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_operations_run_in_one_bench_each_with_its_rows() {
    // `--ops select,partition,scan` (issue 17): one series per operation, scan at u32 and u64.
    let dir = bench_on_the_cpu(
        "ops",
        &[
            "--ops",
            "select,partition,scan,select",
            "--sizes",
            "4096",
            "--algorithms",
            "lookback",
            "--densities",
            "0.5",
            "--elements",
            "4,8",
            "--reps",
            "2",
        ],
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).expect("results.json")).expect("JSON");
    let rows = json["rows"].as_array().expect("rows");
    let of = |op: &str, bytes: u64| {
        rows.iter().filter(|r| r["operation"] == op && r["element_bytes"].as_u64() == Some(bytes)).count()
    };
    // select given twice runs once.
    for op in ["select", "partition", "scan"] {
        assert_eq!((of(op, 4), of(op, 8)), (1, 1), "{op}: {rows:?}");
    }
    assert_eq!(rows.len(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}
