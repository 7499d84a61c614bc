//! A frame's two clocks, and how the reports compare them.
//!
//! The wall clock is host time from a frame's start until its results are
//! complete (after the frame's end has waited for the device). The summed
//! stages are each stage's own time added up: device events on a GPU, host
//! time per stage on the CPU. The events do not see launch overhead, host
//! work between stages, or the host waiting for a count before it can size
//! the next launch; the gap between the two clocks is that time.

/// A duration in milliseconds, the unit every stage time and report uses.
pub fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What times a frame's stages, labelled `L`: host time on the CPU
/// ([`HostClock`]), device events on a GPU ([`crate::cuda_runtime::Timer`]). The
/// tracer's and the collider's engines each hand theirs out, so the stage
/// wrappers are written once, over this trait.
pub trait Clock<L> {
    /// Where a stage started.
    type Mark;
    type Error;
    /// Marks the start of a stage.
    fn start(&mut self) -> Result<Self::Mark, Self::Error>;
    /// Ends the stage `label` started at `mark`.
    fn stop(&mut self, label: L, mark: Self::Mark) -> Result<(), Self::Error>;
}

/// Runs `f` on `on` as the stage `label`, timed by the clock that `clock`
/// hands out: the engines' stage and level-stage wrappers, written once.
pub fn timed<S: ?Sized, L, C: Clock<L, Error: Into<E>>, E, R>(
    on: &mut S,
    clock: fn(&mut S) -> &mut C,
    label: L,
    f: impl FnOnce(&mut S) -> Result<R, E>,
) -> Result<R, E> {
    let mark = clock(on).start().map_err(Into::into)?;
    let r = f(on)?;
    clock(on).stop(label, mark).map_err(Into::into)?;
    Ok(r)
}

/// The CPU engines' clock: each stage's host time, in order.
#[derive(Debug)]
pub struct HostClock<L> {
    stages: Vec<(L, f64)>,
}

impl<L> Default for HostClock<L> {
    fn default() -> Self {
        HostClock { stages: Vec::new() }
    }
}

impl<L> HostClock<L> {
    pub fn clear(&mut self) {
        self.stages.clear();
    }
    /// The stages since the last clear or take, with their times in ms.
    pub fn take(&mut self) -> Vec<(L, f64)> {
        std::mem::take(&mut self.stages)
    }
}

impl<L> Clock<L> for HostClock<L> {
    type Mark = std::time::Instant;
    type Error = std::convert::Infallible;
    fn start(&mut self) -> Result<std::time::Instant, std::convert::Infallible> {
        Ok(std::time::Instant::now())
    }
    fn stop(&mut self, label: L, mark: std::time::Instant) -> Result<(), std::convert::Infallible> {
        self.stages.push((label, ms(mark.elapsed())));
        Ok(())
    }
}

/// Millions of items per second for `items` in `ms` (0 when no time passed).
pub fn millions_per_s(items: f64, ms: f64) -> f64 {
    if ms > 0.0 { items / (ms * 1e3) } else { 0.0 }
}

/// How far the wall clock exceeds the summed stages, in percent of the
/// latter (negative when it is below them); `None` without stage time.
pub fn gap_percent(wall_ms: f64, stages_ms: f64) -> Option<f64> {
    (stages_ms > 0.0 && wall_ms.is_finite()).then(|| 100.0 * (wall_ms - stages_ms) / stages_ms)
}

/// The gap as a table cell: `+14.3 %`, or `–` without stage time.
pub fn gap_cell(wall_ms: f64, stages_ms: f64) -> String {
    gap_percent(wall_ms, stages_ms).map_or_else(|| "–".into(), |g| format!("{g:+.1} %"))
}

/// The gap as a sentence for reports.
pub fn gap_sentence(wall_ms: f64, stages_ms: f64) -> String {
    match gap_percent(wall_ms, stages_ms) {
        None => "no stage time was recorded to compare the wall clock with".into(),
        Some(g) if g >= 0.0 => format!("the wall clock exceeds the summed stage times by {g:.1} %"),
        Some(g) => format!("the wall clock is {:.1} % below the summed stage times", -g),
    }
}

/// The two clocks over a bench's configurations that ran, each given as
/// (wall ms, summed stages ms): their means compared in a sentence, `None`
/// when none ran.
pub fn mean_gap_sentence(ran: impl IntoIterator<Item = (f64, f64)>) -> Option<String> {
    let ran: Vec<(f64, f64)> = ran.into_iter().collect();
    if ran.is_empty() {
        return None;
    }
    let n = ran.len() as f64;
    let wall = ran.iter().map(|r| r.0).sum::<f64>() / n;
    let stages = ran.iter().map(|r| r.1).sum::<f64>() / n;
    Some(format!("over the configurations that ran, {}", gap_sentence(wall, stages)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_is_relative_to_the_summed_stages() {
        assert_eq!(gap_percent(29.6, 25.9).map(|g| (g * 10.0).round() / 10.0), Some(14.3));
        assert_eq!(gap_percent(1.0, 0.0), None);
        assert_eq!(gap_cell(12.0, 10.0), "+20.0 %");
        assert_eq!(gap_cell(9.0, 10.0), "-10.0 %");
        assert_eq!(gap_cell(9.0, 0.0), "–");
        assert_eq!(gap_sentence(12.0, 10.0), "the wall clock exceeds the summed stage times by 20.0 %");
        assert_eq!(gap_sentence(9.0, 10.0), "the wall clock is 10.0 % below the summed stage times");
    }

    #[test]
    fn the_mean_gap_compares_the_means_of_what_ran() {
        assert_eq!(mean_gap_sentence([]), None);
        assert_eq!(
            mean_gap_sentence([(10.0, 10.0), (14.0, 10.0)]).as_deref(),
            Some("over the configurations that ran, the wall clock exceeds the summed stage times by 20.0 %")
        );
    }

    #[test]
    fn rates_need_time() {
        assert_eq!(millions_per_s(2e6, 1.0), 2000.0);
        assert_eq!(millions_per_s(5.0, 0.0), 0.0);
    }
}
