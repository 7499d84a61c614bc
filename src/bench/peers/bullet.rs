//! Bullet as the collider's peer: PyBullet steps the scenario reap built
//! (`scenario::build`: the same bodies, shapes, sizes, masses and start, the
//! same world) through `drive_bullet.py`, and hands back the bodies' states
//! at the frames asked for, with its time per frame. What the driver does
//! with each of reap's settings, and what Bullet has no counterpart for, is
//! in its docstring. Where Python, PyBullet or the scene fails, the result is
//! [`Skipped`] with the reason and how to install, never an error (the
//! driver's process: [`super::driver`]).

use std::path::Path;
use std::process::Command;

use super::driver::{Driver, Ended, Skipped};
use crate::collide::layout::{Body, SPHERE, World};
use crate::collide::peer::{Plan, Stepped};

const DRIVER: Driver = Driver {
    peer: "PyBullet",
    script: "drive_bullet.py",
    text: include_str!("drive_bullet.py"),
    report: "bullet.json",
    install: INSTALL,
    lighter: "--bodies or --frames",
};

/// How to get PyBullet, for a skipped peer's row.
pub const INSTALL: &str = "install it with `python3 -m pip install pybullet numpy` (PyBullet imports numpy), or \
     point $REAP_PYTHON at a Python that has them";

/// Why PyBullet cannot step world `w` as reap does, or None: the drum's
/// turning cylinder wall has no counterpart among Bullet's static shapes.
pub fn unsupported(w: &World) -> Option<String> {
    (w.drum_radius > 0.0).then(|| {
        "the drum's wall is a turning cylinder, which PyBullet has no shape for (a kinematic mesh would be \
         another scene): not stepped"
            .into()
    })
}

/// How PyBullet steps: reap's substeps a frame, and its solver's iterations
/// a substep (None: PyBullet's default). Its iterations are sequential
/// impulses over every contact, not reap's Jacobi passes: the report gives both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solver {
    pub substeps: u32,
    pub iterations: Option<u32>,
}

/// The world as the driver reads it.
#[derive(serde::Serialize)]
struct SceneWorld {
    dt: f32,
    gravity: [f32; 3],
    friction: f32,
    restitution: f32,
    rest_speed: f32,
    min: [f32; 3],
    max: [f32; 3],
}

/// One body as the driver reads it.
#[derive(serde::Serialize)]
struct SceneBody {
    shape: &'static str,
    half: [f32; 3],
    inv_mass: f32,
    pos: [f32; 3],
    rot: [f32; 4],
    vel: [f32; 3],
    omega: [f32; 3],
}

/// scene.json: what the driver builds and how it steps it: `frames` frames
/// of `substeps` substeps, reporting every body after each of `samples`.
#[derive(serde::Serialize)]
struct Scene {
    world: SceneWorld,
    substeps: u32,
    solver_iterations: Option<u32>,
    frames: u32,
    samples: Vec<u32>,
    bodies: Vec<SceneBody>,
}

impl Scene {
    fn of(w: &World, bodies: &[Body], solver: Solver, plan: &Plan) -> Self {
        let world = SceneWorld {
            dt: w.dt,
            gravity: w.gravity,
            friction: w.friction,
            restitution: w.restitution,
            rest_speed: w.rest_speed,
            min: w.min,
            max: w.max,
        };
        let bodies = bodies
            .iter()
            .map(|b| SceneBody {
                shape: if b.shape == SPHERE { "sphere" } else { "box" },
                half: b.half,
                inv_mass: b.inv_mass,
                pos: b.pos,
                rot: b.rot,
                vel: b.vel,
                omega: b.omega,
            })
            .collect();
        let (substeps, solver_iterations) = (solver.substeps, solver.iterations);
        Scene { world, substeps, solver_iterations, frames: plan.steps(), samples: plan.samples(), bodies }
    }
}

/// bullet.json as the driver writes it.
#[derive(serde::Deserialize)]
struct Driven {
    pybullet: String,
    solver_iterations: u32,
    setup_s: f64,
    step_ms: Vec<f64>,
    samples: Vec<DrivenSample>,
}

#[derive(serde::Deserialize)]
struct DrivenSample {
    frame: u32,
    /// Per body: position, rotation (x y z w), linear and angular velocity.
    bodies: Vec<[f64; 13]>,
}

/// Bytes of bullet.json per body and sample, at the most: 13 numbers as
/// Python writes a double (up to 24 characters) and the punctuation.
const BYTES_PER_STATE: u64 = 13 * 26 + 4;

