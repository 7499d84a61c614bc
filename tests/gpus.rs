//! `--gpus N` end to end on the CPU backend (N CPU ranks over the same
//! protocol as N GPUs, what CI runs): the sharded verify passes, a split
//! render writes the one-rank image, the sharded benchmark writes its report,
//! and a bad `--gpus` or a missing NCCL is a clear error. `reap launch` runs
//! the ranks as processes, as separate hosts would.

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
    assert!(md.contains("Sharded compaction over 2 ranks") && md.contains("| lookback | select |"), "{md}");
}

#[test]
fn bad_gpus_are_refused_before_any_work() {
    for args in [
        &["render", "--backend", "cpu", "--gpus", "0", "--out", "never.png"][..],
        &["verify", "--backend", "cpu", "--gpus", "0"],
        // Sorts run on one GPU.
        &["bench", "compaction", "--backend", "cpu", "--gpus", "2", "--ops", "sort"],
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

#[test]
fn launch_runs_two_cpu_ranks_as_two_processes() {
    let out = reap()
        .args(["launch", "--ranks", "2", "--", "verify", "--backend", "cpu", "--algorithms", "lookback,atomic"])
        .args(["--sizes", "0,1,1000,4097"])
        .output()
        .expect("run");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("verifying 2 ranks") && stdout.contains("TCP sockets between 2 processes"), "{stdout}");
    // Rank 1 is a process of its own, its lines marked.
    assert!(stdout.contains("[rank 1] rank 1: checks each case's counts"), "{stdout}");
    // Each process's summary: `N passed, 0 failed`.
    let summaries = stdout.lines().map(|l| l.trim_start_matches("[rank 1] "));
    let summaries =
        summaries.filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.ends_with(" passed, 0 failed"));
    assert_eq!(summaries.count(), 2, "{stdout}");
}

#[test]
fn launch_benchmarks_select_partition_and_scan_over_processes() {
    let dir = binary::temp_dir("gpus", "launch-bench");
    let out = reap()
        .args(["launch", "--ranks", "2", "--", "bench", "compaction", "--backend", "cpu", "--algorithms", "lookback"])
        .args(["--operation", "select,partition,scan", "--sizes", "2^14", "--densities", "0.5", "--reps", "2"])
        .args(["--warmup", "1", "--out"])
        .arg(&dir)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    assert_eq!(csv.lines().count(), 4, "a header and a row per operation:\n{csv}");
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("over 2 ranks in 2 processes") && md.contains("| lookback | scan |"), "{md}");
}

#[test]
fn ranks_that_cannot_meet_fail_with_what_to_do() {
    // A rank whose rank 0 never listens gives up at its deadline.
    let address = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let t = std::time::Instant::now();
    let out = reap()
        .args(["verify", "--backend", "cpu", "--sizes", "10"])
        .envs([("REAP_RANK", "1"), ("REAP_RANKS", "2"), ("REAP_RENDEZVOUS_TIMEOUT", "1")])
        .env("REAP_RENDEZVOUS", &address)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("rank 0 never listened"), "{stderr}");
    assert!(t.elapsed() < std::time::Duration::from_secs(30), "it waited {:?}", t.elapsed());
    for (env, args, says) in [
        // Half a place.
        (&[("REAP_RANK", "0")][..], &["verify", "--backend", "cpu"][..], "REAP_RANKS"),
        // A command that does not run as ranks of processes.
        (
            &[("REAP_RANK", "0"), ("REAP_RANKS", "2"), ("REAP_RENDEZVOUS", "127.0.0.1:1")],
            &["collide"],
            "bench compaction",
        ),
        // --gpus that is not the number of processes.
        (
            &[("REAP_RANK", "0"), ("REAP_RANKS", "2"), ("REAP_RENDEZVOUS", "127.0.0.1:1")],
            &["verify", "--backend", "cpu", "--gpus", "3"],
            "drop --gpus",
        ),
    ] {
        let out = reap().args(args).envs(env.iter().copied()).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{env:?} {args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // One failed rank stops the launch, which says which.
    let out = reap().args(["launch", "--ranks", "2", "--", "verify", "--backend", "cpu", "--gpus", "5"]).output();
    let out = out.expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("--gpus 5") && stderr.contains("rank 1"), "{stderr}");
    for (bad, says) in [
        (&["launch", "--ranks", "0", "--", "verify"][..], "--ranks 0"),
        (&["launch", "--ranks", "2", "--", "launch"], "give the command each rank runs"),
        (&["launch", "--ranks", "2", "--rendezvous", "nowhere", "--", "verify"], "is not host:port"),
    ] {
        let out = reap().args(bad).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{bad:?}: {stderr}");
    }
}

