//! `reap render` and `reap bench render` end to end on the CPU backend (what CI
//! runs): a small Cornell box renders, writes its image and timings, and bad
//! input fails with a message before anything is rendered or written.

mod binary;

use std::path::PathBuf;
use std::process::Command;

use binary::reap;

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("render", name)
}

fn small(cmd: &mut Command) -> &mut Command {
    cmd.args(["--backend", "cpu", "--width", "48", "--height", "36", "--spp", "4", "--max-bounces", "5"])
}

#[test]
fn render_writes_a_lit_cornell_box_and_timings() {
    let dir = temp("cornell");
    let (png, json, csv) = (dir.join("cornell.png"), dir.join("t.json"), dir.join("t.csv"));
    let out = small(reap().arg("render")).arg("--out").arg(&png).arg("--timings").arg(&json).output().expect("run");
    assert!(out.status.success(), "reap render failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Mrays/s") && stdout.contains("image hash"), "{stdout}");
    // The wall clock holds every stage and the host work between them.
    assert!(stdout.contains("summed stages") && stdout.contains("the wall clock exceeds the summed stage times by"));

    let img = image::open(&png).expect("a PNG").to_rgb8();
    assert_eq!(img.dimensions(), (48, 36));
    let mean: f64 = img.pixels().map(|p| p.0.iter().map(|c| *c as f64).sum::<f64>()).sum::<f64>() / (48.0 * 36.0 * 3.0);
    assert!(mean > 10.0, "the Cornell box should be lit, mean {mean}");
    // The red and green walls: some pixel is clearly red, some clearly green.
    let [r, g, b] = [0, 1, 2];
    let above = |p: &image::Rgb<u8>, c: usize, o: usize| p.0[c] as i32 > p.0[o] as i32 + 12;
    assert!(img.pixels().any(|p| above(p, r, g) && above(p, r, b)), "no red wall");
    assert!(img.pixels().any(|p| above(p, g, r) && above(p, g, b)), "no green wall");

    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("JSON");
    assert_eq!(t["frames"].as_array().map(|f| f.len()), Some(4));
    assert_eq!(t["settings"]["traversal"], "breadth-first");
    let frame = &t["frames"][0];
    assert!(frame["frontier"][0].as_array().is_some_and(|l| !l.is_empty()), "frontier sizes per level");
    assert!(frame["stages"].as_array().is_some_and(|s| s.len() > 5));
    for f in t["frames"].as_array().unwrap() {
        let (wall, stages) = (f["wall_ms"].as_f64().expect("wall_ms"), f["frame_ms"].as_f64().expect("frame_ms"));
        assert!(stages > 0.0 && wall >= stages * (1.0 - 1e-9), "wall clock {wall} ms below its stages' {stages} ms");
    }
    let summary = &t["summary"];
    assert!(summary["wall_ms"].as_f64() >= summary["frame_ms"].as_f64(), "{summary}");
    assert!(summary["wall_mrays_per_s"].as_f64().is_some_and(|r| r > 0.0), "{summary}");
    assert!(summary["wall_gap_percent"].as_f64().is_some_and(|g| g >= 0.0), "{summary}");

    // The same render with CSV timings, depth-first and `none`: the same image.
    let png2 = dir.join("df.png");
    let out = small(reap().arg("render"))
        .args(["--traversal", "depth-first", "--compact-paths", "none", "--compact-frontier", "none"])
        .arg("--out")
        .arg(&png2)
        .arg("--timings")
        .arg(&csv)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&png).unwrap(), std::fs::read(&png2).unwrap(), "depth-first + none differs");
    let text = std::fs::read_to_string(&csv).expect("csv");
    assert!(text.starts_with("frame,stage,bounce,level,ms"), "{text}");
    assert!(text.lines().next().is_some_and(|h| h.ends_with(",frame_ms,wall_ms")), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_render_agrees_across_algorithms_on_the_cpu() {
    let dir = temp("bench");
    let out = reap()
        .args(["bench", "render", "--backend", "cpu", "--scenes", "cornell", "--width", "32", "--height", "24"])
        .args(["--spp", "1", "--max-bounces", "4", "--algorithms", "none,lookback,atomic,horn,redzone-grid"])
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("run");
    assert!(out.status.success(), "reap bench render failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("bit-identical"), "{md}");
    assert!(md.contains("| Mrays/s (wall) | wall ms | Mrays/s (stages) | stages ms | gap |"), "{md}");
    assert!(md.contains("Clocks: over the configurations that ran, the wall clock exceeds"), "{md}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("csv");
    // Five choices per traversal and BVH kind (`--bvh binary,wide`), `lookback` and `atomic` both fused
    // and separate (`--fusion auto,off`).
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * (5 + 2), "{csv}");
    assert!(csv.lines().any(|l| l.contains(",lookback,fused,")), "{csv}");
    assert!(csv.lines().any(|l| l.contains(",lookback,separate,")), "{csv}");
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let header = r.headers().expect("header").clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name} in {header:?}"));
    let (wall, stages, gap) = (col("wall_ms"), col("frame_ms"), col("wall_gap_percent"));
    col("wall_mrays_per_s");
    for row in r.records() {
        let row = row.expect("row");
        let ms = |i: usize| row[i].parse::<f64>().unwrap_or_else(|_| panic!("{row:?}"));
        assert!(ms(wall) >= ms(stages) && ms(gap) >= 0.0, "{row:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_fails_before_rendering() {
    let dir = temp("bad");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--out".into(), "/nonexistent-dir/x.png".into()], "/nonexistent-dir/x.png"),
        (vec!["--out".into(), dir.join("x.bmp").display().to_string()], ".png or .exr"),
        (vec!["--timings".into(), dir.join("t.txt").display().to_string()], ".json or .csv"),
        (vec!["--scene".into(), "no-such-scene".into()], "cornell"),
        (vec!["--compact-paths".into(), "quicksort".into()], "lookback"),
        (vec!["--traversal".into(), "sideways".into()], "depth-first"),
        (vec!["--spp".into(), "0".into()], "--spp"),
        (vec!["--tonemap".into(), "filmic".into()], "clamp, aces or agx"),
        (vec!["--tonemap".into(), "aces".into(), "--out".into(), dir.join("x.exr").display().to_string()], "PNG only"),
        (vec!["--exposure".into(), "1".into(), "--out".into(), dir.join("x.exr").display().to_string()], "PNG only"),
    ];
    for (args, says) in cases {
        let out = small(reap().arg("render")).args(&args).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(err.contains(says), "{args:?}: expected `{says}` in:\n{err}");
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    }
    // A malformed OBJ names its file and line.
    let obj = dir.join("bad.obj");
    std::fs::write(&obj, "v 0 0 0\nv 1 0 0\nv 0 1 zero\nf 1 2 3\n").unwrap();
    let out = small(reap().arg("render")).arg("--scene").arg(&obj).output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bad.obj") && err.contains(":3"), "{err}");
    // Nothing was left behind.
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(files, vec![std::ffi::OsString::from("bad.obj")], "files left: {files:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tone_curves_and_exposure_change_the_png_and_clamp_is_the_default() {
    let dir = temp("tone");
    let render = |name: &str, extra: &[&str]| {
        let png = dir.join(name);
        let out = small(reap().arg("render")).args(extra).arg("--out").arg(&png).output().expect("run");
        assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        image::open(&png).expect("a PNG").to_rgb8()
    };
    let plain = render("plain.png", &[]);
    assert_eq!(plain, render("clamp.png", &["--tonemap", "clamp", "--exposure", "0"]), "clamp at 0 EV is the default");
    let mean = |img: &image::RgbImage| img.pixels().map(|p| p.0.iter().map(|&c| c as f64).sum::<f64>()).sum::<f64>();
    // Two stops up brightens the image; -2 EV darkens it.
    assert!(mean(&render("up.png", &["--exposure", "2"])) > mean(&plain));
    assert!(mean(&render("down.png", &["--exposure", "-2"])) < mean(&plain));
    for curve in ["aces", "agx"] {
        assert_ne!(render(&format!("{curve}.png"), &["--tonemap", curve]), plain, "{curve} changed nothing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
