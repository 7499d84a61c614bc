//! A compaction site of a workload (the tracer's live paths, the collision
//! demo's pair frontier): `none`, the baseline that leaves dead items in
//! place, or a catalog algorithm that selects on the site's backend.

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
