//! Which light-transport estimator the shade stage uses: a typed choice, so
//! the CLI, the settings and the kernel argument (a u32, `ESTIMATOR_*` in
//! `kernels/trace/common.cuh`) name the same three things.

use crate::trace::{TraceError, TraceResult};

/// How direct light reaches a diffuse or glossy vertex. Camera rays and
/// delta (mirror, glass) bounces always count the emission they hit fully;
/// all three estimate the same paths and differ only in noise.
#[repr(u32)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// Next-event estimation and BSDF sampling, weighted by the power heuristic (β = 2).
    #[default]
    Mis = 0,
    /// Next-event estimation only: emitters hit after a non-delta bounce add nothing.
    Light = 1,
    /// BSDF sampling only: no shadow rays, every front-facing emitter hit counts fully.
    Bsdf = 2,
}

impl Estimator {
    pub const ALL: [Estimator; 3] = [Estimator::Mis, Estimator::Light, Estimator::Bsdf];
    pub fn name(self) -> &'static str {
        match self {
            Estimator::Mis => "mis",
            Estimator::Light => "light",
            Estimator::Bsdf => "bsdf",
        }
    }
}

impl std::str::FromStr for Estimator {
    type Err = TraceError;
    fn from_str(s: &str) -> TraceResult<Self> {
        super::parse_named(&Estimator::ALL, Estimator::name, "estimator", s)
    }
}

impl std::fmt::Display for Estimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimator_names_round_trip_and_unknown_names_fail() {
        for e in Estimator::ALL {
            assert_eq!(e.name().parse::<Estimator>().ok(), Some(e));
        }
        let err = "nee".parse::<Estimator>().expect_err("not an estimator");
        assert_eq!(err.to_string(), "unknown estimator `nee`: use mis, light or bsdf");
        // The traversal parses through the same helper.
        let err = "bfs".parse::<crate::trace::Traversal>().expect_err("not a traversal");
        assert_eq!(err.to_string(), "unknown traversal `bfs`: use breadth-first or depth-first");
    }
}
