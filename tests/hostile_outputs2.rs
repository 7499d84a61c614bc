//! Hostile output paths, third sweep (issue 45, items 1, 2 and 9): every
//! writer goes through one output check, so none replaces a file its run
//! reads, a named pipe or a device; the bench's report files never replace a
//! loaded scene's sources; and a scene export replaces an earlier export's
//! files as a whole set or not at all. Unix only: named pipes and rlimits.
#![cfg(unix)]

mod binary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("hostile-outputs2", name)
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

const TRIANGLE: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";

/// A named pipe at `path`.
fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().expect("run mkfifo").success();
    assert!(ok, "mkfifo {}", path.display());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

#[test]
fn issue45_item1_no_writer_replaces_an_input_or_a_named_pipe() {
    let dir = temp("item1");
    let obj = format!("mtllib m.mtl\nusemtl a\n{TRIANGLE}");
    let mtl = "newmtl a\nKd 0.5 0.5 0.5\n";
    std::fs::write(dir.join("s.obj"), &obj).unwrap();
    std::fs::write(dir.join("m.mtl"), mtl).unwrap();
    let view = |shot: &str| -> Vec<String> {
        let size = ["--width", "16", "--height", "16", "--scene", "s.obj", "--screenshot", shot];
        ["view", "--backend", "cpu", "--offscreen", "--frames", "1"]
            .iter()
            .chain(&size)
            .map(|a| a.to_string())
            .collect()
    };
    // The scene file itself is refused before anything opens.
    if cfg!(feature = "viewer") {
        let (out, _, stderr) = run(reap().current_dir(&dir).args(view("./s.obj")));
        assert!(!out.status.success() && stderr.contains("would replace it"), "{stderr}");
        // Its MTL is known once the scene loads: refused then, or the viewer could not run here
        // at all; either way the file is kept.
        let (out, _, stderr) = run(reap().current_dir(&dir).args(view("m.mtl")));
        let refused = stderr.contains("would replace it");
        let no_viewer = stderr.contains("adapter") || stderr.contains("display");
        assert!(!out.status.success(), "the screenshot replaced the scene's MTL:\n{stderr}");
        assert!((refused || no_viewer) && !stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(std::fs::read_to_string(dir.join("s.obj")).unwrap(), obj);
    assert_eq!(std::fs::read_to_string(dir.join("m.mtl")).unwrap(), mtl);

    // A named pipe under an output's name stays a pipe, for every writer.
    let render = ["render", "--backend", "cpu", "--width", "16", "--height", "16", "--spp", "1"];
    let collide = ["collide", "--backend", "cpu", "--bodies", "64", "--frames", "2"];
    let strings = |args: &[&str]| -> Vec<String> { args.iter().map(|a| a.to_string()).collect() };
    let bench = ["bench", "render", "--backend", "cpu", "--scenes", "s.obj", "--width", "8", "--height", "8"];
    let one_row = ["--spp", "1", "--traversals", "depth-first", "--algorithms", "lookback", "--fusion", "off"];
    let mut cases: Vec<(&str, Vec<String>)> = vec![
        ("pipe.png", strings(&[&render[..], &["--out", "pipe.png"]].concat())),
        ("pipe.json", strings(&[&render[..], &["--out", "o.png", "--timings", "pipe.json"]].concat())),
        ("pipe.csv", strings(&[&collide[..], &["--out", "pipe.csv"]].concat())),
        ("export/scene.mtl", strings(&["scene", "export", "--scene", "s.obj", "--format", "obj", "--out", "export"])),
        ("bench/results.json", strings(&[&bench[..], &one_row, &["--bvh", "binary", "--out", "bench"]].concat())),
    ];
    if cfg!(feature = "viewer") {
        cases.push(("pipe.png", view("pipe.png")));
    }
    std::fs::create_dir(dir.join("export")).unwrap();
    std::fs::create_dir(dir.join("bench")).unwrap();
    for (pipe, args) in &cases {
        let path = dir.join(pipe);
        mkfifo(&path);
        let (out, stdout, stderr) = run(reap().current_dir(&dir).args(args));
        assert!(!out.status.success(), "{args:?} wrote over a named pipe:\n{stdout}\n{stderr}");
        assert!(stderr.contains("named pipe") && stderr.contains(pipe), "{args:?}: {stderr}");
        assert!(is_fifo(&path), "{args:?} replaced the named pipe {pipe}");
        assert!(!stdout.contains("rendering") && !stdout.contains("wrote"), "{args:?} worked first:\n{stdout}");
        std::fs::remove_file(&path).unwrap();
    }
    assert!(!dir.join("o.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn issue45_item2_bench_render_never_replaces_a_scene_or_its_sources() {
    let dir = temp("item2");
    let d = dir.join("d");
    std::fs::create_dir(&d).unwrap();
    // A scene under a results name, and a scene whose MTL has the report's name.
    std::fs::write(d.join("results.json"), TRIANGLE).unwrap();
    let obj = format!("mtllib report.md\nusemtl a\n{TRIANGLE}");
    let mtl = "newmtl a\nKd 0.5 0.5 0.5\n";
    std::fs::write(d.join("s.obj"), &obj).unwrap();
    std::fs::write(d.join("report.md"), mtl).unwrap();
    for scene in ["d/results.json", "d/s.obj"] {
        let (out, stdout, stderr) = run(reap().current_dir(&dir).args([
            "bench",
            "render",
            "--backend",
            "cpu",
            "--scenes",
            scene,
            "--width",
            "8",
            "--height",
            "8",
            "--spp",
            "1",
            "--traversals",
            "depth-first",
            "--algorithms",
            "lookback",
            "--fusion",
            "off",
            "--bvh",
            "binary",
            "--out",
            "d",
        ]));
        assert!(!out.status.success(), "{scene}: the bench wrote over its input:\n{stdout}");
        assert!(stderr.contains("would replace it"), "{scene}: {stderr}");
        assert!(!stdout.contains("wrote"), "{scene}: {stdout}");
    }
    assert_eq!(std::fs::read_to_string(d.join("results.json")).unwrap(), TRIANGLE);
    assert_eq!(std::fs::read_to_string(d.join("s.obj")).unwrap(), obj);
    assert_eq!(std::fs::read_to_string(d.join("report.md")).unwrap(), mtl);
    assert_eq!(entries(&d), ["report.md", "results.json", "s.obj"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scene of `n` triangles, all of material `name`, with its MTL.
fn scene_of(dir: &Path, stem: &str, name: &str, n: usize) -> PathBuf {
    let mut obj = format!("mtllib {stem}.mtl\nusemtl {name}\n");
    for k in 0..n {
        let x = k as f32;
        obj += &format!("v {x} 0 0\nv {} 0 0\nv {x} 1 0\nf -3 -2 -1\n", x + 0.5);
    }
    std::fs::write(dir.join(format!("{stem}.obj")), obj).unwrap();
    std::fs::write(dir.join(format!("{stem}.mtl")), format!("newmtl {name}\nKd 0.5 0.25 0.125\n")).unwrap();
    dir.join(format!("{stem}.obj"))
}

/// `reap scene export` of `scene` as OBJ into `out`, under a file size limit of 4 KiB with
/// SIGXFSZ either ignored (the write fails as on a full disk) or left to kill reap mid-export.
fn export_limited(scene: &Path, out: &Path, kill: bool) -> (Output, String, String) {
    // No core file from the kill, and SIGXFSZ ignored (inherited through exec) to fail the write instead.
    let trap = if kill { "ulimit -c 0; " } else { "trap '' XFSZ; " };
    // 8 blocks: 4 KiB where `ulimit -f` counts 512 bytes (POSIX sh), 8 KiB where it counts 1 KiB.
    let script = format!("{trap}ulimit -f 8 && exec \"$0\" \"$@\"");
    let mut sh = Command::new("sh");
    sh.current_dir(out.parent().unwrap()).arg("-c").arg(script).arg(binary::path());
    sh.args(["scene", "export", "--format", "obj", "--scene"]).arg(scene).arg("--out").arg(out);
    run(&mut sh)
}

#[test]
fn issue45_item9_a_failed_or_killed_export_keeps_the_earlier_set_whole() {
    let dir = temp("item9");
    let out = dir.join("out");
    let first = scene_of(&dir, "first", "first_material", 1);
    let (o, _, stderr) =
        run(reap().args(["scene", "export", "--format", "obj", "--out"]).arg(&out).arg("--scene").arg(&first));
    assert!(o.status.success(), "{stderr}");
    let earlier: Vec<(String, Vec<u8>)> =
        entries(&out).into_iter().map(|f| (f.clone(), std::fs::read(out.join(&f)).unwrap())).collect();
    assert_eq!(earlier.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(), ["scene.mtl", "scene.obj"]);

    // Its scene.mtl (one material) fits under the limit; its scene.obj (500 triangles) does not.
    let second = scene_of(&dir, "second", "second_material", 500);
    for kill in [false, true] {
        let (o, _, stderr) = export_limited(&second, &out, kill);
        assert!(!o.status.success(), "kill {kill}: the export fitted under the limit");
        if !kill {
            assert!(stderr.contains("scene.obj") && stderr.contains("too large"), "{stderr}");
        }
        for (file, bytes) in &earlier {
            let now = std::fs::read(out.join(file)).unwrap();
            assert!(&now == bytes, "kill {kill}: {file} was replaced, the earlier export is now a mismatched pair");
        }
        // A failure removes what was staged; a kill can only leave temporaries, never a real name.
        let left: Vec<String> = entries(&out)
            .into_iter()
            .filter(|f| !earlier.iter().any(|(e, _)| e == f) && !(kill && f.ends_with(".partial")))
            .collect();
        assert!(left.is_empty(), "kill {kill}: also in the folder: {left:?}");
    }
    // Unlimited, the new set replaces the old one whole.
    let (o, _, stderr) =
        run(reap().args(["scene", "export", "--format", "obj", "--out"]).arg(&out).arg("--scene").arg(&second));
    assert!(o.status.success(), "{stderr}");
    assert!(std::fs::read_to_string(out.join("scene.mtl")).unwrap().contains("second_material"));
    assert!(std::fs::read_to_string(out.join("scene.obj")).unwrap().contains("second_material"));
    let _ = std::fs::remove_dir_all(&dir);
}
