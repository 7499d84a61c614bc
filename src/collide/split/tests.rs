//! The split collider against one engine, bit for bit (issue 49's CI test:
//! 1-5 ranks, bodies crossing ranges, every scenario).

use super::SplitCollide;
use crate::collide::cpu::CpuCollide;
use crate::collide::physics::tests_solver::settings;
use crate::collide::scenario::{self, Scenario};
use crate::collide::{Body, Engine, Frontier, Simulation, frame};

/// `frames` frames of `sc` with `n` bodies on one engine and on 1-5 ranks:
/// the same candidates, contacts and bodies (every bit) after each frame.
fn same_as_one_engine(sc: Scenario, n: u32, frames: u32, soft: bool) {
    let (mut w, bodies) = scenario::build(sc, n, 7).expect("scenario");
    if soft {
        w.contact_hertz = crate::collide::physics::SOFT_HERTZ;
    }
    let s = settings(sc.solver());
    let mut one = CpuCollide::new(w, &bodies).expect("engine");
    let mut f = Frontier::new(&one).expect("frontier");
    let mut splits: Vec<SplitCollide> = (1..=5).map(|r| SplitCollide::new(w, &bodies, r).expect("split")).collect();
    let (mut migrated, mut crossing) = (0, 0);
    for i in 0..frames {
        let st = frame(&mut one, &s, &mut f, i).expect("frame");
        let (pairs, contacts, state) =
            (one.candidate_pairs().unwrap(), one.contact_list().unwrap(), one.bodies().unwrap());
        for split in &mut splits {
            let r = split.ranks();
            let sst = split.frame(&s, i).expect("split frame");
            assert_eq!(split.candidate_pairs().unwrap(), pairs, "{sc}, {r} ranks, frame {i}: candidates");
            assert_eq!(sst.candidates, st.candidates, "{sc}, {r} ranks, frame {i}: candidates counted");
            assert_eq!(sst.contacts, st.contacts, "{sc}, {r} ranks, frame {i}: contacts counted");
            let got = split.contact_list().unwrap();
            assert!(got == contacts, "{sc}, {r} ranks, frame {i}: contacts differ");
            let b = split.bodies().unwrap();
            let bits = |b: &[Body]| bytemuck::cast_slice::<Body, u32>(b).to_vec();
            if bits(&b) != bits(&state) {
                let at = b.iter().zip(&state).position(|(x, y)| bytemuck::bytes_of(x) != bytemuck::bytes_of(y));
                panic!("{sc}, {r} ranks, frame {i}: body {at:?} differs");
            }
            let ss = split.split_stats();
            assert_eq!(ss.owned.iter().sum::<u64>(), n as u64);
            if r > 1 {
                migrated += ss.migrated;
                crossing += ss.ghosts.iter().sum::<u64>();
            }
        }
    }
    // The scenes move: bodies changed ranks, and ranks held ghosts.
    assert!(migrated > 0 && crossing > 0, "{sc}: {migrated} bodies migrated, {crossing} ghosts");
}

#[test]
fn one_to_five_ranks_step_the_pile_as_one_engine() {
    same_as_one_engine(Scenario::Pile, 600, 100, false);
}

#[test]
fn one_to_five_ranks_step_the_drum_the_ramp_and_the_gas_as_one_engine() {
    for sc in [Scenario::Drum, Scenario::Ramp, Scenario::Gas] {
        same_as_one_engine(sc, 500, 25, false);
    }
}

#[test]
fn one_to_five_ranks_step_soft_contacts_as_one_engine() {
    same_as_one_engine(Scenario::Pile, 400, 20, true);
}

#[test]
fn a_rank_that_owns_nothing_sits_the_frame_out() {
    // Three bodies over five ranks: two ranks own none.
    let (w, bodies) = scenario::build(Scenario::Pile, 3, 1).expect("scenario");
    let s = settings(Scenario::Pile.solver());
    let mut one = CpuCollide::new(w, &bodies).expect("engine");
    let mut f = Frontier::new(&one).expect("frontier");
    let mut split = SplitCollide::new(w, &bodies, 5).expect("split");
    for i in 0..30 {
        frame(&mut one, &s, &mut f, i).expect("frame");
        split.frame(&s, i).expect("split frame");
        assert_eq!(split.bodies().unwrap(), one.bodies().unwrap(), "frame {i}");
    }
    assert!(split.split_stats().owned.contains(&0));
    assert!(SplitCollide::new(w, &bodies, 0).is_err() && SplitCollide::new(w, &bodies, 99).is_err());
}

#[test]
fn cuts_sit_on_coarse_cells_and_keep_the_ranks_within_their_share() {
    // 10000 codes spread over the 30 bits.
    let mut codes: Vec<u32> = (0..10_000u32).map(|i| i.wrapping_mul(2_654_435_761) >> 2).collect();
    codes.sort_unstable();
    let held = |r: &std::ops::Range<u32>| codes.iter().filter(|c| r.contains(c)).count();
    let ranges = super::split_codes(&codes, 4);
    assert_eq!(ranges.len(), 4);
    assert_eq!((ranges[0].start, ranges[3].end), (0, u32::MAX));
    assert!(ranges.windows(2).all(|w| w[0].end == w[1].start), "{ranges:?}");
    assert!(ranges.iter().all(|r| held(r) as f64 <= 2500.0 * 1.025), "{ranges:?}");
    assert!(ranges[1..].iter().all(|r| r.start.trailing_zeros() >= 16), "coarse cuts: {ranges:?}");
    // Codes that cannot be split evenly (all equal) still give contiguous ranges over every code.
    let same = super::split_codes(&[5; 100], 3);
    assert_eq!((same[0].start, same[2].end), (0, u32::MAX));
    assert!(same.windows(2).all(|w| w[0].end == w[1].start));
}