#[test]
fn launch_renders_the_one_rank_image_over_processes() {
    let dir = binary::temp_dir("gpus", "launch-render");
    let render = |launch: &[&str], name: &str| {
        let png = dir.join(name);
        let out = reap()
            .args(launch)
            .args(["render", "--backend", "cpu", "--width", "40", "--height", "30", "--spp", "3"])
            .args(["--max-bounces", "4", "--compact-paths", "lookback", "--traversal", "breadth-first", "--out"])
            .arg(&png)
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{launch:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(png.is_file(), "{launch:?}");
        (hash(&stdout), stdout)
    };
    let (one, _) = render(&[], "one.png");
    let (three, stdout) = render(&["launch", "--ranks", "3", "--"], "three.png");
    assert_eq!(one, three, "three processes render the one-rank image");
    assert!(stdout.contains("split over 3 ranks") && stdout.contains("TCP sockets between 3 processes"), "{stdout}");
    assert!(stdout.contains("[rank 2] rendered this rank's share"), "{stdout}");
    // Split by samples (a round of two samples, then one of one) over two processes, and over two CPU
    // ranks in one process: the same image.
    let by_samples = |launch: &[&str], gpus: &str, name: &str| {
        let png = dir.join(name);
        let out = reap()
            .args(launch)
            .args(["render", "--backend", "cpu", "--width", "40", "--height", "30", "--spp", "3", "--gpus", gpus])
            .args(["--split", "samples", "--max-bounces", "4", "--compact-paths", "lookback"])
            .args(["--traversal", "breadth-first", "--out"])
            .arg(&png)
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{launch:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        (hash(&stdout), stdout)
    };
    let (processes, stdout) = by_samples(&["launch", "--ranks", "2", "--"], "1", "samples-processes.png");
    assert_eq!(one, processes, "two processes split by samples render the one-rank image: {stdout}");
    assert!(stdout.contains("by samples, one a rank") && stdout.contains("2 rounds of 3 samples"), "{stdout}");
    let (threads, stdout) = by_samples(&[], "2", "samples-threads.png");
    assert_eq!(one, threads, "two CPU ranks split by samples render the one-rank image: {stdout}");
    // A split by samples needs ranks to share; a way named twice or unknown is refused.
    for (bad, says) in [
        (&["--split", "samples"][..], "--gpus 2 or more"),
        (&["--gpus", "2", "--split", "tiles"], "unknown split `tiles`"),
    ] {
        let out = reap().args(["render", "--backend", "cpu", "--width", "8", "--height", "8"]).args(bad).output();
        let out = out.expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{bad:?}: {stderr}");
    }
    let out = reap().args(["bench", "render", "--backend", "cpu", "--gpus", "2", "--split", "rows,rows"]).output();
    let stderr = String::from_utf8_lossy(&out.as_ref().expect("run").stderr).into_owned();
    assert!(stderr.contains("names `rows` twice"), "{stderr}");
    // The benchmark over processes: rank 0 writes the rows, every hash the one-rank image's.
    let bench = dir.join("bench");
    let out = reap()
        .args(["launch", "--ranks", "2", "--", "bench", "render", "--backend", "cpu", "--scenes", "cornell"])
        .args(["--width", "32", "--height", "24", "--spp", "2", "--algorithms", "lookback", "--split"])
        .args(["rows,samples", "--out"])
        .arg(&bench)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(bench.join("results.csv")).expect("results.csv");
    assert!(csv.lines().count() >= 5, "{csv}");
    // Both ways' rows, each with the one image (the bench fails on differing hashes).
    assert!(csv.contains("cpu x2,") && csv.contains("cpu x2 samples,"), "{csv}");
}

/// Two hosts, simulated as two launchers on this one: each starts its own
/// rank of a job of two, both pointing at the first one's rendezvous.
#[test]
fn two_launchers_run_one_job_as_two_hosts_would() {
    let address = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let host = |first: &str| {
        reap()
            .args(["launch", "--ranks", "1", "--world", "2", "--first-rank", first, "--rendezvous", &address, "--"])
            .args(["verify", "--backend", "cpu", "--algorithms", "lookback", "--sizes", "0,1,4097"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start a launcher")
    };
    let (a, b) = (host("0"), host("1"));
    for (name, child) in [("host A", a), ("host B", b)] {
        let out = child.wait_with_output().expect("wait");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("verifying 2 ranks") && stdout.contains(" passed, 0 failed"), "{name}: {stdout}");
    }
    // A partial job without rank 0's address, or past its world, is refused.
    for bad in [
        &["launch", "--ranks", "1", "--world", "2", "--", "verify"][..],
        &["launch", "--ranks", "2", "--world", "2", "--first-rank", "1", "--rendezvous", "127.0.0.1:1", "--", "verify"],
    ] {
        let out = reap().args(bad).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && (stderr.contains("--rendezvous") || stderr.contains("--world")), "{stderr}");
    }
}

/// A launch asked to stop (SIGTERM, as `timeout` or a CI cancel sends) stops
/// its ranks too, within the grace it gives them, and leaves none running.
#[cfg(target_os = "linux")]
#[test]
fn a_stopped_launch_stops_its_ranks() {
    // A seed no other test uses marks this test's ranks among the machine's processes.
    const MARK: &str = "918273645";
    let ranks_alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
            std::fs::read(p.path().join("cmdline")).is_ok_and(|c| {
                let line = String::from_utf8_lossy(&c).replace('\0', " ");
                line.contains(MARK) && !line.contains("launch")
            })
        })
    };
    let child = reap()
        .args(["launch", "--ranks", "2", "--", "bench", "compaction", "--backend", "cpu", "--gpus", "2"])
        .args(["--sizes", "2^22", "--densities", "0.5", "--reps", "1000000", "--warmup", "0", "--seed", MARK])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    let t = std::time::Instant::now();
    while !ranks_alive() && t.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(ranks_alive(), "the ranks never started");
    std::thread::sleep(std::time::Duration::from_secs(1));
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let t = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait");
    assert!(t.elapsed() < std::time::Duration::from_secs(30), "the launch took {:?} to stop", t.elapsed());
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!ranks_alive(), "a rank outlived its launch");
}

