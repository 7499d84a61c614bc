//! The peer's process, run as a stranger's: in a process group of its own that
//! is killed whole on every way out (its exit, the time limit, a signal to
//! reap), its stdout and stderr drained into bounded tails, its time limited.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use reap::bench::peers::driver::{Ended, Tail};

use crate::cli::interrupt;

/// How often the running peer is looked at: the most a signal or the time limit waits to act.
const POLL: Duration = Duration::from_millis(20);

/// How long the readers of its output are waited for once its group is dead: a process that left
/// the group may still hold a pipe, and its output is not worth a hang.
const DRAIN: Duration = Duration::from_secs(1);

/// Runs `command` to its end, for at most `timeout`, stopping early where a
/// signal asks reap to stop (the caller catches signals: see [`interrupt::catching`]).
pub fn run(command: &mut Command, timeout: Duration) -> Ended {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        // SAFETY: the closure runs between fork and exec; prctl is async-signal-safe and nothing allocates.
        #[cfg(target_os = "linux")]
        unsafe {
            command.pre_exec(|| {
                // Where reap is killed outright (SIGKILL: no handler runs), the kernel kills the peer.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Ended::NotStarted(e),
    };
    let output = Arc::new(Mutex::new(Tail::default()));
    let (done, drained) = mpsc::channel();
    let pipes: [Option<Box<dyn Read + Send>>; 2] = [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
    ];
    for pipe in pipes.into_iter().flatten() {
        let (output, done) = (Arc::clone(&output), done.clone());
        std::thread::spawn(move || {
            drain(pipe, &output);
            let _ = done.send(());
        });
    }
    drop(done);
    let group = child.id() as i32;
    let clock = Instant::now();
    let stop = interrupt::owning_group(group, || {
        loop {
            match child.try_wait() {
                Ok(None) => {}
                // Exited, or cannot be asked: wait() below says which.
                _ => break None,
            }
            if interrupt::stopped() {
                break Some(Stop::Interrupted);
            }
            if clock.elapsed() >= timeout {
                break Some(Stop::TimedOut);
            }
            std::thread::sleep(POLL);
        }
    });
    // Always, even after a clean exit: what the peer left running in its group goes with it.
    let _ = child.kill();
    kill_group(group);
    let status = child.wait();
    let deadline = Instant::now() + DRAIN;
    while drained.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_ok() {}
    let output = output.lock().map(|t| t.bytes()).unwrap_or_default();
    match (stop, status) {
        (Some(Stop::Interrupted), _) => Ended::Interrupted,
        (Some(Stop::TimedOut), _) => Ended::TimedOut { after: timeout, output },
        (None, Ok(status)) => Ended::Exited { status, output },
        (None, Err(e)) => Ended::NotStarted(e),
    }
}

/// Why the peer was stopped before it exited.
enum Stop {
    Interrupted,
    TimedOut,
}

/// Reads `pipe` to its end, keeping its last bytes in `output`.
fn drain(mut pipe: impl Read, output: &Mutex<Tail>) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if let Ok(mut tail) = output.lock() {
                    tail.push(&buf[..n]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Kills process group `group`; one already gone is no error.
fn kill_group(group: i32) {
    #[cfg(unix)]
    // SAFETY: kill() with a negative pid signals that process group; it touches no memory of ours.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = group;
}
