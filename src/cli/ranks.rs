//! Ranks as processes in the binary: the place this process was given
//! (`REAP_RANK`, `REAP_RANKS`, `REAP_RENDEZVOUS`; `reap launch` sets them, a
//! job on several hosts sets them as torchrun or mpirun would), the one
//! rendezvous a process makes, and which GPU a rank takes.

use std::sync::{Arc, OnceLock};

use anyhow::Result;

use reap::cluster::{Cluster, Place};

/// Picks the GPU of a rank on its host instead of `rank % GPUs on the host`.
pub const LOCAL_RANK_VAR: &str = "REAP_LOCAL_RANK";

/// The place the environment gives, read once (`None`: one process holds every rank).
pub fn place() -> Result<Option<&'static Place>> {
    static PLACE: OnceLock<std::result::Result<Option<Place>, String>> = OnceLock::new();
    match PLACE.get_or_init(|| Place::from_env().map_err(|e| e.to_string())) {
        Ok(p) => Ok(p.as_ref()),
        Err(e) => anyhow::bail!("{e}"),
    }
}

/// This process's channel to the other ranks, made on first use (every rank
/// must call it: it waits for all of them).
pub fn cluster() -> Result<Option<Arc<Cluster>>> {
    static CLUSTER: OnceLock<Arc<Cluster>> = OnceLock::new();
    let Some(place) = place()? else { return Ok(None) };
    if let Some(c) = CLUSTER.get() {
        return Ok(Some(c.clone()));
    }
    let c = Arc::new(Cluster::join(place.clone())?);
    Ok(Some(CLUSTER.get_or_init(|| c).clone()))
}

/// Whether this process writes reports: it holds rank 0, or every rank.
pub fn leads() -> bool {
    place().ok().flatten().is_none_or(|p| p.rank == 0)
}

/// The CUDA device this process's rank takes among `count`: `REAP_LOCAL_RANK`
/// where set, else the rank modulo the host's GPUs (one process per GPU).
pub fn device_of(place: &Place, count: usize) -> Result<usize> {
    let local = match std::env::var(LOCAL_RANK_VAR) {
        Ok(v) => v.trim().parse::<usize>().map_err(|_| anyhow::anyhow!("{LOCAL_RANK_VAR}={v:?} is not a number"))?,
        Err(_) => place.rank % count.max(1),
    };
    if local >= count {
        anyhow::bail!(
            "{LOCAL_RANK_VAR}={local}, and this host has {count} GPUs (`nvidia-smi -L`); give each process its own \
             GPU from 0 to {}",
            count.saturating_sub(1)
        );
    }
    Ok(local)
}

/// `--gpus` beside a place: the ranks are the processes, so `--gpus` is left
/// out (1) or names their number.
pub fn check_gpus(place: &Place, gpus: usize) -> Result<()> {
    if gpus != 1 && gpus != place.ranks {
        anyhow::bail!(
            "--gpus {gpus} with {}={}: each process is one rank, so the command shards over {} ranks; drop --gpus \
             or give --gpus {}",
            reap::cluster::RANKS_VAR,
            place.ranks,
            place.ranks,
            place.ranks
        );
    }
    Ok(())
}
