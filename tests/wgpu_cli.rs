//! The commands with `--backend wgpu`, end to end on whatever adapter wgpu
//! finds (lavapipe in CI): verify, bench compaction, render, collide; what
//! `--backend auto` picks and says; and the errors of `--adapter` and of what
//! wgpu cannot do (several GPUs). A machine without an adapter skips the runs
//! with the reason; REAP_REQUIRE_WGPU=1 turns that into a failure.

use std::io::Write;
use std::process::{Command, Output};

use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};

fn reap() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reap"))
}

/// The `--adapter` flags for the adapter REAP_WGPU_ADAPTER names (default:
/// the best one), or `None` (a skip) when none opens here.
fn adapter_flags() -> Option<Vec<String>> {
    let name = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default();
    let choice: AdapterChoice = name.parse().unwrap_or_else(|never| match never {});
    match WgpuBackend::new(&choice) {
        Ok(_) if name.is_empty() => Some(Vec::new()),
        Ok(_) => Some(vec!["--adapter".into(), name]),
        Err(e) => {
            assert!(!required(), "REAP_REQUIRE_WGPU=1 but: {e}");
            // Past the harness's capture, so the skip shows in CI's log.
            let _ = writeln!(std::io::stderr(), "SKIPPED wgpu CLI test (no usable adapter): {e}");
            None
        }
    }
}

