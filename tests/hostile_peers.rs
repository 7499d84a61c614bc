//! Issue 45, items 3, 4 and 7, and the rough edge of a reference no peer
//! needs: `bench render --peers` against a peer that floods its output, never
//! exits, is stopped by a signal, or hands back an image of NaN. The peer is a
//! fake $REAP_PYTHON shell script; reap must keep its rows, write its report,
//! kill the peer's whole process group and remove its temporary folder.

mod binary;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use binary::reap;

/// The tiny bench of tests/peers.rs: one configuration of rows, cornell at 32x24, the peer at 4 and
/// 16 spp, with `python` as $REAP_PYTHON and `dir/tmp` as $TMPDIR (where the peer's folder goes).
fn tiny_bench(dir: &Path, python: &Path) -> Command {
    bench_with_reference(dir, python, 64)
}

fn bench_with_reference(dir: &Path, python: &Path, reference_spp: u32) -> Command {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let mut cmd = reap();
    cmd.args(["bench", "render", "--scenes", "cornell", "--backend", "cpu", "--width", "32", "--height", "24"])
        .args(["--spp", "1", "--algorithms", "lookback", "--fusion", "auto", "--bvh", "wide", "--max-bounces", "2"])
        .args(["--peers", "mitsuba", "--peer-spp", "4,16", "--reference-spp", &reference_spp.to_string(), "--out"])
        .arg(dir.join("out"))
        .env("REAP_PYTHON", python)
        .env("TMPDIR", &tmp)
        .env("PEER_PID_FILE", dir.join("peer.pid"));
    cmd
}

/// An executable shell script `dir/name` holding `body`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write the fake peer");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// `child`'s output once it exits, or a failure (the child killed) past `limit`: a hang is a failure.
fn finish(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: reap still runs after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

fn run(mut cmd: Command, limit: Duration, what: &str) -> Output {
    use std::process::Stdio;
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run reap");
    finish(child, limit, what)
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().and_then(|s| s.split_whitespace().next()) != Some("Z"))
}

/// The peer's pid from its pid file, or `None` while it has not written it.
fn peer_pid(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join("peer.pid")).ok()?.trim().parse().ok()
}

/// The peer (a process of its group that the script started) is dead within a few seconds; it is
/// killed here otherwise, so that a failing test leaves nothing running.
fn assert_peer_dead(dir: &Path) {
    let pid = peer_pid(dir).expect("the fake peer wrote its pid");
    let start = Instant::now();
    while alive(pid) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(pid) {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        panic!("the peer's process {pid} outlived reap");
    }
}

fn assert_tmp_empty(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir.join("tmp")).expect("tmp").map(|e| e.expect("entry").path()).collect();
    assert!(left.is_empty(), "the peer's temporary folder is left behind: {left:?}");
}

fn peers_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("out/peers.json")).expect("peers.json");
    serde_json::from_str(&text).expect("JSON")
}

/// The bench succeeded, wrote its rows and report, and the peer's row says `why`.
fn assert_rows_kept_and_peer_skipped(dir: &Path, out: &Output, why: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the bench must survive its peer: {:?}\n{stderr}", out.status);
    for file in ["results.csv", "results.json", "report.md", "peers.csv"] {
        assert!(dir.join("out").join(file).is_file(), "{file} was not written");
    }
    let scene = &peers_json(dir)["scenes"][0];
    assert_eq!(scene["outcome"]["status"], "skipped", "{scene}");
    let said = scene["outcome"]["why"].as_str().unwrap_or_default();
    assert!(said.contains(why), "the peer's row should say `{why}`: {said}");
    assert!(said.len() < 2000, "the peer's row quotes its output whole: {} bytes", said.len());
}

/// Runs reap under an address-space limit of `kib` KiB (`ulimit -v`), so that output held whole
/// aborts it quickly instead of filling the machine.
fn limited(cmd: &Command, kib: u64) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\"")).arg(cmd.get_program()).args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            sh.env(key, value);
        }
    }
    sh
}

/// 3 GB of output, then an exit without any result: reap, limited to 2 GB, must hold only its tail.
fn flood(to: &str) {
    let dir = binary::temp_dir("hostile-peers", &format!("flood_{to}"));
    let redirect = if to == "stderr" { " >&2" } else { "" };
    let python = script(
        &dir,
        "python",
        &format!("echo $$ > \"$PEER_PID_FILE\"\nhead -c 3000000000 /dev/zero{redirect}\nexit 3"),
    );
    let out = run(limited(&tiny_bench(&dir, &python), 2_000_000), Duration::from_secs(120), "a flood");
    assert_rows_kept_and_peer_skipped(&dir, &out, "exited with exit status: 3: 65536 bytes of no text");
    assert_peer_dead(&dir);
    assert_tmp_empty(&dir);
}

