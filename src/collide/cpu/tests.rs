//! The colouring's properties on the CPU engine (`physics::colour`): the
//! CUDA and wgpu engines are held to it bit for bit by the tests/ suites.

use std::collections::{HashMap, HashSet};

use super::CpuCollide;
use crate::collide::layout::Contact;
use crate::collide::physics::colour::{self, OVERFLOW};
use crate::collide::physics::tests_solver::settings;
use crate::collide::scenario::{self, Scenario};
use crate::collide::{BodyOrder, CollideError, CollideSettings, Engine, Frontier, frame};

/// The engine after `frames` frames of a 1500-body scene at the defaults (colours as given).
fn run(sc: Scenario, frames: u32, colours: u32) -> CpuCollide {
    let (mut w, bodies) = scenario::build(sc, 1500, 3).expect("scenario");
    w.colours = colours;
    let mut e = CpuCollide::new(w, &bodies).expect("engine");
    let mut f = Frontier::new(&e).expect("frontier");
    let s = settings(sc.solver());
    for i in 0..frames {
        frame(&mut e, &s, &mut f, i).expect("frame");
    }
    e
}

/// Each contact's key (a, b, slot) and colour.
fn colours_by_key(e: &CpuCollide) -> HashMap<(u32, u32, u32), u32> {
    e.contacts.iter().zip(&e.colour).map(|(c, &k)| ((c.a, c.b, c.slot), k)).collect()
}

#[test]
fn no_movable_body_is_in_two_manifolds_of_a_colour() {
    for sc in [Scenario::Pile, Scenario::Ramp, Scenario::Drum] {
        let e = run(sc, 90, 16);
        let (contacts, bodies) = (&e.contacts, &e.bodies);
        assert!(contacts.len() > 1000, "{sc}: a dense scene ({} contacts)", contacts.len());
        let mut coloured = 0;
        let mut seen: HashSet<(u32, u32)> = HashSet::new();
        for i in 0..contacts.len() {
            let k = e.colour[i];
            if !colour::starts_run(contacts, i) {
                assert_eq!(k, e.colour[i - 1], "{sc}: a manifold's points share its colour");
                continue;
            }
            if k == OVERFLOW {
                continue;
            }
            assert!(k < 16, "{sc}: colour {k}");
            coloured += 1;
            let m = colour::manifold(&contacts[i]);
            for body in [m.0, m.1] {
                if !colour::is_wall_or_immovable(body, bodies) {
                    assert!(seen.insert((k, body)), "{sc}: body {body} twice in colour {k}");
                }
            }
        }
        let manifolds = (0..contacts.len()).filter(|&i| colour::starts_run(contacts, i)).count();
        // Measured: a few overflow manifolds per frame at most in these scenes.
        assert!(coloured * 100 >= manifolds * 95, "{sc}: {coloured} of {manifolds} manifolds coloured");
    }
}

#[test]
fn the_colours_do_not_depend_on_the_order_of_the_contacts() {
    let mut e = run(Scenario::Pile, 60, 16);
    let before = colours_by_key(&e);
    // The same contacts with the manifolds in reverse order, recoloured.
    let contacts = std::mem::take(&mut e.contacts);
    let mut runs: Vec<&[Contact]> = Vec::new();
    let mut from = 0;
    for i in 1..=contacts.len() {
        if i == contacts.len() || colour::starts_run(&contacts, i) {
            runs.push(&contacts[from..i]);
            from = i;
        }
    }
    e.contacts = runs.into_iter().rev().flatten().copied().collect();
    e.index_contacts().expect("index");
    super::solve::colour(&mut e);
    assert_eq!(colours_by_key(&e), before);
}

#[test]
fn no_colours_leaves_every_contact_to_the_jacobi_pass() {
    let e = run(Scenario::Pile, 30, 0);
    assert!(!e.contacts.is_empty());
    assert!(e.colour.iter().all(|&k| k == OVERFLOW));
    assert!(e.manifolds.is_empty());
}

