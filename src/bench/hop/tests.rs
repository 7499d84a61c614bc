//! The hop benchmark's checks that need no GPU: settings, budgets, readouts, the table.

use super::*;

fn settings() -> HopSettings {
    HopSettings { round_trips: None, workgroups: None, chained_size: None, reps: 1, warmup: 0, seed: 1 }
}

#[test]
fn zero_or_oversized_runs_are_refused_with_the_flag_named() {
    for (s, flag) in [
        (HopSettings { round_trips: Some(0), ..settings() }, "--round-trips 0"),
        (HopSettings { workgroups: Some(1), ..settings() }, "--workgroups 1"),
        (HopSettings { workgroups: Some(MAX_WORKGROUPS + 1), ..settings() }, "--workgroups"),
        (HopSettings { chained_size: Some(0), ..settings() }, "--chained-size 0"),
        (HopSettings { reps: 0, ..settings() }, "--reps"),
    ] {
        let e = s.check().unwrap_err().to_string();
        assert!(e.contains(flag), "{e}");
    }
    assert!(settings().check().is_ok());
}

#[test]
fn a_software_adapter_gets_small_runs_and_budgets_within_its_loop_limit() {
    let r = settings().resolve(true).unwrap();
    assert_eq!((r.round_trips, r.workgroups, r.chained_size), (200, 64, 1 << 20));
    // The outer loop and every poll of one invocation stay below 65,535.
    assert!(r.round_trips + r.budget(HopCase::PingPong) < 65_535);
    assert!(r.budget(HopCase::Chain(Polling::Rmw32)) < 65_535);
    let many = HopSettings { round_trips: Some(SOFTWARE_MAX_ROUND_TRIPS + 1), ..settings() };
    assert!(many.resolve(true).unwrap_err().to_string().contains("lavapipe"));
    let gpu = many.resolve(false).unwrap();
    assert!(gpu.budget(HopCase::PingPong) > 64 * gpu.round_trips);
}

/// The words of a finished run read as such, whatever their width; a
/// bound hit, a cut loop and a missing workgroup are each an error.
#[test]
fn readouts_tell_a_finished_run_from_a_stalled_one() {
    let r = HopSettings { round_trips: Some(5), workgroups: Some(3), ..settings() }.resolve(false).unwrap();
    for word in [4usize, 8] {
        let words = |case: HopCase, err: u64, done: u64, last: u64| {
            let mut b = vec![0u8; layout::bytes(case == HopCase::PingPong, 3) as usize];
            let last_at = if case == HopCase::PingPong { layout::PONG } else { layout::flag(2) };
            for (at, v) in [(layout::ERR, err), (layout::DONE, done), (last_at, last)] {
                b[at as usize..at as usize + word].copy_from_slice(&v.to_le_bytes()[..word]);
            }
            Readout::of(&b, word, case, 3).check("wgpu", case, &r)
        };
        let chain = HopCase::Chain(Polling::OneLoad);
        assert!(words(HopCase::PingPong, 0, 2, 5).is_ok());
        assert!(words(chain, 0, 3, 3).is_ok());
        assert!(words(HopCase::PingPong, 1, 2, 5).unwrap_err().to_string().contains("polls"));
        assert!(words(chain, 2, 3, 3).unwrap_err().to_string().contains("cut the loop short"));
        assert!(words(HopCase::PingPong, 0, 2, 4).unwrap_err().to_string().contains("expected 5"));
        assert!(words(chain, 0, 2, 3).unwrap_err().to_string().contains("2 of 3 workgroups"));
    }
}

#[test]
fn the_markdown_has_a_row_per_measurement() {
    let row = HopRow {
        backend: "wgpu".into(),
        case: HopCase::PingPong.name().into(),
        hops: 40,
        one_way_ns: 265.0,
        device_ms: 0.0106,
        ..Default::default()
    };
    let md = markdown(&[row], &["wgpu: H200".into()], "reap bench hop");
    assert!(md.contains("| wgpu | ping-pong | 40 | 265.0 | 0.0106 |"), "{md}");
    assert!(md.contains("- wgpu: H200"));
}
