//! The viewer's two modes as the event loop holds them: the path tracer's
//! session, overlay state and camera, and the collision demo's, with the
//! collision demo's step and its starting camera.

use super::*;

/// The path tracer mode: its scene, engine, overlay state and camera.
pub(super) struct Tracer {
    pub(super) session: Session,
    pub(super) state: ViewerState,
    pub(super) overlay: OverlayState,
    pub(super) orbit: Orbit,
    pub(super) camera_dirty: bool,
}

impl Tracer {
    pub(super) fn open(opts: &ViewOptions, kind: BackendKind, backends: &[BackendKind]) -> Result<Self, ViewerError> {
        let mut session = Session::open(&opts.scene, kind, opts.width, opts.height, 8, None)?;
        session.descend = opts.descend;
        Ok(Tracer {
            state: ViewerState::for_tracer(session.engine.choices()),
            overlay: OverlayState {
                scene_field: opts.scene.clone(),
                obj_field: String::new(),
                screenshot_field: "reap-view.png".into(),
                csv_field: "reap-view-timings.csv".into(),
                backends: backends.to_vec(),
            },
            orbit: Orbit::from_camera(&session.home),
            camera_dirty: false,
            session,
        })
    }
}

/// The collision mode: its scenario, engine, overlay state and camera.
pub(super) struct Collide {
    pub(super) session: CollideSession,
    pub(super) state: CollideState,
    pub(super) overlay: OverlayState,
    pub(super) orbit: Orbit,
    /// The bodies changed since they were last uploaded.
    pub(super) dirty: bool,
    /// A body this fast is drawn in the hottest colour.
    pub(super) hot_speed: f32,
}

impl Collide {
    pub(super) fn open(
        scenario: Scenario,
        bodies: u32,
        kind: BackendKind,
        backends: &[BackendKind],
    ) -> Result<Self, ViewerError> {
        let session = CollideSession::open(scenario, bodies, kind)?;
        let state = CollideState::for_collide(session.engine.choices(), session.engine.sorts(), scenario, bodies);
        let mut c = Collide {
            state,
            overlay: OverlayState {
                scene_field: String::new(),
                obj_field: String::new(),
                screenshot_field: "reap-collide.png".into(),
                csv_field: "reap-collide-timings.csv".into(),
                backends: backends.to_vec(),
            },
            orbit: Orbit::from_camera(&home(&session)),
            dirty: true,
            hot_speed: 1.0,
            session,
        };
        c.hot_speed = hot_speed(&c.session);
        Ok(c)
    }

    /// A new session in place of the running one (the old one stays if it fails).
    pub(super) fn replace(&mut self, session: CollideSession) {
        self.orbit = Orbit::from_camera(&home(&session));
        self.state.set_offer(session.engine.choices(), session.engine.sorts());
        self.state.set_workload(session.scenario, session.bodies);
        self.session = session;
        self.hot_speed = hot_speed(&self.session);
        self.dirty = true;
    }

    /// One simulation step as the state plans it: its stages summed and its wall clock, ms.
    pub(super) fn step(&mut self) -> Option<(f64, f64)> {
        if self.state.paused {
            return None;
        }
        let plan = self.state.plan();
        let backend = self.session.engine.kind().name();
        let ready = match plan.snapshot {
            Snapshot::Keep => Ok(()),
            Snapshot::Take => {
                self.session.take_snapshot();
                Ok(())
            }
            Snapshot::Restore => self.session.restore_snapshot(),
        };
        match ready.and_then(|()| self.session.frame(&plan.choices)) {
            Ok(stats) => {
                let ms = (stats.frame_ms, stats.wall_ms);
                self.state.record(backend, &plan.choices, stats);
                self.dirty = true;
                Some(ms)
            }
            Err(e) => {
                // A configuration that cannot run (e.g. `none`'s frontier too large) pauses instead of crashing.
                self.state.message = Some((true, e.to_string()));
                self.state.paused = true;
                self.state.cancel_compare();
                None
            }
        }
    }
}

/// The collision view's starting camera: the whole container in view.
pub(super) fn home(s: &CollideSession) -> crate::scene::Camera {
    overview(Vec3::from(s.world.min), Vec3::from(s.world.max), 45.0)
}

/// The speed drawn hottest: what a fall through the container's height
/// reaches, or (no gravity) twice the starting mean speed.
fn hot_speed(s: &CollideSession) -> f32 {
    let g = Vec3::from(s.world.gravity).length();
    let h = s.world.max[1] - s.world.min[1];
    if g > 0.0 {
        return (2.0 * g * h).sqrt() * 0.5;
    }
    let n = s.shown.len().max(1) as f32;
    (2.0 * s.shown.iter().map(|b| Vec3::from(b.vel).length()).sum::<f32>() / n).max(1e-3)
}