fn required() -> bool {
    std::env::var("REAP_REQUIRE_WGPU").is_ok_and(|v| v == "1")
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn verify_on_wgpu_names_the_adapter_and_ends_with_the_tally() {
    let Some(adapter) = adapter_flags() else { return };
    let out = reap()
        .args(["verify", "--backend", "wgpu", "--algorithm", "atomic", "--sizes", "33,4097"])
        .args(&adapter)
        .output()
        .expect("run reap");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "reap verify --backend wgpu failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("adapter: ") && stdout.contains("clock: "), "{stdout}");
    assert!(stdout.contains("verifying on the wgpu backend"), "{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    let passed: u64 = last.strip_suffix(" passed, 0 failed").and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(passed > 0, "the last line should be `N passed, 0 failed`: {last}");
}

#[test]
fn bench_compaction_on_wgpu_writes_wgpu_rows_and_says_which_clock() {
    let Some(adapter) = adapter_flags() else { return };
    let dir = std::env::temp_dir().join(format!("reap-wgpu-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = reap()
        .args(["bench", "compaction", "--backend", "wgpu", "--algorithms", "atomic", "--sizes", "2^12"])
        .args(["--reps", "3", "--warmup", "1", "--out"])
        .arg(&dir)
        .args(&adapter)
        .output()
        .expect("run reap");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "reap bench compaction --backend wgpu failed:\n{stdout}\n{stderr}");

    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let backend = reader.headers().expect("header").iter().position(|h| h == "backend").expect("a backend column");
    let records: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>().expect("CSV rows");
    let wgpu_rows = records.iter().filter(|r| &r[backend] == "wgpu").count();
    assert_eq!(wgpu_rows, 7, "atomic at the 7 default densities:\n{csv}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).expect("results.json")).expect("JSON");
    assert_eq!(json["platform"]["backend"], "wgpu");
    let clock = json["platform"]["clock"].as_str().unwrap_or_default().to_string();
    assert!(clock.contains("timestamp queries") || clock.contains("host clock"), "{json}");

    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let device = json["platform"]["device"].as_str().unwrap_or_default();
    assert!(md.contains("| backend | wgpu |") && md.contains(&format!("| device | {device} |")), "{md}");
    assert!(md.contains(&format!("| clock | {clock} |")), "{md}");
    // On an NVIDIA GPU the same run times CUDA and CUB beside wgpu.
    let beside_cuda = json["beside"].as_array().is_some_and(|b| b.iter().any(|p| p["backend"] == "cuda"));
    assert_eq!(md.contains("## wgpu vs CUDA"), beside_cuda, "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Errors, not panics, and each says what to do; no adapter is needed.
#[test]
fn a_bad_adapter_and_what_wgpu_cannot_do_fail_with_a_clear_error() {
    let cases: [(&[&str], &str); 6] = [
        (&["verify", "--backend", "wgpu", "--adapter", "99", "--algorithm", "atomic", "--sizes", "33"], "adapter"),
        (&["bench", "compaction", "--backend", "wgpu", "--adapter", "99", "--sizes", "2^12"], "adapter"),
        (&["verify", "--backend", "cpu", "--adapter", "0"], "add --backend wgpu"),
        (&["render", "--backend", "cpu", "--adapter", "0"], "add --backend wgpu"),
        (&["collide", "--backend", "wgpu", "--adapter", "99", "--frames", "1"], "adapter"),
        (&["render", "--backend", "wgpu", "--gpus", "2", "--width", "16", "--height", "16"], "--gpus"),
    ];
    for (args, says) in cases {
        let out = reap().args(args).output().expect("run reap");
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{args:?} should fail:\n{stdout}");
        assert!(stderr.contains("error:") && stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        // With an adapter present, a bad index lists the ones there are.
        if args.contains(&"99") && !stderr.contains("finds no") {
            assert!(stderr.contains("--adapter 99") && stderr.contains("Pick one of"), "{stderr}");
        }
    }
}

/// WGSL's wide expansion has no block step: several levels a step are
/// refused with a clear error, not ignored; one level renders.
#[test]
fn wgpu_refuses_several_block_levels_and_renders_one() {
    let Some(adapter) = adapter_flags() else { return };
    let dir = std::env::temp_dir().join(format!("reap-wgpu-block-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let bf = ["render", "--backend", "wgpu", "--width", "16", "--height", "12", "--spp", "1", "--traversal"];
    for (levels, ok) in [("2", false), ("all", false), ("1", true), ("auto", true)] {
        let out = reap()
            .args(bf)
            .args(["breadth-first", "--bvh", "wide", "--block-levels", levels, "--out"])
            .arg(dir.join(format!("{levels}.png")))
            .args(&adapter)
            .output()
            .expect("run reap");
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.success(), ok, "--block-levels {levels}:\n{stdout}\n{stderr}");
        if !ok {
            assert!(stderr.contains(&format!("--block-levels {levels}")) && stderr.contains("use --block-levels 1"));
            assert!(!dir.join(format!("{levels}.png")).exists(), "a refused render wrote its image");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The image hash `reap render` prints.
fn hash_of(stdout: &str) -> String {
    let line = stdout.lines().find(|l| l.starts_with("image hash ")).unwrap_or_default();
    line.split_whitespace().nth(2).unwrap_or_default().to_string()
}

/// `reap render --backend wgpu` writes the PNG and prints one hash whatever
/// the compaction algorithm and the traversal.
#[test]
fn render_on_wgpu_gives_one_image_under_every_choice() {
    let Some(adapter) = adapter_flags() else { return };
    let dir = std::env::temp_dir().join(format!("reap-wgpu-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut hashes = Vec::new();
    for (traversal, alg) in [("depth-first", "lookback"), ("breadth-first", "lookback"), ("breadth-first", "atomic")] {
        let png = dir.join(format!("{traversal}-{alg}.png"));
        let out = reap()
            .args(["render", "--backend", "wgpu", "--scene", "cornell", "--width", "40", "--height", "30"])
            .args(["--spp", "2", "--traversal", traversal, "--compact-paths", alg, "--compact-frontier", alg])
            .arg("--out")
            .arg(&png)
            .args(&adapter)
            .output()
            .expect("run reap");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "render --backend wgpu {traversal} {alg} failed:\n{stdout}\n{stderr}");
        assert!(png.exists(), "no {}", png.display());
        hashes.push((traversal, alg, hash_of(&stdout)));
    }
    assert!(!hashes[0].2.is_empty() && hashes.iter().all(|h| h.2 == hashes[0].2), "{hashes:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn collide_on_wgpu_steps_and_reports_its_contacts() {
    let Some(adapter) = adapter_flags() else { return };
    let out = reap()
        .args(["collide", "--backend", "wgpu", "--scenario", "pile", "--bodies", "300", "--frames", "3"])
        .args(&adapter)
        .output()
        .expect("run reap");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "collide --backend wgpu failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("contacts"), "{stdout}");
}

/// `--backend auto` says in one line which backend it took and why: CUDA
/// where it works, else a hardware wgpu adapter, else the CPU (lavapipe, a
/// software adapter, is slower than the CPU backend).
#[test]
fn auto_says_which_backend_it_took() {
    let out = reap()
        .args(["render", "--scene", "cornell", "--width", "16", "--height", "12", "--spp", "1", "--out"])
        .arg(std::env::temp_dir().join(format!("reap-auto-{}.png", std::process::id())))
        .output()
        .expect("run reap");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("note: using the")).collect();
    let cuda = notes.is_empty(); // CUDA worked: nothing to explain
    let wgpu = notes.iter().any(|l| l.contains("wgpu backend") && l.contains("CUDA is unavailable"));
    let cpu = notes
        .iter()
        .any(|l| l.contains("CPU backend") && (l.contains("software adapter") || l.contains("wgpu has no adapter")));
    assert!(cuda || wgpu || cpu, "{stderr}");
}
