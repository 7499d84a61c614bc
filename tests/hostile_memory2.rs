//! Issue 45, items 5, 6 and 8: a scene whose BVHs do not fit the memory left
//! is refused before either is built (not a panic inside obvhs); the viewer
//! refuses a size past the host's memory before allocating, as `render` does;
//! and an OBJ whose first MiB is comments or blank lines is OBJ.
//!
//! The BVH estimates are pinned here too: a counting allocator measures the
//! peak heap of both builds, which must stay under `reap::bvh`'s bytes per
//! triangle.

mod binary;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use binary::reap;

#[path = "common/counting.rs"]
mod counting;
use counting::peak_of as peak_above;

/// An OBJ of `n` small random triangles in a 10-unit cube: the BVH builds' hardest case (no
/// structure to exploit, the most nodes).
fn random_obj(path: &Path, n: usize) {
    let mut rng = fastrand::Rng::with_seed(45);
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    for _ in 0..n {
        let c = [rng.f32() * 10.0, rng.f32() * 10.0, rng.f32() * 10.0];
        for _ in 0..3 {
            let [x, y, z] = c.map(|c| c + rng.f32() * 0.1);
            writeln!(f, "v {x:.4} {y:.4} {z:.4}").expect("write");
        }
    }
    for i in 0..n {
        writeln!(f, "f {} {} {}", 3 * i + 1, 3 * i + 2, 3 * i + 3).expect("write");
    }
    f.flush().expect("write");
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `reap args…` under an address-space limit of `kib` KiB (`ulimit -v`).
fn reap_limited(kib: u64, args: &[&str]) -> Output {
    let reap = reap();
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(reap.get_program())
        .args(args)
        .output()
        .expect("run reap")
}

#[test]
fn item5_both_bvh_builds_stay_within_their_bytes_per_triangle() {
    let dir = binary::temp_dir("hostile-memory2", "bvh_bytes");
    let n = 200_000;
    random_obj(&dir.join("r.obj"), n);
    let scene = reap::scene::load(dir.join("r.obj")).expect("load");
    assert_eq!(scene.triangles.len(), n);
    let (tree, build) = peak_above(|| reap::bvh::build(&scene.triangles));
    let (packed, pack) = peak_above(|| reap::trace::layout::Packed::new(&scene, &tree));
    assert!(!packed.wide.nodes.is_empty());
    let (build, pack) = (build as f64 / n as f64, pack as f64 / n as f64);
    eprintln!("peak heap per triangle: binary build {build:.0} bytes, packing with the 8-wide build {pack:.0} bytes");
    assert!(build <= reap::bvh::BUILD_BYTES_PER_TRIANGLE as f64, "the binary build took {build:.0} bytes a triangle");
    assert!(pack <= reap::bvh::PACK_BYTES_PER_TRIANGLE as f64, "packing took {pack:.0} bytes a triangle");
    // The margin stays a margin, not a refusal of scenes that fit.
    assert!(2.0 * (build + pack) >= (reap::bvh::BUILD_BYTES_PER_TRIANGLE + reap::bvh::PACK_BYTES_PER_TRIANGLE) as f64);
}

#[test]
fn item5_a_scene_whose_bvhs_do_not_fit_is_refused_before_they_are_built() {
    let dir = binary::temp_dir("hostile-memory2", "bvh_limit");
    let obj = dir.join("r.obj");
    random_obj(&obj, 400_000);
    let png = dir.join("o.png");
    let args = ["render", "--backend", "cpu", "--width", "8", "--height", "8", "--spp", "1", "--scene"];
    let args = [&args[..], &[obj.to_str().expect("utf-8"), "--out", png.to_str().expect("utf-8")]].concat();
    let o = reap_limited(LIMIT_KIB, &args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(e.contains("building the binary and 8-wide BVHs of 400000 triangles needs"), "{e}");
    assert!(e.contains("raise ulimit -v"), "{e}");
    assert!(!png.exists());
}

/// An address space the 400,000-triangle scene loads in and builds its binary BVH in, but whose
/// 8-wide BVH does not fit: the old code panicked inside obvhs's build (bytemuck's allocation).
const LIMIT_KIB: u64 = 380_000;

#[test]
fn item6_the_viewer_refuses_a_size_past_the_host_before_allocating() {
    for size in ["65535", "20000"] {
        let start = std::time::Instant::now();
        let args = ["view", "--backend", "cpu", "--offscreen", "--frames", "1", "--width", size, "--height", size];
        // 8 GB of address space: 20000x20000 needs more whatever the machine.
        let o = reap_limited(8_000_000, &args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{size}: {e}");
        assert!(e.contains(&format!("a view of {size}x{size} pixels needs")), "{e}");
        assert!(e.contains("lower --width and --height"), "{e}");
        assert!(start.elapsed().as_secs_f64() < 10.0, "refused after {:?}", start.elapsed());
    }
}

/// Renders `obj` (one triangle after its lead-in) and expects success.
fn renders(dir: &Path, name: &str, lead: &[u8]) {
    let obj = dir.join(format!("{name}.obj"));
    let mut bytes = lead.to_vec();
    bytes.extend_from_slice(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    std::fs::write(&obj, bytes).expect("write");
    let png = dir.join(format!("{name}.png"));
    let o = reap()
        .args(["render", "--backend", "cpu", "--width", "8", "--height", "8", "--spp", "1", "--scene"])
        .arg(&obj)
        .arg("--out")
        .arg(&png)
        .output()
        .expect("run reap");
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    assert!(png.is_file(), "{name}");
}

#[test]
fn item8_comments_and_blank_lines_before_the_first_statement_are_obj() {
    let dir = binary::temp_dir("hostile-memory2", "comments");
    let licence = "# Permission is hereby granted, free of charge, to any person obtaining a copy\n".repeat(30_000);
    renders(&dir, "licence", licence.as_bytes());
    renders(&dir, "blank", &vec![b'\n'; 2_000_000]);
    let mut long = vec![b'#'; 50_000_000];
    long.push(b'\n');
    renders(&dir, "long_comment", &long);
}

#[test]
fn item8_text_that_is_not_obj_is_still_refused() {
    let dir = binary::temp_dir("hostile-memory2", "prose");
    let obj = dir.join("notes.obj");
    std::fs::write(&obj, "This is a text file, not a model.\n".repeat(60_000)).expect("write");
    let o = reap()
        .args(["render", "--backend", "cpu", "--width", "8", "--height", "8", "--spp", "1", "--scene"])
        .arg(&obj)
        .arg("--out")
        .arg(dir.join("o.png"))
        .output()
        .expect("run reap");
    assert!(stderr(&o).contains("is not OBJ text"), "{}", stderr(&o));
}
