//! CPU ranks against one backend: the gathered result of every sharded
//! operation is the single-device result, bit for bit for stable algorithms.

use super::*;
use crate::compaction::{Algorithm, CpuBackend, Operation};
use proptest::prelude::*;

fn group(ranks: usize) -> Group<CpuBackend> {
    Group::new((0..ranks).map(|_| CpuBackend::new()).collect()).expect("cpu ranks connect")
}

fn data(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| if rng.bool() { rng.u32(..1 << 31) } else { u32::MAX }).collect()
}

fn single(alg: Algorithm, split: bool, input: &[u32]) -> (Vec<u32>, u64) {
    let b = CpuBackend::new();
    let mut out = vec![0u32; input.len()];
    let input = input.to_vec();
    let r = if split {
        b.partition(alg, &input, Keep::Sentinel(u32::MAX), &mut out)
    } else {
        b.select(alg, &input, Keep::Sentinel(u32::MAX), &mut out)
    }
    .expect("single run");
    let k = r.count().expect("count");
    if !split {
        out.truncate(k as usize);
    }
    (out, k)
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn sharded_select_and_partition_gather_to_the_single_result(n in 0usize..5000, ranks in 1usize..6, seed: u64) {
        let g = group(ranks);
        let input = data(n, seed);
        let sh = g.scatter(&input).unwrap();
        for alg in Algorithm::ALL.iter().copied().filter(|a| a.supports(Operation::Select)) {
            let (want, k) = single(alg, false, &input);
            let out = g.select(alg, &sh, ShardKeep::Sentinel(u32::MAX)).unwrap();
            let got = g.collect(&out).unwrap().unwrap();
            prop_assert_eq!(g.counts(&out).unwrap().iter().sum::<u64>(), k);
            if alg.stable() { prop_assert_eq!(&got, &want, "{}", alg.name()); }
            else { prop_assert_eq!(sorted(got), sorted(want), "{}", alg.name()); }
        }
        for alg in Algorithm::ALL.iter().copied().filter(|a| a.supports(Operation::Partition) && a.stable()) {
            let (want, _) = single(alg, true, &input);
            let out = g.partition(alg, &sh, ShardKeep::Sentinel(u32::MAX)).unwrap();
            prop_assert_eq!(g.collect(&out).unwrap().unwrap(), want, "{}", alg.name());
            // Each rank's kept part starts where the counts before it end (also an empty one).
            let counts = g.counts(&out).unwrap();
            let offsets = g.offsets(&out).unwrap();
            for r in 1..ranks { prop_assert_eq!(offsets[r], offsets[r - 1] + counts[r - 1]); }
        }
    }

    #[test]
    fn sharded_scan_is_the_global_scan(n in 0usize..5000, ranks in 1usize..6, seed: u64) {
        let g = group(ranks);
        let mut rng = fastrand::Rng::with_seed(seed);
        let input: Vec<u64> = (0..n).map(|_| rng.u64(..)).collect();
        let mut want = vec![0u64; n];
        let mut acc = 0u64;
        for (w, x) in want.iter_mut().zip(&input) { *w = acc; acc = acc.wrapping_add(*x); }
        let sh = g.scatter(&input).unwrap();
        for alg in Algorithm::ALL.iter().copied().filter(|a| a.supports(Operation::Scan)) {
            let out = g.exclusive_scan(alg, &sh).unwrap();
            prop_assert_eq!(g.collect(&out).unwrap().unwrap(), want.clone(), "{}", alg.name());
            let total = g.counts(&out).unwrap().iter().fold(0u64, |a, &t| a.wrapping_add(t));
            prop_assert_eq!(total, acc);
        }
    }
}

#[test]
fn offsets_are_the_counts_before_each_rank() {
    let g = group(3);
    let input: Vec<u32> = (0..10).map(|i| if i % 3 == 0 { u32::MAX } else { i }).collect();
    let sh = g.scatter(&input).unwrap();
    assert_eq!(sh.starts, vec![0, 4, 7]);
    let out = g.select(Algorithm::Lookback, &sh, ShardKeep::Sentinel(u32::MAX)).unwrap();
    // shards [0..4) [4..7) [7..10): kept 1,2 | 4,5 | 7,8
    assert_eq!(g.counts(&out).unwrap(), vec![2, 2, 2]);
    assert_eq!(g.offsets(&out).unwrap(), vec![0, 2, 4]);
    assert_eq!(g.collect(&out).unwrap().unwrap(), vec![1, 2, 4, 5, 7, 8]);
}

