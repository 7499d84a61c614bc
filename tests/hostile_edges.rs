//! Issue 45's rough edges end to end, one test each: one name for the fusion
//! flag and lists for verify's algorithms; bad wgpu tuning and sizes refused
//! once, up front; no XDG_RUNTIME_DIR noise from the Vulkan stack; the
//! viewer's flags checked as render's are; progress off a terminal; one
//! texture file decoded once however it is spelled.
//!
//! REAP_TEST_BINARY runs them against another `reap` (an older build, to
//! show that each fails there).

mod binary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn reap() -> Command {
    match std::env::var_os("REAP_TEST_BINARY") {
        Some(path) => Command::new(path),
        None => binary::reap(),
    }
}

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("hostile-edges", name)
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A one-pixel-budget CPU render into `dir`, with `flags` added.
fn tiny_render(dir: &Path, flags: &[&str]) -> Output {
    reap()
        .args(["render", "--backend", "cpu", "--width", "8", "--height", "8", "--spp", "1", "--out"])
        .arg(dir.join("o.png"))
        .args(flags)
        .output()
        .expect("run reap")
}

#[test]
fn fusion_is_spelled_alike_everywhere_and_fuse_still_parses() {
    let dir = temp("fusion");
    for flags in [["--fusion", "off"], ["--fuse", "off"]] {
        let out = tiny_render(&dir, &flags);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "render {flags:?} failed:\n{stdout}\n{stderr}");
    }
    // The old spelling is an alias: `--help` shows one name.
    for command in [&["render"][..], &["collide"], &["bench", "render"], &["bench", "collide"]] {
        let out = reap().args(command).arg("--help").output().expect("run reap");
        let (help, _) = text(&out);
        assert!(help.contains("--fusion"), "{command:?} --help should name --fusion:\n{help}");
        assert!(!help.contains("--fuse "), "{command:?} --help still names --fuse:\n{help}");
    }
    let out = reap()
        .args(["collide", "--backend", "cpu", "--bodies", "64", "--frames", "1", "--fusion", "off"])
        .output()
        .expect("run reap");
    assert!(out.status.success(), "collide --fusion off failed:\n{:?}", text(&out));
}

#[test]
fn verify_takes_a_list_of_algorithms_as_the_other_commands_do() {
    for flag in ["--algorithms", "--algorithm"] {
        let out = reap()
            .args(["verify", "--backend", "cpu", flag, "lookback,atomic", "--sizes", "33", "--elements", "4"])
            .output()
            .expect("run reap");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "verify {flag} lookback,atomic failed:\n{stdout}\n{stderr}");
        for name in ["lookback", "atomic"] {
            assert!(
                stdout.lines().any(|l| l.trim_start().starts_with(name) && l.ends_with(" 0 failed")),
                "no tally line for {name}:\n{stdout}"
            );
        }
        assert!(!stdout.lines().any(|l| l.trim_start().starts_with("horn")), "ran more than asked:\n{stdout}");
    }
}

/// The wgpu adapter's largest storage binding, or `None` (a skip, said on
/// stderr) where no adapter opens; REAP_REQUIRE_WGPU=1 makes that a failure.
#[cfg(feature = "wgpu")]
fn wgpu_binding_limit() -> Option<u64> {
    use std::io::Write;
    match reap::compaction::wgpu::WgpuBackend::new(&Default::default()) {
        Ok(b) => Some(b.device().limits.max_storage_buffer_binding_size),
        Err(e) => {
            assert!(std::env::var("REAP_REQUIRE_WGPU").as_deref() != Ok("1"), "REAP_REQUIRE_WGPU=1 but: {e}");
            let _ = writeln!(std::io::stderr(), "SKIPPED wgpu test (no usable adapter): {e}");
            None
        }
    }
}

