//! The viewer's two modes as the event loop holds them: the path tracer's
//! session, overlay state and camera, and the collision demo's, with the
//! collision demo's step and its starting camera.

use super::*;

/// One mode as the event loop holds it: its session, the panel's state, the
/// overlay's fields and the orbit camera.
pub(super) struct Workspace<S, St> {
    pub(super) session: S,
    pub(super) state: St,
    pub(super) overlay: OverlayState,
    pub(super) orbit: Orbit,
    /// What is shown is behind the session: the tracer's camera moved (its
    /// sums restart), the collision demo's bodies changed (they are uploaded).
    pub(super) dirty: bool,
}

/// The path tracer mode: its scene, engine, overlay state and camera.
pub(super) type Tracer = Workspace<Session, ViewerState>;

/// The collision mode: its scenario, engine, overlay state and camera.
pub(super) type Collide = Workspace<CollideSession, CollideState>;

impl Tracer {
    pub(super) fn open(
        opts: &ViewOptions,
        kind: BackendKind,
        backends: &[BackendKind],
        display: &DisplayDevice,
    ) -> Result<Self, ViewerError> {
        let mut session = Session::open(&opts.scene, kind, opts.width, opts.height, 8, None, opts.gpus, display)?;
        session.descend = opts.descend;
        Ok(Tracer {
            state: ViewerState::for_tracer(session.engine.choices(), opts.bvh, opts.block_levels)
                .grouping(opts.group_levels),
            overlay: OverlayState {
                scene_field: opts.scene.clone(),
                obj_field: String::new(),
                screenshot_field: "reap-view.png".into(),
                csv_field: "reap-view-timings.csv".into(),
                backends: backends.to_vec(),
            },
            orbit: Orbit::from_camera(&session.home),
            dirty: false,
            session,
        })
    }
}

impl Collide {
    pub(super) fn open(
        scenario: Scenario,
        bodies: u32,
        kind: BackendKind,
        gpus: usize,
        backends: &[BackendKind],
        display: &DisplayDevice,
    ) -> Result<Self, ViewerError> {
        let session = CollideSession::open(scenario, bodies, kind, gpus, display)?;
        let state = CollideState::for_collide(session.engine.choices(), session.engine.sorts(), scenario, bodies);
        Ok(Collide {
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
            session,
        })
    }

    /// A new session in place of the running one (the old one stays if it fails).
    pub(super) fn replace(&mut self, session: CollideSession) {
        self.orbit = Orbit::from_camera(&home(&session));
        self.state.set_offer(session.engine.choices(), session.engine.sorts());
        self.state.set_workload(session.scenario, session.bodies);
        self.session = session;
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
            Snapshot::Take => self.session.take_snapshot(),
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
