//! The figures that say whether the physics is believable, measured on one
//! state (issue 16): contacts per body (a packed pile has about 6), how deep
//! bodies sink into each other as a fraction of their radius, and the
//! kinetic and total energy (whose drift shows a solver that adds or loses
//! energy).

use crate::collide::layout::{Body, Contact, SPHERE, World};
use crate::collide::physics::{self, dot};

#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Quality {
    /// Contact points between bodies per body that touch within the slop
    /// (wall points and speculative contacts further apart left out).
    pub contacts_per_body: f64,
    /// Penetration depth over the smaller body's radius, mean and most.
    pub mean_depth: f64,
    pub max_depth: f64,
    /// Linear and rotational kinetic energy, J.
    pub kinetic: f64,
}

/// The radius penetration is measured against: a sphere's, a box's
/// smallest half extent.
fn radius(b: &Body) -> f32 {
    if b.shape == SPHERE { b.half[0] } else { b.half[0].min(b.half[1]).min(b.half[2]) }
}

/// Linear and rotational kinetic energy of the movable bodies.
pub fn kinetic(bodies: &[Body]) -> f64 {
    bodies
        .iter()
        .filter(|b| b.inv_mass > 0.0)
        .map(|b| {
            let d = physics::inv_inertia(b);
            let u = physics::axes(b.rot);
            // ω in the body's frame: ½ Σ I_k ω_k².
            let spin: f32 = (0..3).map(|k| dot(b.omega, u[k]).powi(2) / d[k]).sum();
            0.5 * (dot(b.vel, b.vel) / b.inv_mass) as f64 + 0.5 * spin as f64
        })
        .sum()
}

/// The world's lowest point along gravity: the corner of its box that
/// gravity pulls towards (the floor, or the drum's bottom, which is its box's).
/// No body centre gets below it, so the potential measured from it is never negative.
pub fn lowest(w: &World) -> [f32; 3] {
    std::array::from_fn(|k| if w.gravity[k] > 0.0 { w.max[k] } else { w.min[k] })
}

/// Potential energy of the movable bodies in the world's gravity, J: Σ −m g·(x − [`lowest`]).
pub fn potential(bodies: &[Body], w: &World) -> f64 {
    let g = w.gravity.map(f64::from);
    let o = lowest(w).map(f64::from);
    bodies
        .iter()
        .filter(|b| b.inv_mass > 0.0)
        .map(|b| {
            let h: f64 = (0..3).map(|k| -g[k] * (b.pos[k] as f64 - o[k])).sum();
            h / b.inv_mass as f64
        })
        .sum()
}

/// Kinetic plus potential energy, J: what a solver must not add to (the
/// drum, which drives its bodies, aside).
pub fn energy(bodies: &[Body], w: &World) -> f64 {
    kinetic(bodies) + potential(bodies, w)
}

/// The relative change from `first` to `last`, or None when `first` is 0.
pub fn drift(first: f64, last: f64) -> Option<f64> {
    (first != 0.0).then(|| (last - first) / first.abs())
}

impl Quality {
    /// The figures of `bodies` with their contacts (as the last frame found
    /// them) in world `w`. A contact counts as touching within the slop, as
    /// the solver counts it (a resting one may sit a hair apart); the
    /// penetration figures are over the contacts that overlap (depth > 0).
    /// A speculative contact further apart is a gap, neither.
    pub fn of(bodies: &[Body], contacts: &[Contact], w: &World) -> Quality {
        let between = || contacts.iter().filter(|c| !physics::is_wall(c.b));
        let touching = between().filter(|c| c.depth > -w.slop).count();
        let pairs: Vec<f64> = between()
            .filter(|c| c.depth > 0.0)
            .map(|c| (c.depth / radius(&bodies[c.a as usize]).min(radius(&bodies[c.b as usize]))) as f64)
            .collect();
        let n = bodies.len().max(1) as f64;
        Quality {
            contacts_per_body: 2.0 * touching as f64 / n,
            mean_depth: if pairs.is_empty() { 0.0 } else { pairs.iter().sum::<f64>() / pairs.len() as f64 },
            max_depth: pairs.iter().cloned().fold(0.0, f64::max),
            kinetic: kinetic(bodies),
        }
    }

    /// One line for the command's output.
    pub fn line(&self) -> String {
        format!(
            "quality: {:.2} contacts per body, penetration mean {:.2} % and max {:.2} % of the radius",
            self.contacts_per_body,
            100.0 * self.mean_depth,
            100.0 * self.max_depth,
        )
    }
}

/// The energy after `frame` frames of a run (0: the start).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct EnergySample {
    pub frame: u32,
    /// J, linear and rotational.
    pub kinetic: f64,
    /// Kinetic plus potential, J.
    pub total: f64,
}

