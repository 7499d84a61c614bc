//! Ranks as processes, started the way separate hosts start them: each
//! process is told its rank, the number of ranks and a rendezvous address
//! (`REAP_RANK`, `REAP_RANKS`, `REAP_RENDEZVOUS`, as torchrun or an MPI
//! launcher would set them), rank 0 listens there and every other rank
//! connects. What comes of it is a [`Cluster`]: a host channel in a star
//! around rank 0 that carries what is small and rare (the NCCL unique id, a
//! barrier before a timed call, each rank's times, CPU ranks' words), while
//! the data of a GPU rank moves through NCCL.
//!
//! Nothing here waits forever: the rendezvous has a deadline
//! (`REAP_RENDEZVOUS_TIMEOUT`, seconds), a rank that dies closes its socket
//! (the others fail at once), and a read waits at most [`READ_TIMEOUT`].

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const RANK_VAR: &str = "REAP_RANK";
pub const RANKS_VAR: &str = "REAP_RANKS";
pub const RENDEZVOUS_VAR: &str = "REAP_RENDEZVOUS";
pub const TIMEOUT_VAR: &str = "REAP_RENDEZVOUS_TIMEOUT";

/// How long the rendezvous waits for every rank by default.
pub const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest a rank waits for another's message: a peer that is alive but
/// stuck this long is an error, not a hang.
pub const READ_TIMEOUT: Duration = Duration::from_secs(900);
/// The most ranks a cluster takes.
pub const MAX_RANKS: usize = 1024;
/// The most bytes one message may carry (a corrupt length is refused, not allocated).
const MAX_MESSAGE: u64 = 1 << 36;
/// A connecting rank's first bytes, so that a stray connection is refused.
const HELLO: &[u8; 8] = b"reap-rk1";
/// How long rank 0 waits for a connection's hello before dropping it.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{what}: {how}")]
    Settings { what: String, how: String },
    #[error("rank {rank}: {during} (rendezvous {address}): {source}")]
    Io { rank: usize, during: &'static str, address: String, source: std::io::Error },
    #[error(
        "rank {rank}: the rendezvous at {address} did not complete within {secs} s ({missing}); start every \
         rank with the same {RANKS_VAR} and {RENDEZVOUS_VAR}, or raise {TIMEOUT_VAR}"
    )]
    Timeout { rank: usize, address: String, secs: u64, missing: String },
    #[error("rank {rank}: {what}")]
    Protocol { rank: usize, what: String },
}

pub type ClusterResult<T> = std::result::Result<T, ClusterError>;

/// Where this process stands among the ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub rank: usize,
    pub ranks: usize,
    /// `host:port` where rank 0 listens.
    pub rendezvous: String,
    /// How long the rendezvous waits.
    pub timeout: Duration,
}

impl Place {
    pub fn new(rank: usize, ranks: usize, rendezvous: &str) -> ClusterResult<Place> {
        let bad = |what: String, how: &str| Err(ClusterError::Settings { what, how: how.into() });
        if ranks == 0 || ranks > MAX_RANKS {
            return bad(format!("{RANKS_VAR}={ranks}"), &format!("give from 1 to {MAX_RANKS} ranks"));
        }
        if rank >= ranks {
            return bad(format!("{RANK_VAR}={rank} with {RANKS_VAR}={ranks}"), "ranks count from 0 to ranks - 1");
        }
        if rendezvous.rsplit_once(':').is_none_or(|(_, p)| p.parse::<u16>().is_err()) {
            return bad(
                format!("{RENDEZVOUS_VAR}={rendezvous:?} is not host:port"),
                "give rank 0's address and a free port, e.g. 127.0.0.1:29500",
            );
        }
        Ok(Place { rank, ranks, rendezvous: rendezvous.into(), timeout: RENDEZVOUS_TIMEOUT })
    }

