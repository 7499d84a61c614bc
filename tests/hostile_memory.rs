//! Issue 15, items 2, 5, 9 and 10: huge sizes are refused before anything is
//! allocated (so these run in milliseconds), size-0 benchmarks are refused and
//! old results holding `null` still report, and verify refuses to run nothing.

mod binary;

use std::process::Output;

use binary::reap;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Fails with exit status 2 and an error containing every one of `want`.
fn refused(o: Output, want: &[&str]) {
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "stderr: {e}\nstdout: {}", String::from_utf8_lossy(&o.stdout));
    for w in want {
        assert!(e.contains(w), "`{w}` missing from: {e}");
    }
}

#[test]
fn item2_a_render_of_65535_squared_pixels_is_refused_before_allocating() {
    let dir = binary::temp_dir("hostile-memory", "render_huge");
    let o = reap()
        .args(["render", "--backend", "cpu", "--scene", "cornell", "--width", "65535", "--height", "65535"])
        .args(["--spp", "1", "--out"])
        .arg(dir.join("o.png"))
        .output()
        .expect("run");
    refused(
        o,
        &["an image of 65535x65535 pixels needs", "of host memory, more than the", "lower --width and --height"],
    );
}

#[test]
fn item2_verify_sizes_past_the_host_are_refused_before_any_case() {
    for size in ["1099511627776", "2^34"] {
        let o = reap().args(["verify", "--backend", "cpu", "--algorithm", "lookback", "--sizes", size]).output();
        refused(o.expect("run"), &["a verify case of", "elements needs", "lower --sizes"]);
    }
}

#[test]
fn item2_bench_compaction_at_2_pow_34_is_refused_before_measuring() {
    let o = reap().args(["bench", "compaction", "--backend", "cpu", "--sizes", "2^34", "--no-cub"]).output();
    refused(o.expect("run"), &["a benchmark of 17179869184 elements needs", "lower --sizes"]);
}

#[test]
fn item5_a_size_0_benchmark_is_refused() {
    let o = reap().args(["bench", "compaction", "--backend", "cpu", "--sizes", "0,1000", "--no-cub"]).output();
    refused(o.expect("run"), &["--sizes 0", "measures nothing"]);
}

#[test]
fn item10_verify_takes_sizes_as_bench_does() {
    let o = reap()
        .args(["verify", "--backend", "cpu", "--algorithm", "lookback", "--operations", "scan", "--sizes", "2^5"])
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(" passed, 0 failed"), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn item10_verify_that_would_check_nothing_is_an_error() {
    let o =
        reap().args(["verify", "--backend", "cpu", "--algorithm", "redzone-block", "--operations", "sort"]).output();
    refused(o.expect("run"), &["redzone-block implements none of the operations picked (sort)", "--algorithm"]);
}

// Issue 33: the second sweep.

#[test]
fn issue33_item3_frames_past_the_host_are_refused_not_aborted() {
    let o = reap().args(["collide", "--backend", "cpu", "--bodies", "10", "--frames", "4294967295"]).output();
    refused(o.expect("run"), &["the records of 4294967295 frames", "of host memory, more than the", "lower --frames"]);
}

#[test]
fn issue33_item3_a_huge_settle_keeps_no_records() {
    use std::io::BufRead;
    use std::process::Stdio;
    let dir = binary::temp_dir("hostile-memory", "settle");
    let mut child = reap()
        .args(["bench", "collide", "--backend", "cpu", "--bodies", "10", "--algorithms", "lookback"])
        .args(["--sorts", "fast", "--frames", "2", "--settle", "4294967295", "--out"])
        .arg(&dir)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let settling = lines.by_ref().map_while(Result::ok).find(|l| l.contains("settling for 4294967295 frames"));
    assert!(settling.is_some(), "reap ended before settling");
    // Settling that kept a record per frame aborted here, allocating them all.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let status = child.try_wait().expect("wait");
    let _ = child.kill();
    let _ = child.wait();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.is_none(), "settling ended ({status:?}) instead of stepping: {rest:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn issue33_item2_textures_past_the_memory_left_are_refused_not_aborted() {
    // Twelve distinct 4096x4096 textures keep 2.25 GiB as linear f32 RGB; under a 2 GiB
    // address-space limit the last ones cannot load: they must be refused with a warning
    // that says what to change, not abort the process.
    let dir = binary::temp_dir("hostile-memory", "textures");
    let png = image::RgbImage::from_pixel(4096, 4096, image::Rgb([200, 120, 40]));
    png.save(dir.join("t0.png")).expect("write t0.png");
    let (mut obj, mut mtl) = (String::from("mtllib m.mtl\n"), String::new());
    for i in 0..12 {
        if i > 0 {
            std::fs::copy(dir.join("t0.png"), dir.join(format!("t{i}.png"))).expect("copy");
        }
        mtl += &format!("newmtl m{i}\nKd 0.5 0.5 0.5\nmap_Kd t{i}.png\n");
        let x = i as f32;
        obj += &format!("v {x} 0 -3\nv {} 0 -3\nv {x} 1 -3\nvt 0 0\nvt 1 0\nvt 0 1\n", x + 1.0);
        let k = 3 * i + 1;
        obj += &format!("usemtl m{i}\nf {k}/{k} {}/{} {}/{}\n", k + 1, k + 1, k + 2, k + 2);
    }
    std::fs::write(dir.join("m.mtl"), mtl).unwrap();
    std::fs::write(dir.join("s.obj"), obj).unwrap();
    let script = "ulimit -v 2097152 && exec \"$0\" render --backend cpu --width 16 --height 16 --spp 1 \
                  --scene s.obj --out o.png";
    let o = std::process::Command::new("sh")
        .current_dir(&dir)
        .args(["-c", script, env!("CARGO_BIN_EXE_reap")])
        .output()
        .expect("run");
    let e = stderr(&o);
    assert!(o.status.success(), "status {:?}: {e}", o.status);
    assert!(e.contains("is not used") && e.contains("use smaller textures, or fewer distinct texture files"), "{e}");
    assert!(e.contains("address-space limit (ulimit -v)"), "{e}");
    assert!(dir.join("o.png").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