impl EnergySample {
    pub fn of(frame: u32, bodies: &[Body], w: &World) -> Self {
        let kinetic = kinetic(bodies);
        EnergySample { frame, kinetic, total: kinetic + potential(bodies, w) }
    }
}

/// The frames a run's energy line quotes: the start, a quarter, half way
/// and the end of `frames` frames, each once.
pub fn checkpoints(frames: u32) -> Vec<u32> {
    let mut at = vec![0, frames / 4, frames / 2, frames];
    at.dedup();
    at
}

/// What a world's total energy may do, which decides what its drift means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum Balance {
    /// Inelastic contacts and friction: the total may only fall.
    #[default]
    Dissipative,
    /// Closed, elastic and frictionless (the gas): any drift is the solver's error.
    Conserved,
    /// A turning drum wall feeds energy in: the total's change judges nothing.
    Driven,
}

impl Balance {
    pub fn of(w: &World) -> Balance {
        if w.drum_radius > 0.0 && w.drum_omega != 0.0 {
            Balance::Driven
        } else if w.restitution == 1.0 && w.friction == 0.0 && w.static_friction == 0.0 {
            Balance::Conserved
        } else {
            Balance::Dissipative
        }
    }
}

/// A run's energy: samples at frames, and how to read their total.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct EnergyRun {
    pub balance: Balance,
    /// The height the potential is measured from ([`lowest`]'s y), m; None without gravity.
    pub lowest_y: Option<f32>,
    pub samples: Vec<EnergySample>,
}

impl EnergyRun {
    /// A run of `w` with no samples yet.
    pub fn new(w: &World) -> EnergyRun {
        let gravity = w.gravity != [0.0; 3];
        EnergyRun { balance: Balance::of(w), lowest_y: gravity.then(|| lowest(w)[1]), samples: Vec::new() }
    }

    pub fn record(&mut self, frame: u32, bodies: &[Body], w: &World) {
        self.samples.push(EnergySample::of(frame, bodies, w));
    }

    /// The relative change of the total from the first sample to the last;
    /// None for a driven world or a zero start.
    pub fn drift(&self) -> Option<f64> {
        let (a, b) = (self.samples.first()?, self.samples.last()?);
        if self.balance == Balance::Driven { None } else { drift(a.total, b.total) }
    }

    /// The same run with only the samples at `frames`.
    pub fn at(&self, frames: &[u32]) -> EnergyRun {
        let samples = frames.iter().filter_map(|&k| self.samples.iter().find(|e| e.frame == k).copied()).collect();
        EnergyRun { samples, ..self.clone() }
    }

