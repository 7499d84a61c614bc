//! `--gpus N` end to end on the CPU backend (N CPU ranks over the same
//! protocol as N GPUs, what CI runs): the sharded verify passes, a split
//! render writes the one-rank image, the sharded benchmark writes its report,
//! and a bad `--gpus` or a missing NCCL is a clear error.

mod binary;

use binary::reap;

fn hash(stdout: &str) -> String {
    let line = stdout.lines().find(|l| l.starts_with("image hash")).unwrap_or_else(|| panic!("no hash in {stdout}"));
    line.split_whitespace().nth(2).expect("image hash HASH").to_string()
}

#[test]
fn verify_over_three_cpu_ranks_passes() {
    let out = reap()
        .args(["verify", "--backend", "cpu", "--gpus", "3", "--algorithm", "lookback", "--sizes", "0,1,2,1000,4097"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("verifying 3 ranks") && stdout.contains(" 0 failed"), "{stdout}");
}

#[test]
fn a_split_render_writes_the_one_rank_image() {
    let dir = binary::temp_dir("gpus", "render");
    let mut hashes = Vec::new();
    for (gpus, traversal) in
        [("1", "breadth-first"), ("2", "breadth-first"), ("3", "depth-first"), ("1", "depth-first")]
    {
        let png = dir.join(format!("r{gpus}{traversal}.png"));
        let out = reap()
            .args(["render", "--backend", "cpu", "--width", "40", "--height", "30", "--spp", "3", "--max-bounces", "4"])
            .args(["--gpus", gpus, "--traversal", traversal, "--compact-paths", "lookback", "--out"])
            .arg(&png)
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "--gpus {gpus}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(png.is_file());
        hashes.push(hash(&stdout));
    }
    // The two traversals render the same image too, so every hash is one.
    assert!(hashes.iter().all(|h| *h == hashes[0]), "{hashes:?}");
}

#[test]
fn the_sharded_benchmark_writes_its_report() {
    let dir = binary::temp_dir("gpus", "bench");
    let out = reap()
        .args(["bench", "compaction", "--backend", "cpu", "--gpus", "2", "--algorithms", "lookback,atomic"])
        .args(["--sizes", "2^16", "--densities", "0.5", "--reps", "2", "--warmup", "1", "--out"])
        .arg(&dir)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    assert_eq!(csv.lines().count(), 3, "a header and two rows:\n{csv}");
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("Sharded select over 2 ranks") && md.contains("| lookback |"), "{md}");
}

#[test]
fn bad_gpus_are_refused_before_any_work() {
    for args in [
        &["render", "--backend", "cpu", "--gpus", "0", "--out", "never.png"][..],
        &["verify", "--backend", "cpu", "--gpus", "0"],
        &["bench", "compaction", "--backend", "cpu", "--gpus", "2", "--ops", "scan"],
        // A million CPU ranks would be a million ranks' buffers.
        &["verify", "--backend", "cpu", "--gpus", "1000000", "--sizes", "10"],
        &["bench", "compaction", "--backend", "cpu", "--gpus", "1000000", "--sizes", "10"],
        // More ranks than rows cannot split an image.
        &["render", "--backend", "cpu", "--gpus", "5", "--width", "8", "--height", "4", "--out", "never.png"],
    ] {
        let out = reap().args(args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(stderr.contains("--gpus") || stderr.contains("rows"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    assert!(!std::path::Path::new("never.png").exists());
    // Sizes past the host's memory are refused before any rank is made.
    let out = reap().args(["verify", "--backend", "cpu", "--gpus", "2", "--sizes", "2^40"]).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && !stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("memory") || stderr.contains("lower"), "{stderr}");
}

/// Without NCCL (a machine like CI's), asking for it is a typed error that
/// says how to install it; where NCCL is installed the call answers its version.
#[cfg(feature = "cuda")]
#[test]
fn a_missing_nccl_says_how_to_install_it() {
    match reap::cuda_runtime::nccl_available() {
        Ok(version) => assert!(version.starts_with("NCCL 2."), "{version}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("nvidia-nccl-cu13") && msg.contains("REAP_NCCL"), "{msg}");
        }
    }
}
