//! A compaction site of a workload (the tracer's live paths, the collision
//! demo's pair frontier): `none`, the baseline that leaves dead items in
//! place, or a catalog algorithm that selects on the site's backend; and how
//! a site runs it: fused into the producer, or as a separate pass after it.

use crate::compaction::{Algorithm, Backend, Operation};

/// What a compaction site does with dead items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compaction {
    None,
    With(Algorithm),
}

/// A site flag named something the backend cannot run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SiteError(pub String);

impl Compaction {
    pub fn name(self) -> &'static str {
        match self {
            Compaction::None => "none",
            Compaction::With(a) => a.name(),
        }
    }

    /// Checks that `s` is `none` or a catalog name, before any backend is
    /// open or any input loaded; [`Compaction::parse`] later checks the backend runs it.
    pub fn check_name(s: &str, site: &str) -> Result<(), SiteError> {
        if s == "none" || s.parse::<Algorithm>().is_ok() {
            return Ok(());
        }
        let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
        Err(SiteError(format!("--{site}: unknown algorithm `{s}`; use `none` or one of: {}", names.join(", "))))
    }

    /// `none` or a catalog name that selects on `backend`; `site` names the
    /// flag in the error.
    pub fn parse<B: Backend>(s: &str, backend: &B, site: &str) -> Result<Self, SiteError> {
        if s == "none" {
            return Ok(Compaction::None);
        }
        let a: Algorithm = s.parse().map_err(|_| {
            SiteError(format!("--{site}: unknown algorithm `{s}`; use one of: {}", Self::choices(backend).join(", ")))
        })?;
        if !a.supports(Operation::Select) || !backend.runs(a) {
            return Err(SiteError(format!(
                "--{site}: `{s}` does not select on the {} backend; use one of: {}",
                backend.kind().name(),
                Self::choices(backend).join(", ")
            )));
        }
        Ok(Compaction::With(a))
    }

    /// Every choice a site offers on `backend`: `none`, then the catalog.
    pub fn choices<B: Backend>(backend: &B) -> Vec<&'static str> {
        let algs = Algorithm::ALL.iter().filter(|a| a.supports(Operation::Select) && backend.runs(**a));
        std::iter::once("none").chain(algs.map(|a| a.name())).collect()
    }
}

impl serde::Serialize for Compaction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// How a site ran its algorithm: `Fused`, inside the kernel that produced the
/// items (single-pass algorithms, [`Algorithm::fuses`], on a backend with
/// fused sites), or `Separate`, the producer writing every slot, dead ones
/// included, and the library's pass compacting them after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SitePath {
    Fused,
    Separate,
}

impl SitePath {
    pub fn name(self) -> &'static str {
        match self {
            SitePath::Fused => "fused",
            SitePath::Separate => "separate",
        }
    }
}

/// Whether a workload may fuse its sites: `Auto` fuses every algorithm that
/// fuses on the backend, `Off` runs every one as a separate pass (to measure
/// what fusion is worth).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fusion {
    #[default]
    Auto,
    Off,
}

impl Fusion {
    pub const ALL: [Fusion; 2] = [Fusion::Auto, Fusion::Off];
    pub fn name(self) -> &'static str {
        match self {
            Fusion::Auto => "auto",
            Fusion::Off => "off",
        }
    }
    /// The path a site of `compaction` takes on a backend that fuses
    /// (`backend_fuses`) under this setting; `None` for `Compaction::None`.
    pub fn path(self, compaction: Compaction, backend_fuses: bool) -> Option<SitePath> {
        match compaction {
            Compaction::None => None,
            Compaction::With(a) if self == Fusion::Auto && backend_fuses && a.fuses() => Some(SitePath::Fused),
            Compaction::With(_) => Some(SitePath::Separate),
        }
    }
}

impl std::str::FromStr for Fusion {
    type Err = SiteError;
    fn from_str(s: &str) -> Result<Self, SiteError> {
        Fusion::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| SiteError(format!("--fusion: unknown value `{s}`; use auto or off")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_single_pass_algorithms_fuse_and_only_under_auto() {
        let fused: Vec<_> = Algorithm::ALL.iter().filter(|a| a.fuses()).map(|a| a.name()).collect();
        assert_eq!(fused, ["chained", "lookback", "atomic"]);
        let la = Compaction::With(Algorithm::Lookback);
        assert_eq!(Fusion::Auto.path(la, true), Some(SitePath::Fused));
        assert_eq!(Fusion::Auto.path(la, false), Some(SitePath::Separate));
        assert_eq!(Fusion::Off.path(la, true), Some(SitePath::Separate));
        assert_eq!(Fusion::Auto.path(Compaction::With(Algorithm::Blelloch), true), Some(SitePath::Separate));
        assert_eq!(Fusion::Auto.path(Compaction::None, true), None);
        assert_eq!("off".parse::<Fusion>().unwrap(), Fusion::Off);
        assert!("on".parse::<Fusion>().unwrap_err().to_string().contains("auto or off"));
    }
}
