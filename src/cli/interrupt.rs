//! The one signal handler: SIGINT (Ctrl-C), SIGTERM (`timeout`, a CI cancel)
//! and SIGHUP ask a long command to stop and keep what it has measured; the
//! process then exits 128 + the signal, as a shell reports a killed command.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that asked to stop, 0 while none has.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// From now on the first SIGINT, SIGTERM or SIGHUP sets [`stopped`] instead of
/// ending the process; a second one of the same kind ends it as usual.
pub fn install() {
    #[cfg(unix)]
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid one; the handler only stores
        // into an atomic, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
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
    RECEIVED.store(signal, Ordering::SeqCst);
}

/// Whether a signal asked the running command to stop.
pub fn stopped() -> bool {
    received().is_some()
}

/// The signal that asked to stop, if one did.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|s| *s != 0)
}