#[test]
fn a_group_needs_a_rank_and_flags_like_the_input() {
    assert!(Group::<CpuBackend>::new(Vec::new()).is_err());
    let g = group(2);
    let sh = g.scatter(&[1u32, 2, 3]).unwrap();
    let flags = g.scatter(&[1u8, 0]).unwrap();
    assert!(g.select(Algorithm::Lookback, &sh, ShardKeep::Flags(&flags)).is_err());
}

/// Ranks as processes (threads here, each with its own cluster link, as
/// `reap launch` gives each process): what rank 0 gathers is the
/// single-device result for 1 to 5 ranks, and every rank reads the same counts.
#[test]
fn ranks_joined_as_processes_gather_the_single_result() {
    use crate::cluster::{Cluster, Place};
    use std::sync::Arc;
    for ranks in 1..=5usize {
        let address = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let input = data(10_007, ranks as u64);
        let scan_input: Vec<u64> = (0..9_999u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..ranks)
                .map(|rank| {
                    let (address, input, scan_input) = (&address, &input, &scan_input);
                    s.spawn(move || {
                        let cluster = Arc::new(Cluster::join(Place::new(rank, ranks, address).unwrap()).unwrap());
                        let g = Group::join(CpuBackend::new(), cluster).unwrap();
                        assert_eq!((g.len(), g.first(), g.ranks().len()), (ranks, rank, 1));
                        let sh = g.scatter(input).unwrap();
                        let sel = g.select(Algorithm::Lookback, &sh, ShardKeep::Sentinel(u32::MAX)).unwrap();
                        let part = g.partition(Algorithm::Lookback, &sh, ShardKeep::Sentinel(u32::MAX)).unwrap();
                        let scan = g.exclusive_scan(Algorithm::Lookback, &g.scatter(scan_input).unwrap()).unwrap();
                        (
                            g.counts(&sel).unwrap(),
                            g.collect(&sel).unwrap(),
                            g.collect(&part).unwrap(),
                            g.collect(&scan).unwrap(),
                            g.gather(&sel, ranks - 1).unwrap().is_some(),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let (want_sel, kept) = single(Algorithm::Lookback, false, &input);
        let (want_part, _) = single(Algorithm::Lookback, true, &input);
        let want_scan: Vec<u64> = scan_input
            .iter()
            .scan(0u64, |acc, &x| {
                let before = *acc;
                *acc = acc.wrapping_add(x);
                Some(before)
            })
            .collect();
        for (rank, (counts, sel, part, scan, holds_last)) in results.into_iter().enumerate() {
            assert_eq!(counts.iter().sum::<u64>(), kept, "{ranks} ranks, rank {rank}");
            assert_eq!(holds_last, rank == ranks - 1, "a gather to the last rank lands there only");
            if rank == 0 {
                assert_eq!(sel.unwrap(), want_sel, "{ranks} ranks: select");
                assert_eq!(part.unwrap(), want_part, "{ranks} ranks: partition");
                assert_eq!(scan.unwrap(), want_scan, "{ranks} ranks: scan");
            } else {
                assert!(sel.is_none() && part.is_none() && scan.is_none(), "only rank 0 holds the gathered result");
            }
        }
    }
}

/// 32-bit values whose sums wrap: the carried scan (lookback, chained: a
/// 64-bit total first) and the prefix pass (the others) wrap as one rank
/// does, and the counts are the totals at the element's width.
#[test]
fn a_sharded_u32_scan_wraps_as_one_rank_does() {
    let input: Vec<u32> = (0..10_001u32).map(|i| u32::MAX - i).collect();
    let mut want = vec![0u32; input.len()];
    let mut acc = 0u32;
    for (w, x) in want.iter_mut().zip(&input) {
        *w = acc;
        acc = acc.wrapping_add(*x);
    }
    for ranks in [2, 3] {
        let g = group(ranks);
        let sh = g.scatter(&input).unwrap();
        for alg in [Algorithm::Lookback, Algorithm::Chained, Algorithm::Blelloch] {
            let out = g.exclusive_scan(alg, &sh).unwrap();
            assert_eq!(g.collect(&out).unwrap().unwrap(), want, "{} over {ranks}", alg.name());
            let counts = g.counts(&out).unwrap();
            assert!(counts.iter().all(|&c| c <= u32::MAX as u64), "{counts:?}");
            assert_eq!(counts.iter().fold(0u32, |a, &c| a.wrapping_add(c as u32)), acc);
        }
    }
}