/// Steps `bodies` in world `w` with PyBullet through `python`
/// ([`super::driver::python`]) with `solver`, the frames and the samples of
/// `plan`. `work` is an empty folder for the driver's files.
/// `run` runs the driver's command to its end (bounded, time-limited: see
/// [`super::driver`]).
pub fn step(
    python: &Path,
    w: &World,
    bodies: &[Body],
    solver: Solver,
    plan: &Plan,
    work: &Path,
    run: impl FnOnce(&mut Command) -> Ended,
) -> Result<Stepped, Skipped> {
    let skip = |why: String| Skipped(why);
    if let Some(why) = unsupported(w) {
        return Err(skip(why));
    }
    let scene = Scene::of(w, bodies, solver, plan);
    let (frames, asked) = (scene.frames, scene.samples.clone());
    let path = work.join("scene.json");
    let text = serde_json::to_vec(&scene).map_err(|e| skip(format!("scene.json: {e}")))?;
    std::fs::write(&path, text).map_err(|e| skip(format!("cannot write {}: {e}", path.display())))?;
    let args = ["--scene".into(), path.into_os_string(), "--out".into(), work.into()];
    let most = (1 << 20) + frames as u64 * 32 + asked.len() as u64 * bodies.len() as u64 * BYTES_PER_STATE;
    let driven: Driven = DRIVER.run(python, work, &args, most, |_| String::new(), run)?;
    if driven.step_ms.len() != frames as usize {
        return Err(skip(format!("PyBullet stepped {} frames where {frames} were asked for", driven.step_ms.len())));
    }
    if driven.samples.len() != asked.len() {
        return Err(skip(format!(
            "PyBullet reported {} of the {} frames asked for",
            driven.samples.len(),
            asked.len()
        )));
    }
    let mut samples = Vec::new();
    for (s, want) in driven.samples.into_iter().zip(asked) {
        if s.frame != want {
            return Err(skip(format!("PyBullet reported frame {} where frame {want} was asked for", s.frame)));
        }
        samples.push((s.frame, states(bodies, &s.bodies).map_err(|why| skip(format!("frame {}: {why}", s.frame)))?));
    }
    Ok(Stepped {
        version: format!("PyBullet {}", driven.pybullet),
        solver_iterations: driven.solver_iterations,
        setup_s: driven.setup_s,
        step_ms: driven.step_ms,
        samples,
    })
}

/// reap's `start` bodies moved to the states PyBullet reported: shapes,
/// sizes and masses stay reap's.
fn states(start: &[Body], states: &[[f64; 13]]) -> Result<Vec<Body>, String> {
    if states.len() != start.len() {
        return Err(format!("{} bodies where reap handed over {}", states.len(), start.len()));
    }
    start
        .iter()
        .zip(states)
        .enumerate()
        .map(|(i, (b, s))| {
            if !s.iter().all(|v| v.is_finite()) {
                return Err(format!("body {i}'s state is not finite: {s:?}"));
            }
            let f = |k: usize| s[k] as f32;
            Ok(Body {
                pos: [f(0), f(1), f(2)],
                rot: [f(3), f(4), f(5), f(6)],
                vel: [f(7), f(8), f(9)],
                omega: [f(10), f(11), f(12)],
                ..*b
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::scenario::{Scenario, build};

    fn runner(c: &mut Command) -> Ended {
        match c.output() {
            Ok(o) => Ended::Exited { status: o.status, output: o.stderr },
            Err(e) => Ended::NotStarted(e),
        }
    }

    #[test]
    fn a_missing_python_is_a_reason_not_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (w, bodies) = build(Scenario::Pile, 10, 1).expect("pile");
        let plan = Plan { settle: 0, frames: 2 };
        let solver = Solver { substeps: 6, iterations: None };
        let got = step(&dir.path().join("no-such-python"), &w, &bodies, solver, &plan, dir.path(), runner);
        let Err(Skipped(why)) = got else { panic!("a missing Python must skip the peer") };
        assert!(why.contains("pip install pybullet numpy") && why.contains("no-such-python"), "{why}");
    }

    #[test]
    fn the_drum_is_not_handed_over() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (w, bodies) = build(Scenario::Drum, 10, 1).expect("drum");
        let plan = Plan { settle: 0, frames: 2 };
        let Err(Skipped(why)) = step(
            Path::new("python3"),
            &w,
            &bodies,
            Solver { substeps: 6, iterations: Some(10) },
            &plan,
            dir.path(),
            |_| unreachable!(),
        ) else {
            panic!("the drum must skip before anything runs")
        };
        assert!(why.contains("turning cylinder"), "{why}");
        assert!(unsupported(&build(Scenario::Ramp, 10, 1).expect("ramp").0).is_none());
    }

    #[test]
    fn states_move_reaps_bodies_and_refuse_what_is_not_finite() {
        let (_, bodies) = build(Scenario::Pile, 2, 1).expect("pile");
        let s = [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        let moved = states(&bodies, &[s, s]).expect("two states");
        assert_eq!(moved[1].pos, [1.0, 2.0, 3.0]);
        assert_eq!(moved[1].omega, [7.0, 8.0, 9.0]);
        assert_eq!(
            (moved[1].shape, moved[1].half, moved[1].inv_mass),
            (bodies[1].shape, bodies[1].half, bodies[1].inv_mass)
        );
        assert!(states(&bodies, &[s]).is_err(), "one body short");
        let mut nan = s;
        nan[8] = f64::NAN;
        assert!(states(&bodies, &[s, nan]).expect_err("a NaN").contains("body 1"));
    }
}
