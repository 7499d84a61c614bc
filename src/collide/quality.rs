//! The figures that say whether the physics is believable, measured on one
//! state (issue 16): contacts per body (a packed pile has about 6), how deep
//! bodies sink into each other as a fraction of their radius, and the
//! kinetic energy (whose drift shows a solver that adds or loses energy).

use crate::collide::layout::{Body, Contact, SPHERE};
use crate::collide::physics::{self, dot};

#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Quality {
    /// Contact points between bodies per body (wall points left out).
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

impl Quality {
    /// The figures of `bodies` with their contacts (as the last frame found them).
    pub fn of(bodies: &[Body], contacts: &[Contact]) -> Quality {
        let pairs: Vec<f64> = contacts
            .iter()
            .filter(|c| !physics::is_wall(c.b))
            .map(|c| (c.depth / radius(&bodies[c.a as usize]).min(radius(&bodies[c.b as usize]))) as f64)
            .collect();
        let n = bodies.len().max(1) as f64;
        Quality {
            contacts_per_body: 2.0 * pairs.len() as f64 / n,
            mean_depth: if pairs.is_empty() { 0.0 } else { pairs.iter().sum::<f64>() / pairs.len() as f64 },
            max_depth: pairs.iter().cloned().fold(0.0, f64::max),
            kinetic: kinetic(bodies),
        }
    }

    /// One line for the command's output, with the energy at the start.
    pub fn line(&self, kinetic_at_start: f64) -> String {
        let drift = if kinetic_at_start > 0.0 {
            format!(" ({:+.2} %)", 100.0 * (self.kinetic - kinetic_at_start) / kinetic_at_start)
        } else {
            String::new()
        };
        format!(
            "quality: {:.2} contacts per body, penetration mean {:.2} % and max {:.2} % of the radius, \
             kinetic energy {:.4} J at the start, {:.4} J at the end{drift}",
            self.contacts_per_body,
            100.0 * self.mean_depth,
            100.0 * self.max_depth,
            kinetic_at_start,
            self.kinetic
        )
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
        let q = Quality::of(&[a, b], &[pair, wall]);
        assert_eq!(q.contacts_per_body, 1.0, "wall points are not contacts between bodies");
        assert!((q.mean_depth - 0.2).abs() < 1e-6 && (q.max_depth - 0.2).abs() < 1e-6, "{q:?}");
        // ½ m v² = 0.25; the box spins about z: I = m (hx² + hy²) / 3 = 2 * 1.0625 / 3.
        let want = 0.25 + 0.5 * (2.0 * 1.0625 / 3.0) * 4.0;
        assert!((q.kinetic - want).abs() < 1e-5, "{} vs {want}", q.kinetic);
        assert!(q.line(q.kinetic).contains("(+0.00 %)"), "{}", q.line(q.kinetic));
    }
}
