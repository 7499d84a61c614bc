//! The one signal handler: SIGINT (Ctrl-C), SIGTERM (`timeout`, a CI cancel)
//! and SIGHUP ask a long command to stop and keep what it has measured; the
//! process then exits 128 + the signal, as a shell reports a killed command.
//! A second signal ends the process at once, except while a results file is
//! being written ([`while_writing`]): then it ends just after, so no
//! temporary is left behind and no file is left half-replaced.
//!
//! A child process reap owns (the bench's peer renderer) runs in a process
//! group of its own, registered with [`owning_group`]: a signal that ends reap
//! at once kills that group first, so it is never orphaned.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// The signal that asked to stop, 0 while none has.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Bit 0: a results file is being written; the bits above: a second signal
/// that arrived meanwhile (0 for none). One word, so that the handler and the
/// writer agree on who ends the process without a lock.
static WRITING: AtomicU32 = AtomicU32::new(0);

/// The process group of a child that must die with reap (0 while none).
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

#[cfg(unix)]
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// From now on the first SIGINT, SIGTERM or SIGHUP sets [`stopped`] instead of
/// ending the process; a second one (of any of the three) ends it.
pub fn install() {
    #[cfg(unix)]
    for signal in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid one; the handler only touches
        // atomics and calls signal(), kill() and raise(), which are async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    // Elsewhere only Ctrl-C is caught; it reports as SIGINT does on unix.
    #[cfg(not(unix))]
    let _ = ctrlc::set_handler(|| RECEIVED.store(2, Ordering::SeqCst));
}

/// Runs `f` with the handler of [`install`] and restores the signals' earlier
/// actions after: a command that does not watch [`stopped`] catches signals
/// only while `f` (which does) runs. The caller checks [`stopped`] after.
pub fn catching<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(unix)]
    {
        // SAFETY: a zeroed sigaction is valid to be overwritten by sigaction().
        let mut before: [libc::sigaction; 3] = unsafe { std::mem::zeroed() };
        for (signal, old) in SIGNALS.into_iter().zip(&mut before) {
            // SAFETY: reads the current action into a valid sigaction.
            unsafe { libc::sigaction(signal, std::ptr::null(), old) };
        }
        install();
        let result = f();
        for (signal, old) in SIGNALS.into_iter().zip(&before) {
            // SAFETY: puts back an action read above.
            unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) };
        }
        result
    }
    #[cfg(not(unix))]
    {
        install();
        f()
    }
}

/// Runs `f` while process group `group` is reap's to kill if a second
/// signal ends reap at once (a first one is `f`'s to handle).
pub fn owning_group<R>(group: i32, f: impl FnOnce() -> R) -> R {
    CHILD_GROUP.store(group, Ordering::SeqCst);
    let result = f();
    CHILD_GROUP.store(0, Ordering::SeqCst);
    result
}

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    if RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        return;
    }
    // A second signal: leave it to a writer that is busy, else end now.
    let mut state = WRITING.load(Ordering::SeqCst);
    while state & 1 == 1 {
        match WRITING.compare_exchange(state, 1 | (signal as u32) << 1, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return,
            Err(now) => state = now,
        }
    }
    die(signal);
}

/// Ends the process by `signal`, as its default action does, killing an
/// owned child's process group first.
#[cfg(unix)]
fn die(signal: libc::c_int) {
    let group = CHILD_GROUP.load(Ordering::SeqCst);
    // SAFETY: kill(), restoring the default action and raising are async-signal-safe.
    // Inside the handler the signal is blocked, so it lands as the handler returns.
    unsafe {
        if group > 0 {
            libc::kill(-group, libc::SIGKILL);
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Runs `write` (a results file's write) to its end even if a second signal
/// comes meanwhile; that signal then ends the process as `write` returns.
pub fn while_writing<R>(write: impl FnOnce() -> R) -> R {
    WRITING.store(1, Ordering::SeqCst);
    let result = write();
    let pending = WRITING.swap(0, Ordering::SeqCst) >> 1;
    #[cfg(unix)]
    if pending != 0 {
        die(pending as libc::c_int);
    }
    // Elsewhere no second signal is caught: nothing is ever pending.
    #[cfg(not(unix))]
    let _ = pending;
    result
}

/// Whether a signal asked the running command to stop.
pub fn stopped() -> bool {
    received().is_some()
}

/// The signal that asked to stop, if one did.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|s| *s != 0)
}
