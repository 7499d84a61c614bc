//! Issue 15's input items end to end: every file a user names is opened by `reap::input`, which
//! reads regular files only, never blocks on a FIFO and never reads a device; `--scene` takes any
//! OS path. Each test is named after the issue's item.

mod binary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("hostile-inputs", name)
}

/// `reap render` on `scene`, as small as a render gets.
fn render(scene: &Path, dir: &Path) -> Command {
    let mut cmd = reap();
    cmd.args(["render", "--backend", "cpu", "--width", "16", "--height", "16", "--spp", "1", "--scene"])
        .arg(scene)
        .arg("--out")
        .arg(dir.join("o.png"));
    cmd
}

/// Runs `cmd`, killing it after 30 s: the bug some of these tests pin is a hang.
fn run_bounded(cmd: &mut Command) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run reap");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            child.kill().expect("kill");
            panic!("reap still runs after 30 s: it is blocked on its input");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that reap failed and that its error says each of `says`.
fn assert_refused(out: &Output, says: &[&str]) {
    let err = stderr(out);
    assert!(!out.status.success(), "reap succeeded: {err}");
    for s in says {
        assert!(err.contains(s), "no {s:?} in: {err}");
    }
}

/// A link named `name` in `dir` to /dev/zero: a file that never ends.
#[cfg(unix)]
fn link_to_dev_zero(dir: &Path, name: &str) -> PathBuf {
    let link = dir.join(name);
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    link
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn item1_fifo_as_scene_is_refused_without_hanging() {
    let dir = temp("fifo-scene");
    for name in ["pipe.obj", "pipe"] {
        let fifo = dir.join(name);
        mkfifo(&fifo);
        let out = run_bounded(&mut render(&fifo, &dir));
        assert_refused(&out, &[&format!("{}: it is a FIFO (named pipe), not a regular file", fifo.display())]);
        assert!(!dir.join("o.png").exists());
    }
}

#[cfg(unix)]
#[test]
fn item1_scene_link_to_dev_zero_and_mtllib_fifo_are_refused() {
    let dir = temp("devzero-scene");
    let link = link_to_dev_zero(&dir, "zero.obj");
    let out = run_bounded(&mut render(&link, &dir));
    assert_refused(&out, &["zero.obj: it is a character device, not a regular file"]);

    let obj = dir.join("tri.obj");
    std::fs::write(&obj, "mtllib pipe.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    mkfifo(&dir.join("pipe.mtl"));
    let out = run_bounded(&mut render(&obj, &dir));
    assert_refused(&out, &["pipe.mtl: it is a FIFO (named pipe), not a regular file", "an MTL material library"]);
}

#[cfg(unix)]
#[test]
fn item1_bench_report_refuses_a_results_json_that_is_a_device() {
    let dir = temp("report-devzero");
    link_to_dev_zero(&dir, "results.json");
    let out = run_bounded(reap().args(["bench", "report"]).arg(&dir));
    assert_refused(&out, &["results.json: it is a character device, not a regular file", "a JSON report"]);
}

#[cfg(unix)]
#[test]
fn item9_non_utf8_scene_path_is_accepted() {
    use std::os::unix::ffi::OsStrExt;
    let dir = temp("non-utf8");
    let obj = dir.join(std::ffi::OsStr::from_bytes(b"tri\xff.obj"));
    std::fs::write(&obj, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let out = run_bounded(&mut render(&obj, &dir));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.join("o.png").is_file());
}

// Issue 33: the second sweep.

#[test]
fn issue33_item6_bench_sweep_without_a_gpu_advises_what_it_takes() {
    // No visible device, whether or not this machine has one.
    let out = run_bounded(reap().args(["bench", "sweep", "--sizes", "1024"]).env("CUDA_VISIBLE_DEVICES", ""));
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(!err.contains("--backend"), "advises a flag the sweep does not take: {err}");
    assert!(err.contains("NVIDIA GPU") && err.contains("no CPU backend"), "{err}");
}

#[test]
fn issue33_item7_sort_with_other_element_sizes_is_refused() {
    for (op, elements) in [("sort", "32"), ("sort-pairs", "8"), ("sort", "4,16")] {
        let out = run_bounded(
            reap().args(["bench", "compaction", "--backend", "cpu", "--no-cub", "--sizes", "1000"]).args([
                "--operation",
                op,
                "--elements",
                elements,
            ]),
        );
        assert_refused(
            &out,
            &[&format!("--operation {op} sorts 4-byte keys"), &format!("--elements {elements} does not apply")],
        );
    }
}

/// Issue 33, item 8: `mtllib` with no name blamed the OBJ's folder (or warned about an empty
/// path) with no line; a tab before the name was read as no name at all.
#[test]
fn issue33_item8_mtllib_without_a_name_names_its_line_and_a_tab_before_the_name_works() {
    let dir = temp("mtllib-no-name");
    let obj = dir.join("scene.obj");
    for mtllib in ["mtllib", "mtllib   ", "mtllib\t"] {
        std::fs::write(&obj, format!("v 0 0 0\nv 1 0 0\nv 0 1 0\n{mtllib}\nf 1 2 3\n")).unwrap();
        let out = run_bounded(&mut render(&obj, &dir));
        assert_refused(&out, &[&format!("{}:4: `mtllib` needs a file name", obj.display())]);
        assert!(!stderr(&out).contains("directory"), "{}", stderr(&out));
    }

    std::fs::write(dir.join("red.mtl"), "newmtl red\nKd 1 0 0\n").unwrap();
    for mtllib in ["mtllib\tred.mtl", "mtllib \t red.mtl"] {
        std::fs::write(&obj, format!("{mtllib}\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl red\nf 1 2 3\n")).unwrap();
        let out = run_bounded(&mut render(&obj, &dir));
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("cannot read") && !err.contains("not defined"), "red.mtl must be read: {err}");
    }
}
