//! The viewer's camera: an orbit around a target (drag to orbit, right or
//! middle drag to pan, wheel to zoom) that WASD flies, turned back into the
//! scene's [`Camera`] each time it moves. The collision view draws through
//! [`view_proj`] of the same camera, framed by [`overview`].

use glam::{Mat4, Vec3};

use crate::scene::Camera;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Orbit {
    pub target: Vec3,
    /// Radians around +Y, and above the horizon.
    pub yaw: f32,
    pub pitch: f32,
    pub distance: f32,
    pub vfov_deg: f32,
}

impl Orbit {
    pub fn from_camera(c: &Camera) -> Self {
        let offset = c.position - c.target;
        let distance = offset.length().max(1e-4);
        let d = offset / distance;
        Orbit {
            target: c.target,
            yaw: d.x.atan2(d.z),
            pitch: d.y.clamp(-1.0, 1.0).asin(),
            distance,
            vfov_deg: c.vfov_deg,
        }
    }

    pub fn camera(&self) -> Camera {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        let offset = Vec3::new(sy * cp, sp, cy * cp) * self.distance;
        Camera { position: self.target + offset, target: self.target, up: Vec3::Y, vfov_deg: self.vfov_deg }
    }

    /// Drag by (dx, dy) window pixels.
    pub fn orbit(&mut self, dx: f32, dy: f32) {
        self.yaw -= dx * 0.005;
        self.pitch = (self.pitch + dy * 0.005).clamp(-1.55, 1.55);
    }

    /// Moves the target in the view plane, scaled so the scene follows the mouse.
    pub fn pan(&mut self, dx: f32, dy: f32, window_height: f32) {
        let (right, up, _) = self.basis();
        let per_pixel = 2.0 * self.distance * (self.vfov_deg.to_radians() * 0.5).tan() / window_height.max(1.0);
        self.target += (-right * dx + up * dy) * per_pixel;
    }

    /// Wheel steps: positive moves closer.
    pub fn zoom(&mut self, steps: f32) {
        self.distance = (self.distance * 0.9f32.powf(steps)).max(1e-3);
    }

    /// Moves camera and target together: forward, right and up in scene units.
    pub fn fly(&mut self, forward: f32, right: f32, up: f32) {
        let (r, _, f) = self.basis();
        self.target += f * forward + r * right + Vec3::Y * up;
    }

    /// (right, up, forward) of the view.
    fn basis(&self) -> (Vec3, Vec3, Vec3) {
        let c = self.camera();
        let f = (c.target - c.position).normalize_or(Vec3::NEG_Z);
        let r = f.cross(Vec3::Y).normalize_or(Vec3::X);
        (r, r.cross(f), f)
    }
}

/// A camera that sees all of the box `min..max` from the front (+z), above
/// and a little to the right.
pub fn overview(min: Vec3, max: Vec3, vfov_deg: f32) -> Camera {
    let centre = (min + max) * 0.5;
    let radius = ((max - min) * 0.5).length().max(1e-3);
    // Far enough that the bounding sphere fits the vertical field of view.
    let distance = radius / (vfov_deg.to_radians() * 0.5).sin();
    let dir = Vec3::new(0.35, 0.45, 1.0).normalize();
    Camera { position: centre + dir * distance, target: centre, up: Vec3::Y, vfov_deg }
}

/// World to clip space for wgpu (depth 0..1, right-handed, y up).
pub fn view_proj(c: &Camera, aspect: f32, near: f32, far: f32) -> Mat4 {
    let proj = Mat4::perspective_rh(c.vfov_deg.to_radians(), aspect.max(1e-3), near, far);
    proj * Mat4::look_at_rh(c.position, c.target, c.up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orbit_round_trips_the_scene_camera() {
        let c = Camera {
            position: Vec3::new(1.0, 2.0, 5.0),
            target: Vec3::new(0.0, 1.0, 0.0),
            up: Vec3::Y,
            vfov_deg: 40.0,
        };
        let back = Orbit::from_camera(&c).camera();
        assert!((back.position - c.position).length() < 1e-4, "{back:?}");
        assert_eq!(back.target, c.target);
    }

    #[test]
    fn zoom_and_fly_move_the_camera_and_keep_its_distance_positive() {
        let c = Camera { position: Vec3::new(0.0, 0.0, 5.0), target: Vec3::ZERO, up: Vec3::Y, vfov_deg: 40.0 };
        let mut o = Orbit::from_camera(&c);
        o.zoom(1000.0);
        assert!(o.distance > 0.0);
        let mut o = Orbit::from_camera(&c);
        o.fly(1.0, 0.0, 0.0);
        assert!((o.camera().position.z - 4.0).abs() < 1e-5);
    }

    #[test]
    fn overview_frames_the_whole_box_in_front_of_the_camera() {
        let (min, max) = (Vec3::new(-2.0, 0.0, -1.0), Vec3::new(2.0, 3.0, 1.0));
        let c = overview(min, max, 45.0);
        let m = view_proj(&c, 1.0, 0.01, 100.0);
        let centre = m.project_point3((min + max) * 0.5);
        assert!(centre.x.abs() < 1e-4 && centre.y.abs() < 1e-4, "{centre:?}");
        for i in 0..8 {
            let p = Vec3::new([min.x, max.x][i & 1], [min.y, max.y][(i >> 1) & 1], [min.z, max.z][(i >> 2) & 1]);
            let q = m.project_point3(p);
            assert!(q.x.abs() <= 1.0 && q.y.abs() <= 1.0, "corner {p} leaves the view: {q}");
            assert!(q.z > 0.0 && q.z < 1.0, "corner {p} outside the depth range: {q}");
        }
    }
}
