//! `reap launch --ranks N -- COMMAND…`: N processes of this reap, one rank
//! each, started as separate hosts start theirs: each is told its rank, the
//! ranks and rank 0's address in the environment, and meets the others there
//! (`reap::cluster`). On CUDA each takes its own GPU and NCCL joins them by
//! a unique id that rank 0 passes along. The launcher only starts, watches
//! and stops them: the first rank prints as itself, the others' lines carry
//! `[rank r]`. One rank that fails stops the rest, so none is left waiting
//! on a collective that will never complete. On several hosts each host runs
//! a launcher for its own ranks (`--world`, `--first-rank`), all pointing at
//! rank 0's host.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use reap::cluster::{MAX_RANKS, RANK_VAR, RANKS_VAR, RENDEZVOUS_VAR};

#[derive(clap::Args)]
pub struct LaunchArgs {
    /// Processes to start here, one rank each (with --backend cuda, one GPU each).
    #[arg(long)]
    ranks: usize,
    /// Ranks of the whole job, on every host [default: --ranks, all of them here].
    #[arg(long)]
    world: Option<usize>,
    /// The job's rank of this host's first process [default: 0]; its processes take the GPUs 0..--ranks.
    #[arg(long, default_value_t = 0)]
    first_rank: usize,
    /// Where rank 0 listens, host:port [default: a free port on 127.0.0.1; needed when --world is larger
    /// than --ranks, as rank 0's host and port].
    #[arg(long)]
    rendezvous: Option<String>,
    /// The reap command every rank runs, after `--` (e.g. `-- bench compaction --backend cuda`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// How long the other ranks get to end on their own after one failed.
const GRACE: Duration = Duration::from_secs(10);

pub fn run(args: LaunchArgs) -> Result<bool> {
    if std::env::var_os(RANKS_VAR).is_some() {
        anyhow::bail!("reap launch inside a rank ({RANKS_VAR} is set): launch from a plain shell");
    }
    if args.ranks == 0 || args.ranks > MAX_RANKS {
        anyhow::bail!("--ranks {} : give from 1 to {MAX_RANKS} processes", args.ranks);
    }
    if args.command.first().is_some_and(|c| c == "launch") {
        anyhow::bail!("reap launch -- launch …: give the command each rank runs, e.g. `-- verify --gpus 2`");
    }
    let world = args.world.unwrap_or(args.ranks);
    if world > MAX_RANKS || args.first_rank.checked_add(args.ranks).is_none_or(|end| end > world) {
        anyhow::bail!(
            "--first-rank {} and --ranks {} go past --world {world}: this host's ranks are first-rank .. \
             first-rank + ranks - 1, all below the job's {world}",
            args.first_rank,
            args.ranks
        );
    }
    let rendezvous = match args.rendezvous {
        Some(r) => {
            reap::cluster::Place::new(0, world, &r)?;
            r
        }
        None if world == args.ranks => free_loopback()?,
        None => anyhow::bail!(
            "--world {world} is larger than --ranks {}: the other hosts must find rank 0, so give --rendezvous \
             HOST:PORT (rank 0's host) on every host",
            args.ranks
        ),
    };
    let exe = std::env::current_exe().context("finding this reap's own path to start the ranks")?;
    let last = args.first_rank + args.ranks - 1;
    println!(
        "launching ranks {}..={last} of {world} of `reap {}`; rendezvous {rendezvous}",
        args.first_rank,
        args.command.join(" ")
    );
    crate::cli::interrupt::install();
    let mut children = Vec::with_capacity(args.ranks);
    let mut echoes = Vec::new();
    for local in 0..args.ranks {
        let rank = args.first_rank + local;
        let mut cmd = Command::new(&exe);
        cmd.args(&args.command)
            .env(RANK_VAR, rank.to_string())
            .env(RANKS_VAR, world.to_string())
            .env(RENDEZVOUS_VAR, &rendezvous)
            .env(crate::cli::ranks::LOCAL_RANK_VAR, local.to_string());
        if local > 0 {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        // The ranks share one process group of their own: a Ctrl-C reaches the launcher alone, which
        // passes exactly one stop on, and a signal that ends the launcher at once kills the group.
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(children.first().map_or(0, |c: &Child| c.id() as i32));
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                stop(&mut children);
                return Err(e).with_context(|| format!("starting rank {rank} ({})", exe.display()));
            }
        };
        if local > 0 {
            echoes.push(echo(rank, child.stdout.take(), false));
            echoes.push(echo(rank, child.stderr.take(), true));
        }
        children.push(child);
    }
    let group = children.first().map_or(0, |c| c.id() as i32);
    let statuses = crate::cli::interrupt::owning_group(group, || watch(&mut children));
    for e in echoes {
        let _ = e.join();
    }
    let mut ok = true;
    let mut could_not_run = None;
    for (local, status) in statuses.iter().enumerate() {
        let rank = args.first_rank + local;
        match status {
            Some(s) if s.success() => {}
            Some(s) => {
                ok = false;
                eprintln!("rank {rank}: {s}");
                if s.code() != Some(1) {
                    could_not_run.get_or_insert(rank);
                }
            }
            None => {
                ok = false;
                could_not_run.get_or_insert(rank);
                eprintln!("rank {rank}: stopped by the launcher after another rank failed");
            }
        }
    }
    match could_not_run {
        Some(rank) => anyhow::bail!("rank {rank} of {world} did not finish; its messages are above"),
        None => Ok(ok),
    }
}