/// The quality and energy lines of a `reap collide` run: what the bodies came to.
fn outcome(stdout: &str) -> Vec<String> {
    stdout.lines().filter(|l| l.starts_with("quality:") || l.starts_with("energy:")).map(str::to_string).collect()
}

#[test]
fn the_collision_demo_over_cpu_ranks_ends_where_one_engine_does() {
    let mut outcomes = Vec::new();
    for gpus in ["1", "2", "4"] {
        let out = reap()
            .args(["collide", "--backend", "cpu", "--scenario", "drum", "--bodies", "800", "--frames", "40"])
            .args(["--gpus", gpus])
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "--gpus {gpus}: {}", String::from_utf8_lossy(&out.stderr));
        if gpus != "1" {
            assert!(stdout.contains(&format!("split over {gpus} ranks")), "{stdout}");
        }
        outcomes.push(outcome(&stdout));
    }
    assert_eq!(outcomes[0].len(), 2, "{:?}", outcomes[0]);
    assert!(outcomes.iter().all(|o| *o == outcomes[0]), "{outcomes:?}");
}

#[test]
fn the_split_collide_benchmark_checks_every_frame_against_one_engine() {
    let dir = binary::temp_dir("gpus", "bench-collide");
    let out = reap()
        .args(["bench", "collide", "--backend", "cpu", "--gpus", "3", "--bodies", "600,2000", "--frames", "4"])
        .args(["--settle", "10", "--out"])
        .arg(&dir)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("| 2000 | 3 |") && stdout.contains("4 of 4 |"), "{stdout}");
    // CPU ranks share memory: no ghost exchange to choose.
    assert!(stdout.contains("| shared |"), "{stdout}");
    let json = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    assert!(json.contains("\"ghost_share\""), "{json}");
}

#[test]
fn a_split_collider_on_wgpu_or_without_ranks_is_refused() {
    // wgpu has no collectives between adapters: the split runs on CUDA GPUs or CPU ranks.
    for (backend, gpus, says) in [("cpu", "0", "at least 1"), ("cpu", "65", "at most 64"), ("wgpu", "2", "wgpu")] {
        let out =
            reap().args(["collide", "--backend", backend, "--gpus", gpus, "--frames", "1"]).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "--gpus {gpus}: {stderr}");
    }
}

#[test]
fn a_ghost_exchange_outside_a_split_over_cuda_gpus_is_refused() {
    // Only GPUs have a choice of how ghosts' values travel; CPU ranks share memory.
    let cases: [&[&str]; 3] = [
        &["collide", "--backend", "cpu", "--gpus", "2", "--ghost-exchange", "nccl", "--frames", "1"],
        &["collide", "--backend", "cpu", "--ghost-exchange", "peer", "--frames", "1"],
        &["bench", "collide", "--backend", "cpu", "--gpus", "2", "--bodies", "300", "--frames", "1"],
    ];
    for args in cases {
        let mut args = args.to_vec();
        if args[0] == "bench" {
            args.extend(["--ghost-exchanges", "nccl"]);
        }
        let out = reap().args(&args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("CUDA GPUs"), "{args:?}: {stderr}");
    }
    let out = reap().args(["collide", "--ghost-exchange", "shm", "--frames", "1"]).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("peer or nccl"), "{stderr}");
}
