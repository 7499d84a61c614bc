//! Progress of a long command. On a terminal, indicatif's bar; off one (a log
//! file, CI, a pipe) indicatif draws nothing, so a slow run would look hung:
//! there a plain line goes to stderr every few seconds instead.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Seconds between plain lines; `REAP_PROGRESS_SECONDS` sets another cadence.
const PLAIN_SECONDS: f64 = 5.0;

pub struct Progress {
    bar: ProgressBar,
    plain: Option<Plain>,
}

/// The thread that prints the plain lines: a line per period, from a clock
/// rather than from the work, so one slow step still shows the run alive.
struct Plain {
    done: Arc<AtomicU64>,
    /// Dropping it ends the thread at once.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// A bar of `total` steps drawn with `template`; off a terminal, lines
    /// such as `render: 12/64 spp, 8.2 s` (`label`, `unit`).
    pub fn new(total: u64, template: &str, label: &'static str, unit: &'static str) -> Progress {
        let bar = ProgressBar::new(total);
        bar.set_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()));
        let plain = (!std::io::stderr().is_terminal()).then(|| Plain::start(total, label, unit, period()));
        Progress { bar, plain }
    }

    pub fn set_message(&self, message: String) {
        self.bar.set_message(message);
    }

    pub fn inc(&self, steps: u64) {
        self.bar.inc(steps);
        if let Some(p) = &self.plain {
            p.done.fetch_add(steps, Ordering::Relaxed);
        }
    }

    pub fn finish_and_clear(self) {
        self.bar.finish_and_clear();
    }
}

fn period() -> Duration {
    let seconds = std::env::var("REAP_PROGRESS_SECONDS").ok().and_then(|s| s.parse::<f64>().ok());
    Duration::try_from_secs_f64(seconds.filter(|s| *s > 0.0).unwrap_or(PLAIN_SECONDS))
        .unwrap_or(Duration::from_secs_f64(PLAIN_SECONDS))
}

impl Plain {
    fn start(total: u64, label: &'static str, unit: &'static str, period: Duration) -> Plain {
        let done = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = mpsc::channel::<()>();
        let seen = done.clone();
        let start = Instant::now();
        let thread = std::thread::spawn(move || {
            // Only a timeout goes on: the sender dropped (or sent) means the work ended.
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                let n = seen.load(Ordering::Relaxed);
                eprintln!("{label}: {n}/{total} {unit}, {:.1} s", start.elapsed().as_secs_f64());
            }
        });
        Plain { done, stop: Some(stop), thread: Some(thread) }
    }
}

impl Drop for Plain {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