/// A port on the loopback that was free a moment ago (the OS picks it).
fn free_loopback() -> Result<String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free loopback port for the rendezvous")?;
    Ok(l.local_addr()?.to_string())
}

/// Copies a rank's output line by line, each line marked with the rank.
fn echo<R: std::io::Read + Send + 'static>(
    rank: usize,
    from: Option<R>,
    to_stderr: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Some(from) = from else { return };
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            // A closed pipe on our side ends the echo quietly.
            let r = if to_stderr {
                writeln!(std::io::stderr(), "[rank {rank}] {line}")
            } else {
                writeln!(std::io::stdout(), "[rank {rank}] {line}")
            };
            if r.is_err() {
                break;
            }
        }
    })
}

/// Waits for every rank. A rank that fails, or a signal to the launcher,
/// stops the rest: asked first (SIGTERM), killed after [`GRACE`]. A rank's
/// status is `None` where the launcher had to kill it.
fn watch(children: &mut [Child]) -> Vec<Option<std::process::ExitStatus>> {
    let mut statuses: Vec<Option<std::process::ExitStatus>> = vec![None; children.len()];
    let mut killed = vec![false; children.len()];
    let mut asked: Option<Instant> = None;
    loop {
        for (i, c) in children.iter_mut().enumerate() {
            if statuses[i].is_none() && !killed[i] {
                if let Ok(Some(s)) = c.try_wait() {
                    statuses[i] = Some(s);
                }
            }
        }
        if statuses.iter().zip(&killed).all(|(s, k)| s.is_some() || *k) {
            return statuses;
        }
        let failed = statuses.iter().flatten().any(|s| !s.success());
        if asked.is_none() && (failed || crate::cli::interrupt::stopped()) {
            asked = Some(Instant::now());
            for (i, c) in children.iter().enumerate() {
                if statuses[i].is_none() {
                    terminate(c);
                }
            }
        }
        if asked.is_some_and(|t| t.elapsed() > GRACE) {
            for (i, c) in children.iter_mut().enumerate() {
                if statuses[i].is_none() {
                    let _ = c.kill();
                    let _ = c.wait();
                    killed[i] = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asks a rank to stop and keep what it has (reap's SIGTERM handling).
fn terminate(c: &Child) {
    #[cfg(unix)]
    // SAFETY: a signal to a child this process started and has not reaped.
    unsafe {
        libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
    }
    #[cfg(not(unix))]
    let _ = c;
}

/// Kills the ranks already started (one could not be).
fn stop(children: &mut [Child]) {
    for c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}