    /// One line for the command's output: the kinetic energy at each sample
    /// and the total's change from the first sample to the last, judged as
    /// the world's balance allows.
    pub fn line(&self) -> String {
        let at: Vec<String> = self.samples.iter().map(|s| format!("{:.4} J at frame {}", s.kinetic, s.frame)).collect();
        let mut line = format!("energy: kinetic {}", at.join(", "));
        let (Some(a), Some(b)) = (self.samples.first(), self.samples.last()) else { return line };
        let totals = format!("total {:.4} J to {:.4} J", a.total, b.total);
        let from = match self.lowest_y {
            Some(y) => format!(", potential from y = {y:.2} m (the lowest a body can reach)"),
            None => String::new(),
        };
        line += &match (self.balance, self.drift()) {
            (Balance::Driven, _) => format!("; {totals}{from}; driven (the drum's wall turns): no drift judged"),
            (Balance::Conserved, Some(d)) => {
                format!("; gas energy drift {:+.3} % (closed and elastic: {totals}){from}", 100.0 * d)
            }
            (Balance::Dissipative, Some(d)) => format!("; {totals} ({:+.3} %){from}", 100.0 * d),
            (_, None) => format!("; {totals}{from}"),
        };
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::layout::BOX;

    #[test]
    fn figures_of_two_touching_bodies() {
        let a = Body { pos: [0.0; 3], inv_mass: 2.0, half: [0.5; 3], vel: [1.0, 0.0, 0.0], ..Body::default() };
        let b = Body { shape: BOX, half: [0.25, 1.0, 1.0], inv_mass: 0.5, omega: [0.0, 0.0, 2.0], ..a };
        let b = Body { vel: [0.0; 3], rot: [0.0, 0.0, 0.0, 1.0], ..b };
        let a = Body { rot: [0.0, 0.0, 0.0, 1.0], ..a };
        let pair = Contact { a: 0, b: 1, depth: 0.05, ..Contact::default() };
        let wall = Contact { a: 0, b: physics::WALL, depth: 0.3, ..Contact::default() };
        // Touching within the slop counts as a contact, with no penetration; further apart it is a gap.
        let w = crate::collide::scenario::world([0.0; 3], [10.0; 3]);
        let resting = Contact { depth: -0.5 * w.slop, ..pair };
        let apart = Contact { depth: -2.0 * w.slop, ..pair };
        let q = Quality::of(&[a, b], &[pair, wall, resting, apart], &w);
        assert_eq!(q.contacts_per_body, 2.0, "wall points and gaps are not contacts between bodies");
        assert!((q.mean_depth - 0.2).abs() < 1e-6 && (q.max_depth - 0.2).abs() < 1e-6, "{q:?}");
        // ½ m v² = 0.25; the box spins about z: I = m (hx² + hy²) / 3 = 2 * 1.0625 / 3.
        let want = 0.25 + 0.5 * (2.0 * 1.0625 / 3.0) * 4.0;
        assert!((q.kinetic - want).abs() < 1e-5, "{} vs {want}", q.kinetic);
        assert!(q.line().contains("2.00 contacts per body, penetration mean 20.00 %"), "{}", q.line());
    }

    #[test]
    fn energy_counts_height_and_its_drift() {
        let w = crate::collide::scenario::world([0.0; 3], [10.0; 3]);
        let a =
            Body { pos: [1.0, 2.0, 3.0], inv_mass: 0.5, half: [0.5; 3], rot: [0.0, 0.0, 0.0, 1.0], ..Body::default() };
        let fixed = Body { inv_mass: 0.0, pos: [0.0, 9.0, 0.0], ..a };
        let moving = Body { vel: [0.0, -3.0, 0.0], pos: [1.0, 1.0, 3.0], ..a };
        let e0 = EnergySample::of(0, &[a, fixed], &w);
        // m g h = 2 * 9.81 * 2 (g in f32); the fixed body counts for nothing.
        assert!((e0.total - 39.24).abs() < 1e-5 && e0.kinetic == 0.0, "{e0:?}");
        let e1 = EnergySample::of(10, &[moving, fixed], &w);
        assert!((e1.kinetic - 9.0).abs() < 1e-9 && (e1.total - 28.62).abs() < 1e-5, "{e1:?}");
        let run = EnergyRun { samples: vec![e0, e1], ..EnergyRun::new(&w) };
        let line = run.line();
        assert!(line.contains("0.0000 J at frame 0, 9.0000 J at frame 10"), "{line}");
        assert!(line.contains("total 39.2400 J to 28.6200 J (-27.064 %), potential from y = 0.00 m"), "{line}");
        assert_eq!(drift(0.0, 1.0), None);
        assert_eq!(checkpoints(100), [0, 25, 50, 100]);
        assert_eq!(checkpoints(2), [0, 1, 2]);
    }

    /// The drum's bodies sit below y = 0: measured from y = 0 their total
    /// crossed zero and printed a drift of -38509 % (issue 16). From the
    /// drum's bottom it stays positive, and the driven drum judges no drift.
    #[test]
    fn the_drum_measures_height_from_its_bottom_and_judges_no_drift() {
        let (w, bodies) = crate::collide::scenario::build(crate::collide::scenario::Scenario::Drum, 200, 1).unwrap();
        assert_eq!(Balance::of(&w), Balance::Driven);
        assert!(potential(&bodies, &w) > 0.0 && bodies.iter().all(|b| b.pos[1] - lowest(&w)[1] >= 0.0));
        let mut run = EnergyRun::new(&w);
        run.record(0, &bodies, &w);
        let sunk: Vec<Body> = bodies.iter().map(|b| Body { pos: [b.pos[0], b.pos[1] - 1.0, b.pos[2]], ..*b }).collect();
        run.record(5, &sunk, &w);
        assert_eq!(run.drift(), None);
        let line = run.line();
        assert!(line.contains(&format!("potential from y = {:.2} m", -w.drum_radius)), "{line}");
        assert!(line.ends_with("driven (the drum's wall turns): no drift judged") && !line.contains('%'), "{line}");
    }

    #[test]
    fn the_gas_reports_its_drift_and_no_potential() {
        let (w, bodies) = crate::collide::scenario::build(crate::collide::scenario::Scenario::Gas, 100, 1).unwrap();
        assert_eq!(Balance::of(&w), Balance::Conserved);
        let mut run = EnergyRun::new(&w);
        run.record(0, &bodies, &w);
        let slower: Vec<Body> = bodies.iter().map(|b| Body { vel: b.vel.map(|v| 0.5 * v), ..*b }).collect();
        run.record(1, &slower, &w);
        let d = run.drift().expect("the gas moves");
        assert!((d + 0.75).abs() < 1e-6, "{d}");
        let line = run.line();
        assert!(
            line.contains("; gas energy drift -75.000 % (closed and elastic: total ") && !line.contains("potential"),
            "{line}"
        );
        assert_eq!(run.at(&[1]).samples, [run.samples[1]]);
    }
}