/// Issue 46 item 1: bodies moved into Morton order every frame step exactly
/// as bodies left where they were spawned, bit for bit (contacts name the
/// lower spawn number first and the colouring ranks by spawn numbers, so
/// nothing depends on where a body lives), in every scenario, through a
/// frame redone for a list that was too short; and the order does move them.
#[test]
fn morton_order_steps_the_bodies_as_spawn_order_does() {
    let bits = |b: &[crate::collide::Body]| bytemuck::cast_slice::<_, u8>(b).to_vec();
    for sc in Scenario::ALL {
        let (w, bodies) = scenario::build(sc, 800, 9).expect("scenario");
        let mut runs = Vec::new();
        for order in BodyOrder::ALL {
            let mut e = CpuCollide::new(w, &bodies).expect("engine");
            let mut f = Frontier::new(&e).expect("frontier");
            let s = CollideSettings { order, ..settings(sc.solver()) };
            let mut redone = 0;
            for i in 0..60 {
                if i == 30 {
                    e.set_candidate_capacity(1).expect("a short list");
                }
                frame(&mut e, &s, &mut f, i).expect("frame");
                redone += f.attempts() - 1;
            }
            assert!(redone > 0, "{sc} {order:?}: no frame was redone");
            let moved = e.bodies.iter().enumerate().filter(|&(i, b)| b.id != i as u32).count();
            match order {
                BodyOrder::Morton => assert!(moved * 2 > e.bodies.len(), "{sc}: {moved} bodies moved"),
                BodyOrder::Spawn => assert_eq!(moved, 0, "{sc}: spawn order moved bodies"),
            }
            runs.push((e.bodies().expect("bodies"), e.contact_list().expect("contacts")));
        }
        let ((mb, mc), (sb, scs)) = (&runs[0], &runs[1]);
        assert!(!mc.is_empty(), "{sc}: no contact");
        assert!(bits(mb) == bits(sb), "{sc}: the bodies differ between the orders");
        assert!(mc == scs, "{sc}: the contacts differ between the orders");
    }
}

/// Issue 46 item 4: the lists are bounded per run. A frame that needs more
/// candidate slots than `max_candidates` is a typed error naming the flag,
/// and the list never grew past the bound (the pile's bodies start apart:
/// its list grows as it falls together).
#[test]
fn past_max_candidates_a_frame_is_a_typed_error() {
    let (w, bodies) = scenario::build(Scenario::Pile, 1500, 3).expect("scenario");
    let mut e = CpuCollide::new(w, &bodies).expect("engine");
    let mut f = Frontier::new(&e).expect("frontier");
    let max = 3000;
    let s = CollideSettings { max_candidates: max, ..settings(Scenario::Pile.solver()) };
    let mut failed = None;
    for i in 0..200 {
        match frame(&mut e, &s, &mut f, i) {
            Ok(stats) => assert!(stats.candidates <= max, "frame {i}: {} candidates", stats.candidates),
            Err(err) => {
                failed = Some((i, err));
                break;
            }
        }
        assert!(e.candidate_capacity() <= max, "frame {i}: the list grew to {}", e.candidate_capacity());
    }
    let (i, err) = failed.expect("the settling pile needs more than 3000 candidate slots");
    assert!(i > 10, "the bound was reached at frame {i}, before the list had grown");
    let text = err.to_string();
    match err {
        CollideError::TooManyCandidates { frame, needed, max: m, .. } => {
            assert_eq!((frame, m), (i, max));
            assert!(needed > max, "needed {needed}");
        }
        other => panic!("expected TooManyCandidates, got {other:?}"),
    }
    assert!(text.contains("--max-candidates 3000"), "{text}");
    // The default bound lets the same frames run.
    let (w, bodies) = scenario::build(Scenario::Pile, 1500, 3).expect("scenario");
    let mut e = CpuCollide::new(w, &bodies).expect("engine");
    let mut f = Frontier::new(&e).expect("frontier");
    let s = settings(Scenario::Pile.solver());
    for i in 0..=i {
        frame(&mut e, &s, &mut f, i).expect("frame");
    }
}