#[cfg(feature = "wgpu")]
#[test]
fn a_wgpu_tuning_the_adapter_cannot_run_is_one_error_before_any_case() {
    if wgpu_binding_limit().is_none() {
        return;
    }
    // `--algorithm` (one name, the old spelling): these runs mean the same to an older reap.
    for (algorithm, tunings, named) in [
        ("lookback", &["lookback.block=0"][..], "lookback.block=0"),
        ("lookback", &["lookback.block=3"], "lookback.block=3"),
        ("lookback", &["lookback.block=99999999"], "lookback.block=99999999"),
        // The bad one second: refused before the first one's suite runs.
        ("roger", &["roger.block=64", "roger.block=0"], "roger.block=0"),
    ] {
        let mut cmd = reap();
        cmd.args(["verify", "--backend", "wgpu", "--algorithm", algorithm, "--sizes", "33", "--elements", "4"]);
        for t in tunings {
            cmd.args(["--tuning", t]);
        }
        let out = cmd.output().expect("run reap");
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{tunings:?} should be refused:\n{stdout}\n{stderr}");
        assert!(stderr.contains(&format!("--tuning {named}")) && stderr.contains("invalid tuning"), "{stderr}");
        assert!(!stdout.contains("FAIL") && !stdout.contains("verifying on"), "a case ran:\n{stdout}");
    }
}

#[cfg(feature = "wgpu")]
#[test]
fn verify_refuses_a_size_the_adapter_cannot_bind_up_front() {
    let Some(limit) = wgpu_binding_limit() else { return };
    // One 4-byte element past the binding (2^25 + 1 on lavapipe, whose limit is 128 MiB).
    let n = (limit / 4 + 1).to_string();
    let start = std::time::Instant::now();
    let out = reap()
        .args(["verify", "--backend", "wgpu", "--algorithm", "lookback", "--sizes", &n, "--elements", "4"])
        .output()
        .expect("run reap");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "--sizes {n} should be refused:\n{stdout}\n{stderr}");
    assert!(stderr.contains(&format!("--sizes {n}")) && stderr.contains("max_storage_buffer_binding_size"), "{stderr}");
    assert!(!stdout.contains("FAIL") && !stdout.contains("verifying on"), "a case ran:\n{stdout}");
    assert!(start.elapsed().as_secs() < 60, "refused only after {:?}", start.elapsed());
}

#[cfg(feature = "wgpu")]
#[test]
fn a_wgpu_run_without_xdg_runtime_dir_prints_no_vulkan_noise_and_leaves_nothing() {
    if wgpu_binding_limit().is_none() {
        return;
    }
    for runtime_dir in [None, Some("relative/run")] {
        let tmp = temp(&format!("xdg-{}", runtime_dir.is_some()));
        let mut cmd = reap();
        cmd.args(["verify", "--backend", "wgpu", "--algorithm", "atomic", "--sizes", "33", "--elements", "4"]);
        cmd.env("TMPDIR", &tmp);
        match runtime_dir {
            None => cmd.env_remove("XDG_RUNTIME_DIR"),
            Some(d) => cmd.env("XDG_RUNTIME_DIR", d),
        };
        let out = cmd.output().expect("run reap");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "verify --backend wgpu failed:\n{stdout}\n{stderr}");
        assert!(!stderr.contains("XDG_RUNTIME_DIR"), "XDG_RUNTIME_DIR={runtime_dir:?}:\n{stderr}");
        let left: Vec<_> = std::fs::read_dir(&tmp).expect("read TMPDIR").flatten().map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    }
}