    /// The place the environment gives (`None` when `REAP_RANKS` is unset);
    /// `get` reads a variable.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> ClusterResult<Option<Place>> {
        let Some(ranks) = get(RANKS_VAR) else {
            return match get(RANK_VAR) {
                Some(_) => Err(ClusterError::Settings {
                    what: format!("{RANK_VAR} is set and {RANKS_VAR} is not"),
                    how: format!("set {RANKS_VAR} (how many ranks) and {RENDEZVOUS_VAR} (rank 0's host:port) too"),
                }),
                None => Ok(None),
            };
        };
        let number = |var: &str, text: &str| {
            text.trim().parse::<usize>().map_err(|_| ClusterError::Settings {
                what: format!("{var}={text:?} is not a number"),
                how: "give a whole number".into(),
            })
        };
        let ranks = number(RANKS_VAR, &ranks)?;
        let missing = |var: &str| ClusterError::Settings {
            what: format!("{RANKS_VAR} is set and {var} is not"),
            how: format!("each process needs {RANK_VAR}, {RANKS_VAR} and {RENDEZVOUS_VAR} (`reap launch` sets them)"),
        };
        let rank = number(RANK_VAR, &get(RANK_VAR).ok_or_else(|| missing(RANK_VAR))?)?;
        let address = get(RENDEZVOUS_VAR).ok_or_else(|| missing(RENDEZVOUS_VAR))?;
        let mut place = Place::new(rank, ranks, &address)?;
        if let Some(t) = get(TIMEOUT_VAR) {
            let secs = t.trim().parse::<u64>().ok().filter(|s| (1..=86_400).contains(s));
            place.timeout = Duration::from_secs(secs.ok_or_else(|| ClusterError::Settings {
                what: format!("{TIMEOUT_VAR}={t:?}"),
                how: "give whole seconds from 1 to 86400".into(),
            })?);
        }
        Ok(Some(place))
    }

    /// The place this process's environment gives.
    pub fn from_env() -> ClusterResult<Option<Place>> {
        Self::from_vars(|k| std::env::var(k).ok())
    }
}

/// The host channel between the ranks: rank 0 holds a socket to every other
/// rank, every other rank one to rank 0.
pub struct Cluster {
    place: Place,
    /// Indexed by rank: rank 0's links to ranks 1.., or a rank's one link to rank 0 (at 0).
    links: Mutex<Vec<Option<TcpStream>>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cluster(rank {} of {}, {})", self.place.rank, self.place.ranks, self.place.rendezvous)
    }
}

impl Cluster {
    /// Meets the other ranks: rank 0 listens at the rendezvous address until
    /// every rank has connected, the others connect (retrying while rank 0 is
    /// not listening yet), all within the place's timeout.
    pub fn join(place: Place) -> ClusterResult<Cluster> {
        let deadline = Instant::now() + place.timeout;
        let mut links: Vec<Option<TcpStream>> = (0..place.ranks).map(|_| None).collect();
        if place.ranks > 1 {
            if place.rank == 0 {
                accept_all(&place, deadline, &mut links)?;
            } else {
                links[0] = Some(connect(&place, deadline)?);
            }
        }
        Ok(Cluster { place, links: Mutex::new(links) })
    }

    pub fn rank(&self) -> usize {
        self.place.rank
    }

    pub fn ranks(&self) -> usize {
        self.place.ranks
    }

    pub fn place(&self) -> &Place {
        &self.place
    }

