//! The one signal handler: SIGINT (Ctrl-C), SIGTERM (`timeout`, a CI cancel)
//! and SIGHUP ask a long command to stop and keep what it has measured; the
//! process then exits 128 + the signal, as a shell reports a killed command.
//! A second signal ends the process at once, except while a results file is
//! being written ([`while_writing`]): then it ends just after, so no
//! temporary is left behind and no file is left half-replaced.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// The signal that asked to stop, 0 while none has.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Bit 0: a results file is being written; the bits above: a second signal
/// that arrived meanwhile (0 for none). One word, so that the handler and the
/// writer agree on who ends the process without a lock.
static WRITING: AtomicU32 = AtomicU32::new(0);

/// From now on the first SIGINT, SIGTERM or SIGHUP sets [`stopped`] instead of
/// ending the process; a second one (of any of the three) ends it.
pub fn install() {
    #[cfg(unix)]
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid one; the handler only touches
        // atomics and calls signal() and raise(), which are async-signal-safe.
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

/// Ends the process by `signal`, as its default action does.
#[cfg(unix)]
fn die(signal: libc::c_int) {
    // SAFETY: restoring the default action and raising are async-signal-safe.
    // Inside the handler the signal is blocked, so it lands as the handler returns.
    unsafe {
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
