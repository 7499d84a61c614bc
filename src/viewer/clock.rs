//! Where a viewer frame's time goes: the engine's stages, handing its image
//! to the display (converting it to 8 bits and reading it back where the
//! engine is a GPU, then uploading it; the bodies in collision mode), the
//! overlay, and presenting. `reap view --frames N` prints the breakdown at
//! exit, which is how the frame rate in the README is measured.

use std::time::Duration;

/// The parts of one window frame, in the order they run.
pub const PARTS: [&str; 4] = ["render", "hand-off", "overlay", "present"];

#[derive(Clone, Debug, Default)]
pub struct FrameClock {
    /// Per window frame: the interval since the previous frame, and each part's wall time.
    frames: Vec<(Duration, [Duration; 4])>,
    /// Per engine frame: its stages summed in ms (device events on a GPU),
    /// and its wall clock in ms (from its start until its results are complete).
    engine_ms: Vec<(f64, f64)>,
}

/// Means over the measured frames.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockSummary {
    pub frames: usize,
    pub fps: f64,
    pub interval_ms: f64,
    pub parts_ms: [f64; 4],
    /// The engine's frames: stages summed, and wall clock.
    pub engine_ms: f64,
    pub engine_wall_ms: f64,
}

impl FrameClock {
    pub fn record(&mut self, interval: Duration, parts: [Duration; 4]) {
        self.frames.push((interval, parts));
    }

    pub fn record_engine(&mut self, stages_ms: f64, wall_ms: f64) {
        self.engine_ms.push((stages_ms, wall_ms));
    }

    /// Means over every frame after the first `skip` (window creation,
    /// kernel compilation and first uploads make those slow).
    pub fn summary(&self, skip: usize) -> Option<ClockSummary> {
        let f = self.frames.get(skip..).filter(|f| !f.is_empty())?;
        let n = f.len() as f64;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let interval_ms = f.iter().map(|(i, _)| ms(*i)).sum::<f64>() / n;
        let mut parts_ms = [0.0; 4];
        for (_, p) in f {
            for (sum, d) in parts_ms.iter_mut().zip(p) {
                *sum += ms(*d) / n;
            }
        }
        let e = self.engine_ms.get(skip.min(self.engine_ms.len())..).unwrap_or(&[]);
        let mean =
            |f: fn(&(f64, f64)) -> f64| if e.is_empty() { 0.0 } else { e.iter().map(f).sum::<f64>() / e.len() as f64 };
        Some(ClockSummary {
            frames: f.len(),
            fps: if interval_ms > 0.0 { 1e3 / interval_ms } else { 0.0 },
            interval_ms,
            parts_ms,
            engine_ms: mean(|e| e.0),
            engine_wall_ms: mean(|e| e.1),
        })
    }
}

impl std::fmt::Display for ClockSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "viewer: {:.1} fps over {} frames ({:.2} ms per frame:", self.fps, self.frames, self.interval_ms)?;
        for (name, ms) in PARTS.iter().zip(self.parts_ms) {
            write!(f, " {name} {ms:.2}")?;
        }
        write!(
            f,
            "; the engine's frames {:.2} ms by wall clock, their stages {:.2} ms: {})",
            self.engine_wall_ms,
            self.engine_ms,
            crate::clocks::gap_sentence(self.engine_wall_ms, self.engine_ms)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_skips_the_warm_up_and_averages_the_rest() {
        let mut c = FrameClock::default();
        let ms = Duration::from_millis;
        c.record(ms(500), [ms(400), ms(50), ms(30), ms(20)]);
        c.record_engine(400.0, 420.0);
        for _ in 0..4 {
            c.record(ms(10), [ms(4), ms(2), ms(3), ms(1)]);
            c.record_engine(3.5, 3.7);
        }
        let s = c.summary(1).expect("frames after the warm-up");
        assert_eq!(s.frames, 4);
        assert!((s.fps - 100.0).abs() < 1e-9);
        assert!((s.parts_ms[0] - 4.0).abs() < 1e-9 && (s.parts_ms[3] - 1.0).abs() < 1e-9);
        assert!((s.engine_ms - 3.5).abs() < 1e-9 && (s.engine_wall_ms - 3.7).abs() < 1e-9);
        assert!(s.to_string().contains("3.70 ms by wall clock, their stages 3.50 ms"), "{s}");
        assert!(c.summary(5).is_none());
    }
}