    fn io(&self, during: &'static str) -> impl Fn(std::io::Error) -> ClusterError + '_ {
        move |source| ClusterError::Io { rank: self.place.rank, during, address: self.place.rendezvous.clone(), source }
    }

    fn with_links<T>(&self, f: impl FnOnce(&mut [Option<TcpStream>]) -> ClusterResult<T>) -> ClusterResult<T> {
        // A poisoned lock means a thread panicked mid-message: the channel's state is unknown.
        let mut links = self.links.lock().map_err(|_| ClusterError::Protocol {
            rank: self.place.rank,
            what: "the channel to the other ranks was left mid-message by a failed thread".into(),
        })?;
        f(&mut links)
    }

    /// Every rank's `mine`, in rank order, on every rank.
    pub fn all_gather(&self, mine: &[u8]) -> ClusterResult<Vec<Vec<u8>>> {
        // One hold of the links for both halves: no other message may come between them.
        let all = self.with_links(|links| {
            let all = self.gather_in(links, mine)?;
            self.broadcast_in(links, all.map(|a| encode_list(&a)).as_deref())
        })?;
        self.decode_list(&all)
    }

    /// Every rank's `mine`, in rank order, on rank 0 (`None` on the others).
    pub fn gather(&self, mine: &[u8]) -> ClusterResult<Option<Vec<Vec<u8>>>> {
        self.with_links(|links| self.gather_in(links, mine))
    }

    /// Rank 0's `bytes` on every rank (the others pass `None`).
    pub fn broadcast(&self, bytes: Option<&[u8]>) -> ClusterResult<Vec<u8>> {
        self.with_links(|links| self.broadcast_in(links, bytes))
    }

    fn gather_in(&self, links: &mut [Option<TcpStream>], mine: &[u8]) -> ClusterResult<Option<Vec<Vec<u8>>>> {
        if self.place.rank != 0 {
            let link = links[0].as_mut().expect("a rank's link to rank 0");
            send(link, mine).map_err(self.io("sending to rank 0"))?;
            return Ok(None);
        }
        let mut all = vec![mine.to_vec()];
        for link in links.iter_mut().skip(1) {
            let link = link.as_mut().expect("rank 0's link to every rank");
            all.push(receive(link).map_err(self.io("receiving from a rank"))?);
        }
        Ok(Some(all))
    }

    fn broadcast_in(&self, links: &mut [Option<TcpStream>], bytes: Option<&[u8]>) -> ClusterResult<Vec<u8>> {
        if self.place.rank != 0 {
            let link = links[0].as_mut().expect("a rank's link to rank 0");
            return receive(link).map_err(self.io("receiving from rank 0"));
        }
        let bytes = bytes.ok_or_else(|| self.protocol("rank 0 broadcast nothing".into()))?;
        for link in links.iter_mut().skip(1) {
            let link = link.as_mut().expect("rank 0's link to every rank");
            send(link, bytes).map_err(self.io("sending to a rank"))?;
        }
        Ok(bytes.to_vec())
    }

    /// Returns once every rank has called it.
    pub fn barrier(&self) -> ClusterResult<()> {
        self.all_gather(&[]).map(drop)
    }

    /// Each rank's f64s, element-wise max over the ranks, on every rank.
    pub fn max_f64(&self, mine: &[f64]) -> ClusterResult<Vec<f64>> {
        let all = self.all_gather(bytemuck::cast_slice(mine))?;
        let mut out = mine.to_vec();
        for theirs in &all {
            let theirs: Vec<f64> = theirs.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
            if theirs.len() != out.len() {
                return Err(self.protocol(format!("ranks sent {} and {} values to compare", theirs.len(), out.len())));
            }
            out.iter_mut().zip(theirs).for_each(|(a, b)| *a = a.max(b));
        }
        Ok(out)
    }

    fn protocol(&self, what: String) -> ClusterError {
        ClusterError::Protocol { rank: self.place.rank, what }
    }

    fn decode_list(&self, bytes: &[u8]) -> ClusterResult<Vec<Vec<u8>>> {
        decode_list(bytes).ok_or_else(|| self.protocol("a malformed message from rank 0".into()))
    }
}

/// Length-prefixed parts, one after another.
fn encode_list(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

fn decode_list(mut bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut parts = Vec::new();
    while !bytes.is_empty() {
        let (len, rest) = bytes.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        parts.push(rest.get(..len)?.to_vec());
        bytes = &rest[len..];
    }
    Some(parts)
}

fn send(link: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    link.write_all(&(bytes.len() as u64).to_le_bytes())?;
    link.write_all(bytes)?;
    link.flush()
}

fn receive(link: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 8];
    link.read_exact(&mut len)?;
    let len = u64::from_le_bytes(len);
    if len > MAX_MESSAGE {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("a message of {len} bytes")));
    }
    let mut bytes = vec![0u8; len as usize];
    link.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// A connected socket made ready for messages: no Nagle delay, bounded reads.
fn ready(link: &TcpStream) -> std::io::Result<()> {
    link.set_nonblocking(false)?;
    link.set_nodelay(true)?;
    link.set_read_timeout(Some(READ_TIMEOUT))
}

/// The hello a rank sends rank 0: magic, its rank, the ranks it was told.
fn hello(rank: usize, ranks: usize) -> Vec<u8> {
    [HELLO.as_slice(), &(rank as u64).to_le_bytes(), &(ranks as u64).to_le_bytes()].concat()
}

