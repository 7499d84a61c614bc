//! Every call through which the host waits for the device, counted.
//!
//! A frame that runs on the device alone makes none of these between its start
//! and its end; [`SyncMark`] lets a test say so. Counted here: device → host
//! copies (to pageable memory they return once the copy is done), stream and
//! event synchronisation, reading event times (the [`Timer`](super::Timer)
//! waits once per read-back), and host → device copies from pageable memory
//! (the driver may wait before staging them).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DeviceRepr, PinnedHostSlice};

use super::{Result, driver_error};

static PROCESS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

/// Host waits on the device made by this process so far.
pub fn host_syncs() -> u64 {
    PROCESS.load(Ordering::Relaxed)
}

/// Host waits made by the calling thread so far: unlike [`host_syncs`], not
/// moved by other threads (tests run in parallel).
pub fn thread_host_syncs() -> u64 {
    THREAD.with(Cell::get)
}

/// Counts one host wait, then makes it. A wait that fails still counts: the
/// host asked to wait.
pub(super) fn waits<R>(wait: impl FnOnce() -> R) -> R {
    PROCESS.fetch_add(1, Ordering::Relaxed);
    THREAD.with(|t| t.set(t.get() + 1));
    wait()
}

/// The counts at one moment, to measure the waits made since.
#[derive(Clone, Copy, Debug)]
pub struct SyncMark {
    thread: u64,
    process: u64,
}

impl SyncMark {
    pub fn now() -> Self {
        SyncMark { thread: thread_host_syncs(), process: host_syncs() }
    }
    /// Waits this thread made since the mark (on the mark's thread).
    pub fn on_this_thread(&self) -> u64 {
        thread_host_syncs() - self.thread
    }
    /// Waits any thread made since the mark.
    pub fn in_process(&self) -> u64 {
        host_syncs() - self.process
    }
}

/// Copies a device range into a new vector; returns when the copy is done.
pub fn dtoh<T: DeviceRepr, S: DevicePtr<T>>(stream: &Arc<CudaStream>, src: &S, during: &'static str) -> Result<Vec<T>> {
    waits(|| stream.clone_dtoh(src)).map_err(driver_error(during))
}

/// Copies a device range into `dst` (pageable: returns when the copy is done).
pub fn dtoh_into<T: DeviceRepr, S: DevicePtr<T>>(
    stream: &Arc<CudaStream>,
    src: &S,
    dst: &mut [T],
    during: &'static str,
) -> Result<()> {
    waits(|| stream.memcpy_dtoh(src, dst)).map_err(driver_error(during))
}

/// Copies host data into a new device allocation. From pageable memory the
/// driver may wait for the stream before it stages the copy: counted.
pub fn htod<T: DeviceRepr>(stream: &Arc<CudaStream>, src: &[T], during: &'static str) -> Result<CudaSlice<T>> {
    waits(|| stream.clone_htod(src)).map_err(driver_error(during))
}

/// Waits for everything enqueued on `stream`.
pub fn synchronize(stream: &CudaStream, during: &'static str) -> Result<()> {
    waits(|| stream.synchronize()).map_err(driver_error(during))
}

/// Waits for the copies enqueued on `stream` into page-locked `buffer`, then
/// lends its contents (the viewer's hand-off). The wait is on the stream:
/// with event tracking off (gpu::Device), cudarc records no event of its own
/// for a copy into pinned memory, so `as_slice` alone would not wait.
pub fn pinned<'a, T: DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    stream: &CudaStream,
    buffer: &'a PinnedHostSlice<T>,
    during: &'static str,
) -> Result<&'a [T]> {
    waits(|| stream.synchronize()).map_err(driver_error(during))?;
    buffer.as_slice().map_err(driver_error(during))
}

/// Waits for `event` (the timer's read-back).
pub(super) fn wait_event(event: &CudaEvent, during: &'static str) -> Result<()> {
    waits(|| event.synchronize()).map_err(driver_error(during))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_wait_counts_once_on_its_thread_and_in_the_process() {
        let mark = SyncMark::now();
        assert_eq!(mark.on_this_thread(), 0);
        assert_eq!(waits(|| 7), 7);
        let failed: std::result::Result<(), &str> = waits(|| Err("the driver said no"));
        assert!(failed.is_err());
        assert_eq!(mark.on_this_thread(), 2, "a failed wait counts too");
        assert!(mark.in_process() >= 2);
    }

    #[test]
    fn another_threads_waits_leave_this_threads_count_alone() {
        let mark = SyncMark::now();
        let other = std::thread::spawn(|| {
            let m = SyncMark::now();
            for _ in 0..3 {
                waits(|| ());
            }
            m.on_this_thread()
        });
        assert_eq!(other.join().unwrap(), 3);
        assert_eq!(mark.on_this_thread(), 0);
        assert!(mark.in_process() >= 3, "the process count sees every thread");
    }
}