#[test]
fn item3_a_peer_flooding_stdout_is_read_bounded_and_its_row_says_why() {
    flood("stdout");
}

#[test]
fn item3_a_peer_flooding_stderr_is_read_bounded_and_its_row_says_why() {
    flood("stderr");
}

/// A peer that never exits, with a child of its own in its process group.
const NEVER_EXITS: &str = "sleep 100000 &\necho $! > \"$PEER_PID_FILE\"\nwait";

#[test]
fn item4_a_peer_that_never_exits_times_out_and_is_killed_with_its_group() {
    let dir = binary::temp_dir("hostile-peers", "timeout");
    let python = script(&dir, "python", NEVER_EXITS);
    let mut cmd = tiny_bench(&dir, &python);
    cmd.args(["--peer-timeout", "2"]);
    let out = run(cmd, Duration::from_secs(120), "a peer that never exits");
    assert_rows_kept_and_peer_skipped(&dir, &out, "timed out after 2 s and was killed");
    assert_peer_dead(&dir);
    assert_tmp_empty(&dir);
}

#[test]
fn item4_a_signal_to_reap_kills_the_peer_and_removes_its_folder() {
    use std::process::Stdio;
    let dir = binary::temp_dir("hostile-peers", "signal");
    let python = script(&dir, "python", NEVER_EXITS);
    let child = tiny_bench(&dir, &python).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run reap");
    let start = Instant::now();
    while peer_pid(&dir).is_none() {
        assert!(start.elapsed() < Duration::from_secs(120), "the peer never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let out = finish(child, Duration::from_secs(20), "SIGTERM while the peer runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 15), "{stderr}");
    assert!(stderr.contains("stopped by a signal while mitsuba rendered"), "{stderr}");
    assert_peer_dead(&dir);
    assert_tmp_empty(&dir);
}

/// A peer that renders every image as NaN, with a well-formed mitsuba.json.
const NAN_IMAGES: &str = r#"echo $$ > "$PEER_PID_FILE"
while [ $# -gt 0 ]; do case "$1" in --out) out="$2";; --spp) spp="$2";; esac; shift; done
cps=""
for s in $(echo "$spp" | tr , ' '); do
  printf '\000\000\300\177%.0s' $(seq 2304) > "$out/mitsuba_$s.f32"
  cps="$cps{\"spp\":$s,\"wall_s\":0.1,\"warmup_s\":0.2,\"image\":\"mitsuba_$s.f32\",\"width\":32,\"height\":24},"
done
echo "{\"mitsuba\":\"fake\",\"variant\":\"llvm_ad_rgb\",\"load_s\":0.0,\"checkpoints\":[${cps%,}]}" > "$out/mitsuba.json""#;

#[test]
fn item7_an_all_nan_peer_image_skips_that_peer_and_keeps_every_row() {
    let dir = binary::temp_dir("hostile-peers", "nan");
    let python = script(&dir, "python", NAN_IMAGES);
    let out = run(tiny_bench(&dir, &python), Duration::from_secs(120), "NaN images");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("reference's mean radiance"), "reap's reference is blamed: {stderr}");
    assert_rows_kept_and_peer_skipped(&dir, &out, "image holds no finite pixel");
    assert_tmp_empty(&dir);
}

#[test]
fn rough_edge_without_a_peer_the_reference_is_not_rendered() {
    let dir = binary::temp_dir("hostile-peers", "no_reference");
    // A reference this large takes minutes on the CPU: only skipping it finishes in time.
    let cmd = bench_with_reference(&dir, &dir.join("no-python-here"), 1_000_000);
    let out = run(cmd, Duration::from_secs(60), "a reference no peer needs");
    assert_rows_kept_and_peer_skipped(&dir, &out, "no-python-here");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("reap's reference is not rendered"), "{stdout}");
    let scene = &peers_json(&dir)["scenes"][0];
    assert!(scene["reference_wall_s"].is_null() && scene["reap"].as_array().is_some_and(Vec::is_empty), "{scene}");
}