fn accept_all(place: &Place, deadline: Instant, links: &mut [Option<TcpStream>]) -> ClusterResult<()> {
    let io = |during| move |source| ClusterError::Io { rank: 0, during, address: place.rendezvous.clone(), source };
    let listener = TcpListener::bind(&place.rendezvous).map_err(io("listening"))?;
    listener.set_nonblocking(true).map_err(io("listening"))?;
    let missing = |links: &[Option<TcpStream>]| {
        let m: Vec<String> = (1..links.len()).filter(|&r| links[r].is_none()).map(|r| r.to_string()).collect();
        format!("ranks {} never connected", m.join(", "))
    };
    while links.iter().skip(1).any(Option::is_none) {
        let mut link = match listener.accept() {
            Ok((link, _)) => link,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    let secs = place.timeout.as_secs();
                    return Err(ClusterError::Timeout {
                        rank: 0,
                        address: place.rendezvous.clone(),
                        secs,
                        missing: missing(links),
                    });
                }
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(e) => return Err(io("accepting a rank")(e)),
        };
        ready(&link).map_err(io("accepting a rank"))?;
        // A rank says hello as soon as it connects; anything that stays silent or says something else
        // (a port scan, another program) is dropped, and the wait goes on.
        link.set_read_timeout(Some(HELLO_TIMEOUT)).map_err(io("accepting a rank"))?;
        let Ok(said) = receive(&mut link) else { continue };
        let (rank, ranks) = match said.strip_prefix(HELLO.as_slice()).filter(|r| r.len() == 16) {
            Some(r) => (
                u64::from_le_bytes(r[..8].try_into().unwrap()) as usize,
                u64::from_le_bytes(r[8..].try_into().unwrap()) as usize,
            ),
            // Not a reap rank (a port scan, another program): ignore it.
            None => continue,
        };
        let refuse = |what: String| Err(ClusterError::Protocol { rank: 0, what });
        if ranks != place.ranks {
            let _ = send(&mut link, b"ranks differ");
            return refuse(format!("rank {rank} was started with {RANKS_VAR}={ranks}, rank 0 with {}", place.ranks));
        }
        if rank == 0 || rank >= place.ranks || links[rank].is_some() {
            let _ = send(&mut link, b"rank taken");
            return refuse(format!("two processes claim rank {rank}: give each process its own {RANK_VAR}"));
        }
        link.set_read_timeout(Some(READ_TIMEOUT)).map_err(io("accepting a rank"))?;
        links[rank] = Some(link);
    }
    // Every rank is here: tell them, so none starts before the others are connected.
    for link in links.iter_mut().skip(1).flatten() {
        send(link, b"ok").map_err(io("welcoming a rank"))?;
    }
    Ok(())
}

