//! Frames recorded once and replayed (CUDA graphs, [`crate::cuda_runtime::graph`]):
//! the typed choice, how a frame reached the device, and the keys that say
//! when a recorded frame still fits. Here, not under `cuda_runtime/`, because the
//! settings, reports and drivers that name them build without CUDA. Why a
//! frame can be a graph at all is in [`crate::frontier`]'s module doc.

/// Whether a GPU engine records a frame's launches as one CUDA graph and
/// replays it: `Auto` captures the second frame of a configuration and
/// replays it while nothing a launch depends on changes; `Off` enqueues
/// every launch from the host each frame (to measure what the graph is worth).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Graphs {
    #[default]
    Auto,
    Off,
}

impl Graphs {
    pub const ALL: [Graphs; 2] = [Graphs::Auto, Graphs::Off];
    pub fn name(self) -> &'static str {
        match self {
            Graphs::Auto => "auto",
            Graphs::Off => "off",
        }
    }
}

impl std::str::FromStr for Graphs {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Graphs::ALL.into_iter().find(|g| g.name() == s).ok_or_else(|| format!("unknown value `{s}`; use auto or off"))
    }
}

/// How a frame's work reached the device: each launch enqueued by the host
/// (`Streamed`), recorded into a graph and then launched (`Captured`), or a
/// recorded graph launched again (`Replayed`: the host ran no stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FramePath {
    Streamed,
    Captured,
    Replayed,
}

impl FramePath {
    pub fn name(self) -> &'static str {
        match self {
            FramePath::Streamed => "streamed",
            FramePath::Captured => "captured",
            FramePath::Replayed => "replayed",
        }
    }

    /// How a run of frames reached the device, for a report's cell: the one
    /// path they all took, `k/n replayed` when they differ, empty on an
    /// engine without graphs.
    pub fn summary(paths: impl IntoIterator<Item = Option<FramePath>>) -> String {
        let paths: Vec<FramePath> = paths.into_iter().flatten().collect();
        match paths.first() {
            None => String::new(),
            Some(&p) if paths.iter().all(|&q| q == p) => p.name().into(),
            Some(_) => {
                let replayed = paths.iter().filter(|&&p| p == FramePath::Replayed).count();
                format!("{replayed}/{} replayed", paths.len())
            }
        }
    }
}

/// A frame's key ([`Graphs`]) from the parts of its configuration.
pub fn key(parts: impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// A process-wide unique id for a set of buffers a frame's key names: new
/// whenever a workload makes one, so no graph recorded on the old ones replays.
pub fn fresh_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_choices_parse_and_frame_paths_summarise() {
        assert_eq!("auto".parse::<Graphs>(), Ok(Graphs::Auto));
        assert_eq!("off".parse::<Graphs>(), Ok(Graphs::Off));
        assert!("on".parse::<Graphs>().unwrap_err().contains("use auto or off"));
        use FramePath::{Captured, Replayed, Streamed};
        assert_eq!(FramePath::summary([None, None]), "");
        assert_eq!(FramePath::summary([Some(Replayed); 3]), "replayed");
        assert_eq!(FramePath::summary([Some(Streamed), Some(Captured), Some(Replayed)]), "1/3 replayed");
    }
}
