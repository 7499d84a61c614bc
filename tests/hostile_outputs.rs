//! Hostile input against the outputs, the flags and the signals of `reap`
//! (issue 15, items 3, 4, 6, 7, 9 and 11): each test is named after its item
//! and checks that bad input fails before any work, keeps the user's files,
//! and says what happened once.

mod binary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("hostile-outputs", name)
}

/// `reap render` on the CPU, tiny, in `dir`.
fn render(dir: &Path) -> Command {
    let mut cmd = reap();
    cmd.current_dir(dir).args(["render", "--backend", "cpu", "--width", "16", "--height", "16", "--spp", "1"]);
    cmd
}

fn run(cmd: &mut Command) -> (Output, String, String) {
    let out = cmd.output().expect("run reap");
    let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    (out, o, e)
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn item3_an_output_that_is_a_folder_fails_before_rendering_and_leaves_nothing() {
    let dir = temp("folder");
    std::fs::create_dir(dir.join("o.png")).unwrap();
    std::fs::write(dir.join("o.png.partial"), b"mine").unwrap();
    let (out, stdout, stderr) = run(render(&dir).args(["--out", "o.png"]));
    assert!(!out.status.success());
    assert!(stderr.contains("o.png") && stderr.contains("it is a folder"), "{stderr}");
    assert!(!stdout.contains("rendering"), "rendered before failing:\n{stdout}");
    assert_eq!(entries(&dir), ["o.png", "o.png.partial"]);
    assert!(entries(&dir.join("o.png")).is_empty());
    assert_eq!(std::fs::read(dir.join("o.png.partial")).unwrap(), b"mine");

    let (out, stdout, stderr) = run(render(&dir).args(["--out", "new.png/"]));
    assert!(!out.status.success() && stderr.contains("ends in a slash"), "{stderr}");
    assert!(!stdout.contains("rendering"), "{stdout}");
    assert_eq!(entries(&dir), ["o.png", "o.png.partial"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn item4_bench_compaction_into_an_unwritable_folder_fails_before_measuring() {
    // /proc exists and takes no new files, even from root.
    let (out, stdout, stderr) = run(reap().args([
        "bench",
        "compaction",
        "--backend",
        "cpu",
        "--algorithms",
        "sequential",
        "--sizes",
        "1024",
        "--densities",
        "0.5",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--no-cub",
        "--out",
        "/proc",
    ]));
    assert!(!out.status.success());
    assert!(stderr.contains("cannot write /proc:"), "names the folder, not our probe: {stderr}");
    assert!(!stderr.contains(".partial"), "the probe's temporary name leaks into the message: {stderr}");
    assert!(!stdout.contains("benchmarking"), "measured before failing:\n{stdout}");
}

/// Runs `command` (which names the missing scene `missing.obj`) with each bad
/// flag and with `--backend cuda` and no visible GPU: every error must come
/// before any attempt to load the scene.
fn flags_fail_before_the_scene(name: &str, command: &[&str], bad: &[(&[&str], &str)]) {
    let dir = temp(name);
    let base = |extra: &[&str]| {
        let mut c = reap();
        c.current_dir(&dir).args(command).args(extra);
        c
    };
    for (extra, says) in bad {
        let (out, _, stderr) = run(&mut base(extra));
        assert!(!out.status.success(), "{extra:?}");
        assert!(stderr.contains(says) && !stderr.contains("missing.obj"), "{extra:?}: {stderr}");
    }
    let (out, _, stderr) = run(base(&["--backend", "cuda"]).env("CUDA_VISIBLE_DEVICES", ""));
    assert!(!out.status.success());
    assert!(!stderr.contains("missing.obj"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn item6_bad_flags_are_reported_before_the_scene_loads() {
    flags_fail_before_the_scene(
        "flags",
        &["render", "--scene", "missing.obj", "--out", "o.png"],
        &[
            (&["--backend", "cpu", "--width", "0"], "--width"),
            (&["--backend", "cpu", "--spp", "0"], "--spp"),
            (&["--backend", "cpu", "--compact-paths", "lookbak"], "unknown algorithm `lookbak`"),
            (&["--backend", "cpu", "--compact-frontier", "lookbak"], "unknown algorithm `lookbak`"),
        ],
    );
}

#[test]
fn item6_bench_render_reports_bad_flags_before_the_first_scene_loads() {
    flags_fail_before_the_scene(
        "bench-flags",
        &["bench", "render", "--scenes", "missing.obj"],
        &[
            (&["--backend", "cpu", "--width", "0"], "--width"),
            (&["--backend", "cpu", "--spp", "0"], "--spp"),
            (&["--backend", "cpu", "--algorithms", "none,lookbak"], "unknown algorithm `lookbak`"),
        ],
    );
}

#[cfg(unix)]
#[test]
fn item7_sigterm_during_bench_compaction_keeps_the_results_and_exits_143() {
    use std::io::{BufRead, BufReader};
    let dir = temp("sigterm");
    let run_dir = dir.join("run");
    // Far more rows than fit in the time before the signal.
    let mut child = reap()
        .args([
            "bench",
            "compaction",
            "--backend",
            "cpu",
            "--algorithms",
            "all",
            "--sizes",
            "2^16,2^17,2^18,2^19",
            "--reps",
            "5",
            "--warmup",
            "0",
            "--no-cub",
            "--out",
        ])
        .arg(&run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The first line comes just before measuring starts.
    let first = lines.next().expect("a line").expect("text");
    assert!(first.contains("benchmarking"), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(143), "{rest:?}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("results.json")).expect("results.json kept"))
            .expect("valid JSON");
    assert_eq!(json["complete"], false);
    assert!(run_dir.join("results.csv").is_file() && run_dir.join("report.md").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn item9_a_system_error_is_said_once() {
    let dir = temp("once");
    std::fs::create_dir(dir.join("dir.obj")).unwrap();
    let (out, _, stderr) = run(render(&dir).args(["--scene", "dir.obj", "--out", "o.png"]));
    assert!(!out.status.success());
    assert!(stderr.matches("(os error").count() <= 1, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn item11_an_output_over_an_input_is_refused() {
    // Any existing file is loaded as OBJ, whatever its extension, so a timings name can be the scene.
    let dir = temp("input");
    let obj = "mtllib lib.csv\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl a\nf 1 2 3\n";
    let mtl = "newmtl a\nKd 1 1 1\n";
    std::fs::write(dir.join("scene.json"), obj).unwrap();
    std::fs::write(dir.join("lib.csv"), mtl).unwrap();
    for target in ["scene.json", "./lib.csv"] {
        let (out, stdout, stderr) =
            run(render(&dir).args(["--scene", "scene.json", "--out", "o.png", "--timings", target]));
        assert!(!out.status.success(), "{target}");
        assert!(stderr.contains("would replace it"), "{target}: {stderr}");
        assert!(!stdout.contains("rendering"), "{stdout}");
    }
    assert_eq!(std::fs::read_to_string(dir.join("scene.json")).unwrap(), obj);
    assert_eq!(std::fs::read_to_string(dir.join("lib.csv")).unwrap(), mtl);
    let _ = std::fs::remove_dir_all(&dir);
}

// Issue 33: the second sweep.

/// Reads `child`'s stdout until a line contains `text`.
fn wait_for_line(
    child: &mut std::process::Child,
    text: &str,
) -> std::io::Lines<std::io::BufReader<std::process::ChildStdout>> {
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    for line in lines.by_ref() {
        if line.expect("text").contains(text) {
            return lines;
        }
    }
    panic!("reap ended before printing {text:?}");
}

#[cfg(unix)]
#[test]
fn issue33_item1_a_second_sigint_keeps_the_rows_measured() {
    let dir = temp("second-sigint");
    let run_dir = dir.join("run");
    // The 2^10 row is measured in milliseconds, the 2^24 one (400 reps) takes seconds:
    // both signals land while the second row is being measured.
    let mut child = reap()
        .args(["bench", "compaction", "--backend", "cpu", "--algorithms", "sequential", "--densities", "0.5"])
        .args(["--sizes", "2^10,2^24", "--reps", "400", "--warmup", "0", "--no-cub", "--out"])
        .arg(&run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let _rest = wait_for_line(&mut child, "benchmarking");
    std::thread::sleep(std::time::Duration::from_millis(500));
    for pause_ms in [200, 0] {
        // SAFETY: signalling our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
    }
    let status = child.wait().expect("wait");
    assert!(!status.success(), "{status:?}");
    let csv = std::fs::read_to_string(run_dir.join("results.csv")).expect("results.csv holds the measured row");
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let n_col = rows.headers().expect("header").iter().position(|h| h == "n").expect("an n column");
    let sizes: Vec<String> = rows.records().map(|r| r.expect("row")[n_col].to_string()).collect();
    assert!(sizes.iter().any(|n| n == "1024"), "the 2^10 row is missing: {csv}");
    let debris: Vec<String> = entries(&run_dir).into_iter().filter(|e| e.ends_with(".partial")).collect();
    assert!(debris.is_empty(), "{debris:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn issue33_item4_bench_noise_out_never_replaces_its_before() {
    let dir = temp("noise-before");
    let small = |out: &Path| {
        let mut cmd = reap();
        cmd.args(["bench", "noise", "--backend", "cpu", "--width", "8", "--height", "8", "--spp", "1"])
            .args(["--reference-spp", "2", "--out"])
            .arg(out);
        cmd
    };
    let first = dir.join("first");
    let (out, _, stderr) = run(&mut small(&first));
    assert!(out.status.success(), "{stderr}");
    let before = first.join("noise.json");
    let kept = std::fs::read(&before).expect("noise.json");
    std::os::unix::fs::symlink(&first, dir.join("link")).unwrap();
    for out_dir in [first.clone(), dir.join("link"), first.join(".")] {
        let (out, _, stderr) = run(small(&out_dir).arg("--before").arg(&before));
        assert!(!out.status.success(), "{}: {stderr}", out_dir.display());
        assert!(stderr.contains("would replace it"), "{}: {stderr}", out_dir.display());
        assert_eq!(std::fs::read(&before).unwrap(), kept, "{} replaced --before", out_dir.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn issue33_item5_aces_at_a_huge_exposure_turns_lit_pixels_white_not_black() {
    let dir = temp("aces-exposure");
    let image = |tonemap: &str| {
        let name = format!("{tonemap}.png");
        let (out, _, stderr) = run(render(&dir).args(["--tonemap", tonemap, "--exposure", "100", "--out", &name]));
        assert!(out.status.success(), "{stderr}");
        image::open(dir.join(&name)).expect("a PNG").to_rgb8()
    };
    let (clamp, aces) = (image("clamp"), image("aces"));
    let lit: Vec<_> = clamp.pixels().zip(aces.pixels()).filter(|(c, _)| c.0 != [0, 0, 0]).collect();
    assert!(!lit.is_empty(), "the render is black even under clamp");
    for (c, a) in lit {
        assert_eq!(a.0, [255, 255, 255], "lit under clamp ({:?}) but not white under aces", c.0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