fn connect(place: &Place, deadline: Instant) -> ClusterResult<TcpStream> {
    let rank = place.rank;
    let io = |during| move |source| ClusterError::Io { rank, during, address: place.rendezvous.clone(), source };
    let addresses: Vec<_> = place.rendezvous.to_socket_addrs().map_err(io("resolving the rendezvous"))?.collect();
    let mut link = loop {
        let tried = addresses.iter().find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(1)).ok());
        if let Some(link) = tried {
            break link;
        }
        if Instant::now() > deadline {
            let secs = place.timeout.as_secs();
            return Err(ClusterError::Timeout {
                rank,
                address: place.rendezvous.clone(),
                secs,
                missing: "rank 0 never listened".into(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    ready(&link).map_err(io("connecting"))?;
    send(&mut link, &hello(rank, place.ranks)).map_err(io("saying hello"))?;
    link.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))))
        .map_err(io("connecting"))?;
    let answer = receive(&mut link).map_err(|e| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ClusterError::Timeout {
            rank,
            address: place.rendezvous.clone(),
            secs: place.timeout.as_secs(),
            missing: "rank 0 was still waiting for other ranks".into(),
        },
        _ => io("waiting for the other ranks")(e),
    })?;
    if answer != b"ok" {
        let what = format!("rank 0 refused this rank: {}", String::from_utf8_lossy(&answer));
        return Err(ClusterError::Protocol { rank, what });
    }
    link.set_read_timeout(Some(READ_TIMEOUT)).map_err(io("connecting"))?;
    Ok(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| pairs.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_environment_gives_a_place_or_a_clear_error() {
        assert_eq!(Place::from_vars(vars(&[])).unwrap(), None);
        let p = Place::from_vars(vars(&[(RANK_VAR, "1"), (RANKS_VAR, "2"), (RENDEZVOUS_VAR, "127.0.0.1:1")]));
        assert_eq!(p.unwrap().unwrap().rank, 1);
        for bad in [
            vec![(RANK_VAR, "1")],
            vec![(RANKS_VAR, "2"), (RENDEZVOUS_VAR, "h:1")],
            vec![(RANK_VAR, "2"), (RANKS_VAR, "2"), (RENDEZVOUS_VAR, "h:1")],
            vec![(RANK_VAR, "0"), (RANKS_VAR, "x"), (RENDEZVOUS_VAR, "h:1")],
            vec![(RANK_VAR, "0"), (RANKS_VAR, "2"), (RENDEZVOUS_VAR, "nowhere")],
            vec![(RANK_VAR, "0"), (RANKS_VAR, "2"), (RENDEZVOUS_VAR, "h:1"), (TIMEOUT_VAR, "0")],
        ] {
            let e = Place::from_vars(vars(&bad)).unwrap_err().to_string();
            assert!(e.contains("REAP_"), "{bad:?}: {e}");
        }
    }

    /// A free loopback port (bound, then released for rank 0 to take).
    fn free_address() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    }

    fn join_all(ranks: usize, address: &str) -> Vec<ClusterResult<Cluster>> {
        let handles: Vec<_> = (0..ranks)
            .map(|r| {
                let mut place = Place::new(r, ranks, address).unwrap();
                place.timeout = Duration::from_secs(20);
                std::thread::spawn(move || Cluster::join(place))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn ranks_gather_broadcast_and_take_the_max_in_rank_order() {
        let address = free_address();
        let clusters: Vec<Cluster> = join_all(4, &address).into_iter().map(Result::unwrap).collect();
        let results: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = clusters
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        let all = c.all_gather(&[c.rank() as u8; 3]).unwrap();
                        let max = c.max_f64(&[c.rank() as f64, -(c.rank() as f64)]).unwrap();
                        c.barrier().unwrap();
                        let b = c.broadcast((c.rank() == 0).then_some(b"id".as_slice())).unwrap();
                        (all, max, b)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (all, max, b) in results {
            assert_eq!(all, (0..4u8).map(|r| vec![r; 3]).collect::<Vec<_>>());
            assert_eq!(max, vec![3.0, 0.0]);
            assert_eq!(b, b"id");
        }
    }

    #[test]
    fn a_missing_rank_is_a_timeout_and_a_dead_one_an_error() {
        let address = free_address();
        let mut place = Place::new(0, 2, &address).unwrap();
        place.timeout = Duration::from_millis(300);
        let e = Cluster::join(place).unwrap_err().to_string();
        assert!(e.contains("did not complete") && e.contains("ranks 1 never connected"), "{e}");

        let mut place = Place::new(1, 2, &free_address()).unwrap();
        place.timeout = Duration::from_millis(300);
        let e = Cluster::join(place).unwrap_err().to_string();
        assert!(e.contains("rank 0 never listened"), "{e}");

        let address = free_address();
        let mut clusters: Vec<Cluster> = join_all(2, &address).into_iter().map(Result::unwrap).collect();
        drop(clusters.pop());
        let e = clusters[0].all_gather(b"x").unwrap_err().to_string();
        assert!(e.contains("rank 0"), "{e}");
    }

    #[test]
    fn a_stray_connection_does_not_stop_the_rendezvous() {
        let address = free_address();
        let stray = {
            let address = address.clone();
            std::thread::spawn(move || {
                // Connect before rank 1 and send something that is not a hello.
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    if let Ok(mut s) = TcpStream::connect(&address) {
                        let _ = s.write_all(&u64::MAX.to_le_bytes());
                        std::thread::sleep(Duration::from_millis(200));
                        return;
                    }
                    assert!(Instant::now() < deadline, "rank 0 never listened");
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        let ranks = {
            let address = address.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                join_all(2, &address).into_iter().map(|c| c.map(drop).map_err(|e| e.to_string())).collect::<Vec<_>>()
            })
        };
        stray.join().unwrap();
        let results = ranks.join().unwrap();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }

    #[test]
    fn two_processes_claiming_one_rank_are_refused() {
        let address = free_address();
        let handles: Vec<_> = [0, 1, 1]
            .into_iter()
            .map(|r| {
                let mut place = Place::new(r, 3, &address).unwrap();
                place.timeout = Duration::from_secs(5);
                std::thread::spawn(move || Cluster::join(place).map(drop).map_err(|e| e.to_string()))
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(results[0].as_ref().unwrap_err().contains("two processes claim rank 1"), "{results:?}");
    }
}