#[test]
fn view_refuses_what_render_refuses_before_opening_anything() {
    for (flags, named) in [
        (&["--frames", "0"][..], "--frames"),
        (&["--frames", "1", "--descend", "9"], "--descend"),
        (&["--frames", "1", "--descend", "0"], "--descend"),
        (&["--frames", "1", "--block-levels", "0"], "--block-levels"),
        (&["--frames", "1", "--block-levels", "65"], "--block-levels"),
        (&["--frames", "1", "--block-levels", "most"], "--block-levels"),
        (&["--frames", "1", "--group-levels", "9"], "--group-levels"),
        (&["--frames", "1", "--compare-all", "0"], "--compare-all"),
    ] {
        let out = reap()
            .args(["view", "--backend", "cpu", "--offscreen", "--width", "8", "--height", "8"])
            .args(flags)
            .output()
            .expect("run reap");
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "view {flags:?} should be refused:\n{stdout}\n{stderr}");
        assert!(stderr.contains(named), "{stderr}");
    }
    // render says it the same way.
    let out = tiny_render(&temp("descend"), &["--descend", "9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("--descend"));
    for (flags, says) in [
        (&["--group-levels", "9"][..], "9 is not in 0..=8"),
        (&["--traversal", "breadth-first", "--bvh", "binary", "--group-levels", "2"], "add --bvh wide"),
        (&["--traversal", "breadth-first", "--block-levels", "2", "--group-levels", "2"], "--block-levels 1"),
        (&["--traversal", "breadth-first", "--compact-frontier", "atomic", "--group-levels", "2"], "a stable one"),
    ] {
        let out = tiny_render(&temp("group-levels"), flags);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success() && stderr.contains(says), "{flags:?}:\n{stdout}\n{stderr}");
    }
    let out = tiny_render(&temp("block-levels"), &["--block-levels", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("auto, all, or a number of wide levels from 1 to 64"), "{}", text(&out).1);
}

#[test]
fn a_render_off_a_terminal_prints_plain_progress_lines() {
    let dir = temp("progress");
    // Stderr is a pipe here, as in a log or CI.
    let out = reap()
        .args(["render", "--backend", "cpu", "--width", "256", "--height", "256", "--spp", "24", "--out"])
        .arg(dir.join("o.png"))
        .env("REAP_PROGRESS_SECONDS", "0.05")
        .output()
        .expect("run reap");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("render: ") && l.contains("/24 spp, ")).collect();
    assert!(!lines.is_empty(), "no progress line on stderr:\n{stderr}");
    assert!(lines.iter().all(|l| l.ends_with(" s")), "{lines:?}");
}

#[test]
fn one_texture_file_spelled_three_ways_is_decoded_once() {
    let dir = temp("texture-spellings");
    let real = dir.join("real");
    std::fs::create_dir_all(real.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink(&real, dir.join("link")).expect("symlink");
    image::RgbImage::from_pixel(4, 4, image::Rgb([200, 50, 20])).save(real.join("wood.png")).expect("png");
    let abs = real.join("wood.png");
    let linked = dir.join("link").join("wood.png");
    let mtl = format!(
        "newmtl a\nKd 1 1 1\nmap_Kd {}\nnewmtl b\nKd 1 1 1\nmap_Kd {}\nnewmtl c\nKd 1 1 1\nmap_Kd sub/../wood.png\n",
        abs.display(),
        linked.display()
    );
    std::fs::write(real.join("s.mtl"), mtl).expect("mtl");
    let faces = "usemtl a\nf 1/1 2/2 3/3\nusemtl b\nf 1/1 2/2 3/3\nusemtl c\nf 1/1 2/2 3/3\n";
    std::fs::write(
        real.join("s.obj"),
        format!("mtllib s.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\n{faces}"),
    )
    .expect("obj");
    // The export copies each texture the scene holds: one file, not three.
    let out = reap()
        .args(["scene", "export", "--format", "obj", "--scene"])
        .arg(real.join("s.obj"))
        .arg("--out")
        .arg(dir.join("ex"))
        .output()
        .expect("run reap");
    assert!(out.status.success(), "{:?}", text(&out));
    let copied: Vec<_> = std::fs::read_dir(dir.join("ex").join("textures"))
        .expect("textures/")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(copied.len(), 1, "textures decoded and copied: {copied:?}");
}
