//! The interactive viewer (`reap view`, and `reap` with no arguments): in a
//! winit window, the path tracer's progressive image or the collision demo's
//! bodies (`reap view --collide`), with an egui overlay that compares
//! compaction algorithms per frame and per configuration.
//!
//! The layers, from the window inwards:
//! - `mod.rs`: the winit event loop; each redraw computes one frame of the
//!   mode shown, runs its overlay and presents.
//! - `gpu.rs` + `shaders/display.wgsl`: wgpu display of the engine's 8-bit
//!   image (`Engine::rgba8`) and the overlay, and screenshots; `bodies.rs` + `shaders/collide.wgsl`:
//!   the bodies as instanced meshes with a depth buffer.
//! - `overlay.rs`, `collide_overlay.rs`: the egui widgets of each mode; they
//!   edit the state and return actions.
//! - `session.rs`: scene → BVH → packed scene → engine on either backend;
//!   `collide_session.rs`: scenario → collision engine on either backend.
//! - `state.rs`, `collide_state.rs`, `camera.rs`, `mesh.rs` and `clock.rs`:
//!   plain data and logic, no window or GPU, so their unit tests run
//!   anywhere. They compile without the `viewer` feature.

pub mod camera;
pub mod clock;
pub mod collide_state;
pub mod mesh;
pub mod state;

#[cfg(feature = "viewer")]
mod bodies;
#[cfg(feature = "viewer")]
mod collide_overlay;
#[cfg(feature = "viewer")]
pub mod collide_session;
#[cfg(feature = "viewer")]
mod gpu;
#[cfg(feature = "viewer")]
mod overlay;
#[cfg(feature = "viewer")]
pub mod session;

#[cfg(feature = "viewer")]
pub use app::{CollideOptions, ViewOptions, run};

use std::path::{Path, PathBuf};

/// Why the viewer could not run or could not write a file.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    /// No window can be opened here; `reap render` works without one.
    #[error("no display: {0}")]
    NoDisplay(String),
    /// A window opened but nothing can draw into it.
    #[error("{0}")]
    Display(String),
    #[error("{0}")]
    Backend(String),
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    #[error(transparent)]
    Collide(#[from] crate::collide::CollideError),
    #[error("cannot write {path}: {why}")]
    Output { path: String, why: String },
}

impl ViewerError {
    /// Whether a headless render is the sensible fallback.
    pub fn is_no_display(&self) -> bool {
        matches!(self, ViewerError::NoDisplay(_) | ViewerError::Display(_))
    }
}

/// Writes 8-bit RGBA as PNG through a temporary file, so a failed write leaves no half file.
pub fn write_png(path: &Path, rgba: &[u8], width: u32, height: u32) -> Result<(), ViewerError> {
    let fail = |why: String| ViewerError::Output { path: path.display().to_string(), why };
    let tmp = tmp_path(path);
    image::save_buffer_with_format(&tmp, rgba, width, height, image::ExtendedColorType::Rgba8, image::ImageFormat::Png)
        .map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| fail(e.to_string()))
}

/// Writes text through a temporary file.
pub fn write_text(path: &Path, text: &str) -> Result<(), ViewerError> {
    let fail = |why: String| ViewerError::Output { path: path.display().to_string(), why };
    let tmp = tmp_path(path);
    std::fs::write(&tmp, text).map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| fail(e.to_string()))
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

#[cfg(feature = "viewer")]
mod app {
    use std::collections::HashSet;
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use glam::Vec3;
    use winit::application::ApplicationHandler;
    use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
    use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
    use winit::keyboard::{KeyCode, PhysicalKey};
    use winit::window::{Window, WindowId};

    use super::bodies::SceneFrame;
    use super::camera::{Orbit, overview, view_proj};
    use super::clock::FrameClock;
    use super::collide_overlay::{self, CollideAction, CollideFacts, CollideOverlayState};
    use super::collide_session::CollideSession;
    use super::collide_state::{CollideState, Snapshot};
    use super::gpu::{Content, Gpu, Layout, Overlay};
    use super::mesh::world_lines;
    use super::overlay::{self, Action, Facts, OverlayState, PANEL_WIDTH};
    use super::session::{BackendKind, Session, cuda_backend};
    use super::state::{Mode, ViewerState};
    use super::{ViewerError, write_text};
    use crate::collide::Scenario;

    /// What `reap view` was asked for.
    #[derive(Clone, Debug)]
    pub struct ViewOptions {
        pub scene: String,
        /// `None`: CUDA when it works, else the CPU.
        pub backend: Option<BackendKind>,
        pub width: u32,
        pub height: u32,
        /// Exit after this many frames.
        pub frames: Option<u64>,
        /// Save the window, overlay included, at exit.
        pub screenshot: Option<PathBuf>,
        /// Start "compare all" with the first frame, `K` frames per algorithm.
        pub compare_all: Option<u32>,
        /// Start in the collision demo rather than the path tracer.
        pub collide: Option<CollideOptions>,
        /// BVH levels one breadth-first expansion descends.
        pub descend: u32,
    }

    /// The collision demo's workload.
    #[derive(Clone, Copy, Debug)]
    pub struct CollideOptions {
        pub scenario: Scenario,
        /// `None`: a count the backend steps at an interactive rate.
        pub bodies: Option<u32>,
    }

    /// Bodies when none are asked for: about what each backend steps at 30+
    /// frames per second with the whole pipeline.
    fn default_bodies(kind: BackendKind) -> u32 {
        match kind {
            BackendKind::Cpu => 4_000,
            BackendKind::Cuda => 100_000,
        }
    }

    /// Opens the window and runs until it closes (or `frames` have been drawn).
    pub fn run(opts: ViewOptions) -> Result<(), ViewerError> {
        if opts.width == 0 || opts.height == 0 {
            return Err(ViewerError::Backend("--width and --height must be at least 1".into()));
        }
        #[cfg(all(unix, not(target_os = "macos")))]
        if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
            return Err(ViewerError::NoDisplay(
                "DISPLAY is not set (the viewer needs an X11 or XWayland display)".into(),
            ));
        }
        let (kind, backends, note) = pick_backend(opts.backend)?;
        let (mode, mut tracer, mut collide) = match opts.collide {
            None => (Mode::PathTracer, Some(Tracer::open(&opts, kind, &backends)?), None),
            Some(c) => {
                let bodies = c.bodies.unwrap_or(default_bodies(kind));
                (Mode::Collision, None, Some(Collide::open(c.scenario, bodies, kind, &backends)?))
            }
        };
        let event_loop = EventLoop::new().map_err(|e| ViewerError::NoDisplay(e.to_string()))?;
        if let Some(t) = &mut tracer {
            t.state.backend_note = note.clone();
            if let Some(k) = opts.compare_all {
                t.state.compare_frames = k.max(1);
                t.state.start_compare();
            }
        }
        if let Some(c) = &mut collide {
            c.state.backend_note = note.clone();
            if let Some(k) = opts.compare_all {
                c.state.compare_frames = k.max(1);
                c.state.start_compare();
            }
        }
        let egui_ctx = egui::Context::default();
        // Dark whatever the desktop says: the image is the focus, and screenshots compare alike.
        egui_ctx.set_theme(egui::Theme::Dark);
        let mut app = App {
            opts,
            window: None,
            gpu: None,
            egui_ctx,
            egui_winit: None,
            mode,
            tracer,
            collide,
            backends,
            note,
            drag: None,
            cursor: None,
            keys: HashSet::new(),
            window_frames: 0,
            last_frame: Instant::now(),
            fps: 0.0,
            clock: Default::default(),
            screenshot: None,
            error: None,
        };
        event_loop.run_app(&mut app).map_err(|e| ViewerError::Display(e.to_string()))?;
        // A timed run (--frames) says where the frame time went; the first
        // frames (window, kernel compilation, first uploads) are left out.
        if let (Some(n), None) = (app.opts.frames, &app.error)
            && let Some(s) = app.clock.summary((n as usize / 10).clamp(1, 10))
        {
            println!("{s}");
        }
        match app.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The backend to start on, the ones the overlay offers, and the note it shows once.
    fn pick_backend(want: Option<BackendKind>) -> Result<(BackendKind, Vec<BackendKind>, Option<String>), ViewerError> {
        match want {
            Some(BackendKind::Cpu) => Ok((BackendKind::Cpu, vec![BackendKind::Cpu], None)),
            Some(BackendKind::Cuda) => {
                cuda_backend().map_err(ViewerError::Backend)?;
                Ok((BackendKind::Cuda, vec![BackendKind::Cuda, BackendKind::Cpu], None))
            }
            None => match cuda_backend() {
                Ok(_) => Ok((BackendKind::Cuda, vec![BackendKind::Cuda, BackendKind::Cpu], None)),
                Err(why) => Ok((
                    BackendKind::Cpu,
                    vec![BackendKind::Cpu],
                    Some(format!("No CUDA GPU, so the CPU computes the frames ({why}).")),
                )),
            },
        }
    }

    /// The path tracer mode: its scene, engine, overlay state and camera.
    struct Tracer {
        session: Session,
        state: ViewerState,
        overlay: OverlayState,
        orbit: Orbit,
        camera_dirty: bool,
    }

    impl Tracer {
        fn open(opts: &ViewOptions, kind: BackendKind, backends: &[BackendKind]) -> Result<Self, ViewerError> {
            let mut session = Session::open(&opts.scene, kind, opts.width, opts.height, 8, None)?;
            session.descend = opts.descend;
            Ok(Tracer {
                state: ViewerState::new(session.engine.choices()),
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
    struct Collide {
        session: CollideSession,
        state: CollideState,
        overlay: CollideOverlayState,
        orbit: Orbit,
        /// The bodies changed since they were last uploaded.
        dirty: bool,
        /// A body this fast is drawn in the hottest colour.
        hot_speed: f32,
    }

    impl Collide {
        fn open(
            scenario: Scenario,
            bodies: u32,
            kind: BackendKind,
            backends: &[BackendKind],
        ) -> Result<Self, ViewerError> {
            let session = CollideSession::open(scenario, bodies, kind)?;
            let state = CollideState::new(session.engine.choices(), session.engine.sorts(), scenario.name(), bodies);
            let mut c = Collide {
                state,
                overlay: CollideOverlayState {
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
        fn replace(&mut self, session: CollideSession) {
            self.orbit = Orbit::from_camera(&home(&session));
            self.state.set_available(session.engine.choices(), session.engine.sorts());
            self.state.set_workload(session.scenario.name(), session.bodies);
            self.session = session;
            self.hot_speed = hot_speed(&self.session);
            self.dirty = true;
        }

        /// One simulation step as the state plans it: its stages summed and its wall clock, ms.
        fn step(&mut self) -> Option<(f64, f64)> {
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
    fn home(s: &CollideSession) -> crate::scene::Camera {
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

    struct App {
        opts: ViewOptions,
        window: Option<Arc<Window>>,
        gpu: Option<Gpu>,
        egui_ctx: egui::Context,
        egui_winit: Option<egui_winit::State>,
        mode: Mode,
        /// Each mode, made when first shown and kept when the other one is.
        tracer: Option<Tracer>,
        collide: Option<Collide>,
        backends: Vec<BackendKind>,
        note: Option<String>,
        drag: Option<MouseButton>,
        cursor: Option<(f64, f64)>,
        keys: HashSet<KeyCode>,
        window_frames: u64,
        last_frame: Instant,
        fps: f64,
        clock: FrameClock,
        /// A screenshot the overlay asked for, saved with the next frame.
        screenshot: Option<PathBuf>,
        error: Option<ViewerError>,
    }

    /// What either mode's overlay asked for.
    enum Actions {
        Tracer(Vec<Action>),
        Collide(Vec<CollideAction>),
    }

    impl App {
        fn fail(&mut self, el: &ActiveEventLoop, e: ViewerError) {
            self.error = Some(e);
            el.exit();
        }

        fn render_size(&self) -> (u32, u32) {
            let scale = self.tracer.as_ref().map_or(1.0, |t| t.state.scale);
            let s = scale.clamp(0.05, 1.0);
            let w = ((self.opts.width as f32 * s).round() as u32).max(1);
            let h = ((self.opts.height as f32 * s).round() as u32).max(1);
            (w, h)
        }

        /// The backend the mode shown computes on.
        fn kind(&self) -> BackendKind {
            match (self.mode, &self.tracer, &self.collide) {
                (Mode::PathTracer, Some(t), _) => t.session.engine.kind(),
                (Mode::Collision, _, Some(c)) => c.session.engine.kind(),
                _ => self.backends[0],
            }
        }

        /// The orbit of the mode shown, for `f` to move.
        fn move_camera(&mut self, f: impl FnOnce(&mut Orbit)) {
            match self.mode {
                Mode::PathTracer => {
                    if let Some(t) = &mut self.tracer {
                        f(&mut t.orbit);
                        t.camera_dirty = true;
                    }
                }
                Mode::Collision => {
                    if let Some(c) = &mut self.collide {
                        f(&mut c.orbit);
                    }
                }
            }
        }

        /// The mode's message line.
        fn say(&mut self, error: bool, msg: String) {
            match (self.mode, &mut self.tracer, &mut self.collide) {
                (Mode::PathTracer, Some(t), _) => t.state.message = Some((error, msg)),
                (Mode::Collision, _, Some(c)) => c.state.message = Some((error, msg)),
                _ => {}
            }
        }

        /// One window frame: camera, one frame of the mode shown, the overlay, present.
        fn redraw(&mut self, el: &ActiveEventLoop) {
            let (Some(window), Some(_)) = (self.window.clone(), self.gpu.as_ref()) else { return };
            let now = Instant::now();
            let dt = now.duration_since(self.last_frame).as_secs_f64();
            self.last_frame = now;
            if dt > 0.0 {
                self.fps = if self.fps == 0.0 { 1.0 / dt } else { 0.9 * self.fps + 0.1 / dt };
            }
            self.fly(dt as f32);
            let mut parts = [Duration::ZERO; 4];
            match self.mode {
                Mode::PathTracer => self.step_tracer(&mut parts),
                Mode::Collision => self.step_collide(&mut parts),
            }

            // The overlay.
            let t = Instant::now();
            let Some(egui_winit) = &mut self.egui_winit else { return };
            let raw = egui_winit.take_egui_input(&window);
            let adapter = self.gpu.as_ref().map_or("", |g| g.adapter.as_str());
            let fps = self.fps;
            let device = |kind: BackendKind| match kind {
                BackendKind::Cpu => "CPU (rayon)",
                BackendKind::Cuda => "CUDA",
            };
            let mut actions = Actions::Tracer(Vec::new());
            let mut out = match (self.mode, &mut self.tracer, &mut self.collide) {
                (Mode::PathTracer, Some(t), _) => {
                    let facts = Facts {
                        backend: t.session.engine.kind(),
                        device: device(t.session.engine.kind()),
                        adapter,
                        scene: &t.session.scene_name,
                        triangles: t.session.triangles,
                        width: t.session.width,
                        height: t.session.height,
                        fps,
                    };
                    let (state, ov) = (&mut t.state, &mut t.overlay);
                    self.egui_ctx.run_ui(raw, |ui| actions = Actions::Tracer(overlay::ui(ui, state, ov, &facts)))
                }
                (Mode::Collision, _, Some(c)) => {
                    let facts = CollideFacts {
                        backend: c.session.engine.kind(),
                        device: device(c.session.engine.kind()),
                        adapter,
                        scenario: c.session.scenario,
                        bodies: c.session.bodies,
                        frame: c.session.frame_index,
                        time: c.session.time(),
                        fps,
                    };
                    let (state, ov) = (&mut c.state, &mut c.overlay);
                    self.egui_ctx.run_ui(raw, |ui| {
                        actions = Actions::Collide(collide_overlay::ui(ui, state, ov, &facts));
                    })
                }
                _ => return,
            };
            egui_winit.handle_platform_output(&window, out.platform_output);
            let jobs = self.egui_ctx.tessellate(out.shapes, out.pixels_per_point);
            parts[2] = t.elapsed();

            self.window_frames += 1;
            let last = self.opts.frames.is_some_and(|n| self.window_frames >= n);
            let shot =
                if last { self.opts.screenshot.clone().or(self.screenshot.take()) } else { self.screenshot.take() };
            let size = window.inner_size();
            let content = self.content(size.width as f32, size.height as f32, out.pixels_per_point);
            let mut overlay =
                Overlay { jobs: &jobs, textures: &mut out.textures_delta, pixels_per_point: out.pixels_per_point };
            let t = Instant::now();
            let presented = self.gpu.as_mut().map(|gpu| gpu.present(content, &mut overlay, shot.as_deref()));
            parts[3] = t.elapsed();
            self.clock.record(Duration::from_secs_f64(dt), parts);
            // Whatever present did not apply (it failed early) is dropped on purpose.
            out.textures_delta.clear();
            if let Some(presented) = presented {
                match presented {
                    Ok(()) => {
                        if let Some(p) = &shot {
                            self.say(false, format!("saved {}", p.display()));
                        }
                    }
                    Err(e) if last => return self.fail(el, e),
                    Err(e) => self.say(true, e.to_string()),
                }
            }
            match actions {
                Actions::Tracer(a) => a.into_iter().for_each(|a| self.act(a)),
                Actions::Collide(a) => a.into_iter().for_each(|a| self.act_collide(a)),
            }
            if last {
                el.exit();
            }
        }

        /// The path tracer: camera, one render, the image to the GPU.
        fn step_tracer(&mut self, parts: &mut [Duration; 4]) {
            let Some(tr) = &mut self.tracer else { return };
            if tr.camera_dirty {
                tr.camera_dirty = false;
                if let Err(e) = tr.session.set_camera(&tr.orbit.camera()) {
                    tr.state.message = Some((true, e.to_string()));
                }
                tr.state.reset_accumulation();
            }
            if tr.state.paused {
                return;
            }
            let t = Instant::now();
            let choices = tr.state.frame_choices();
            let backend = tr.session.engine.kind().name();
            match tr.session.frame(&choices, tr.state.spp_per_frame, tr.state.accumulated) {
                Ok(frames) => {
                    for f in frames {
                        self.clock.record_engine(f.frame_ms, f.wall_ms);
                        tr.state.record(backend, &choices, f);
                    }
                }
                Err(e) => {
                    // A configuration that cannot run (e.g. a frontier too large) pauses instead of crashing.
                    tr.state.message = Some((true, e.to_string()));
                    tr.state.paused = true;
                    tr.state.cancel_compare();
                }
            }
            parts[0] = t.elapsed();
            // The hand-off: the engine's 8-bit image (converted and read back
            // by the engine) uploaded to the display texture.
            let t = Instant::now();
            let (w, h) = (tr.session.width, tr.session.height);
            match tr.session.rgba8() {
                Ok(rgba) => {
                    if let Some(gpu) = &mut self.gpu {
                        gpu.upload(rgba, w, h);
                    }
                }
                Err(e) => tr.state.message = Some((true, e.to_string())),
            }
            parts[1] = t.elapsed();
        }

        /// The collision demo: one step, the bodies to the GPU.
        fn step_collide(&mut self, parts: &mut [Duration; 4]) {
            let Some(c) = &mut self.collide else { return };
            let t = Instant::now();
            if let Some((stages_ms, wall_ms)) = c.step() {
                self.clock.record_engine(stages_ms, wall_ms);
            }
            parts[0] = t.elapsed();
            if c.dirty {
                let t = Instant::now();
                c.dirty = false;
                let w = &c.session.world;
                let lines = world_lines(w, w.drum_omega * c.session.time());
                if let Some(gpu) = &mut self.gpu {
                    gpu.upload_bodies(&c.session.shown, &lines);
                }
                parts[1] = t.elapsed();
            }
        }

        /// What goes left of the panel: the image fitted with its aspect
        /// kept, or the 3D view filling the area.
        fn content(&self, w: f32, h: f32, ppp: f32) -> Content {
            let area_w = (w - PANEL_WIDTH * ppp).max(1.0);
            let background = [0.08, 0.08, 0.08, 1.0];
            match (self.mode, &self.collide) {
                (Mode::Collision, Some(c)) => {
                    let camera = c.orbit.camera();
                    let radius = (Vec3::from(c.session.world.max) - Vec3::from(c.session.world.min)).length() * 0.5;
                    // Depth32Float keeps a 1e-3 near plane precise enough for any zoom here.
                    let near = (radius * 1e-3).max(1e-4);
                    let far = c.orbit.distance + 4.0 * radius;
                    Content::Bodies(SceneFrame {
                        view_proj: view_proj(&camera, area_w / h.max(1.0), near, far),
                        viewport: [0.0, 0.0, area_w, h.max(1.0)],
                        background,
                        hot_speed: c.hot_speed,
                    })
                }
                _ => {
                    let aspect = self.opts.width as f32 / self.opts.height as f32;
                    let (iw, ih) = if area_w / h > aspect { (h * aspect, h) } else { (area_w, area_w / aspect) };
                    Content::Image(Layout {
                        rect: [(area_w - iw) * 0.5, (h - ih) * 0.5, iw.max(1.0), ih.max(1.0)],
                        background,
                    })
                }
            }
        }

        /// Shows `mode`, making it first if it was never shown.
        fn set_mode(&mut self, mode: Mode) {
            let kind = self.kind();
            let made = match mode {
                Mode::PathTracer if self.tracer.is_none() => {
                    Tracer::open(&self.opts, kind, &self.backends).map(|t| self.tracer = Some(t))
                }
                Mode::Collision if self.collide.is_none() => {
                    let (scenario, bodies) = match self.opts.collide {
                        Some(c) => (c.scenario, c.bodies.unwrap_or(default_bodies(kind))),
                        None => (Scenario::Pile, default_bodies(kind)),
                    };
                    Collide::open(scenario, bodies, kind, &self.backends).map(|c| self.collide = Some(c))
                }
                _ => Ok(()),
            };
            match made {
                Ok(()) => {
                    self.mode = mode;
                    let note = self.note.clone();
                    match mode {
                        Mode::PathTracer => {
                            if let Some(t) = &mut self.tracer {
                                t.state.backend_note = t.state.backend_note.take().or(note);
                            }
                        }
                        Mode::Collision => {
                            if let Some(c) = &mut self.collide {
                                c.state.backend_note = c.state.backend_note.take().or(note);
                                c.dirty = true;
                            }
                        }
                    }
                }
                Err(e) => self.say(true, format!("cannot open {}: {e}", mode.name())),
            }
        }

        fn act(&mut self, action: Action) {
            let (w, h) = self.render_size();
            if let Action::SetMode(m) = action {
                return self.set_mode(m);
            }
            let Some(tr) = &mut self.tracer else { return };
            let s = &mut tr.state;
            match action {
                Action::SetMode(_) => {}
                Action::ResetAccumulation => {
                    if let Err(e) = tr.session.reset() {
                        s.message = Some((true, e.to_string()));
                    }
                    s.reset_accumulation();
                }
                Action::ResetCamera => {
                    tr.orbit = Orbit::from_camera(&tr.session.home);
                    tr.camera_dirty = true;
                }
                Action::Rebuild => self.rebuild(self.kind()),
                Action::SetBackend(kind) => self.rebuild(kind),
                Action::OpenScene(spec) => {
                    if spec.is_empty() {
                        s.message = Some((true, "type the path of an .obj file first".into()));
                        return;
                    }
                    let kind = tr.session.engine.kind();
                    match Session::open(&spec, kind, w, h, s.max_bounces, None) {
                        Ok(mut session) => {
                            session.descend = tr.session.descend;
                            tr.orbit = Orbit::from_camera(&session.home);
                            s.message = Some((
                                false,
                                format!("opened {} ({} triangles)", session.scene_name, session.triangles),
                            ));
                            tr.session = session;
                            s.reset_accumulation();
                            s.cancel_compare();
                        }
                        // The old scene stays; the overlay says why the new one did not open.
                        Err(e) => s.message = Some((true, e.to_string())),
                    }
                }
                Action::Screenshot(path) => self.screenshot = Some(PathBuf::from(path)),
                Action::ExportCsv(path) => {
                    s.message = Some(match write_text(path.as_ref(), &s.timings_csv()) {
                        Ok(()) => (false, format!("wrote {} frames to {path}", s.history.len())),
                        Err(e) => (true, e.to_string()),
                    });
                }
            }
        }

        fn act_collide(&mut self, action: CollideAction) {
            if let CollideAction::SetMode(m) = action {
                return self.set_mode(m);
            }
            let Some(c) = &mut self.collide else { return };
            match action {
                CollideAction::SetMode(_) => {}
                CollideAction::SetBackend(kind) => match c.session.rebuild(kind) {
                    Ok(()) => {
                        c.state.set_available(c.session.engine.choices(), c.session.engine.sorts());
                        c.state.set_workload(c.session.scenario.name(), c.session.bodies);
                    }
                    Err(e) => c.state.message = Some((true, e.to_string())),
                },
                CollideAction::Reset => {
                    let kind = c.session.engine.kind();
                    let opened = c
                        .state
                        .scenario
                        .parse::<Scenario>()
                        .map_err(ViewerError::from)
                        .and_then(|sc| CollideSession::open(sc, c.state.bodies, kind));
                    match opened {
                        Ok(session) => {
                            c.state.message = Some((
                                false,
                                format!("built {} with {} bodies", session.scenario.name(), session.bodies),
                            ));
                            c.replace(session);
                        }
                        // The old scenario goes on; the overlay says why the new one did not build.
                        Err(e) => c.state.message = Some((true, e.to_string())),
                    }
                }
                CollideAction::ResetCamera => c.orbit = Orbit::from_camera(&home(&c.session)),
                CollideAction::Screenshot(path) => self.screenshot = Some(PathBuf::from(path)),
                CollideAction::ExportCsv(path) => {
                    let s = &mut c.state;
                    s.message = Some(match write_text(path.as_ref(), &s.timings_csv()) {
                        Ok(()) => (false, format!("wrote {} frames to {path}", s.history.len())),
                        Err(e) => (true, e.to_string()),
                    });
                }
            }
        }

        fn rebuild(&mut self, kind: BackendKind) {
            let (w, h) = self.render_size();
            let Some(tr) = &mut self.tracer else { return };
            let camera = tr.orbit.camera();
            let bounces = tr.state.max_bounces;
            match tr.session.rebuild(kind, w, h, bounces, &camera) {
                Ok(()) => {
                    tr.state.set_available(tr.session.engine.choices());
                    tr.state.reset_accumulation();
                }
                Err(e) => tr.state.message = Some((true, e.to_string())),
            }
        }

        /// WASD (and Q/E) move camera and target together.
        fn fly(&mut self, dt: f32) {
            if self.keys.is_empty() || self.egui_ctx.egui_wants_keyboard_input() {
                return;
            }
            let axis = |plus: KeyCode, minus: KeyCode| {
                (self.keys.contains(&plus) as i32 - self.keys.contains(&minus) as i32) as f32
            };
            let (f, r, u) = (
                axis(KeyCode::KeyW, KeyCode::KeyS),
                axis(KeyCode::KeyD, KeyCode::KeyA),
                axis(KeyCode::KeyE, KeyCode::KeyQ),
            );
            if (f, r, u) != (0.0, 0.0, 0.0) {
                self.move_camera(|o| {
                    let step = o.distance * 0.8 * dt.min(0.1);
                    o.fly(f * step, r * step, u * step);
                });
            }
        }
    }

    impl ApplicationHandler for App {
        fn resumed(&mut self, el: &ActiveEventLoop) {
            if self.window.is_some() {
                return;
            }
            let panel = PANEL_WIDTH as u32;
            let attrs = Window::default_attributes()
                .with_title("reap viewer")
                .with_inner_size(winit::dpi::PhysicalSize::new(self.opts.width + panel, self.opts.height));
            let window = match el.create_window(attrs) {
                Ok(w) => Arc::new(w),
                Err(e) => return self.fail(el, ViewerError::NoDisplay(e.to_string())),
            };
            let gpu = match Gpu::new(window.clone()) {
                Ok(g) => g,
                Err(e) => return self.fail(el, e),
            };
            self.egui_winit = Some(egui_winit::State::new(
                self.egui_ctx.clone(),
                egui::ViewportId::ROOT,
                window.as_ref(),
                Some(window.scale_factor() as f32),
                None,
                Some(gpu.max_texture_side()),
            ));
            self.gpu = Some(gpu);
            self.window = Some(window);
            el.set_control_flow(ControlFlow::Poll);
        }

        fn window_event(&mut self, el: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
            let Some(window) = self.window.clone() else { return };
            let consumed = match &mut self.egui_winit {
                Some(s) => s.on_window_event(&window, &event).consumed,
                None => false,
            };
            match event {
                WindowEvent::CloseRequested => el.exit(),
                WindowEvent::Resized(size) => {
                    if let Some(gpu) = &mut self.gpu {
                        gpu.resize(size.width, size.height);
                    }
                }
                WindowEvent::RedrawRequested => self.redraw(el),
                WindowEvent::KeyboardInput { event, .. } => {
                    if let PhysicalKey::Code(code) = event.physical_key {
                        match event.state {
                            ElementState::Pressed if !consumed => {
                                self.keys.insert(code);
                            }
                            ElementState::Released => {
                                self.keys.remove(&code);
                            }
                            _ => {}
                        }
                    }
                }
                WindowEvent::MouseInput { state, button, .. } => match state {
                    ElementState::Pressed if !consumed && !self.egui_ctx.is_pointer_over_egui() => {
                        self.drag = Some(button)
                    }
                    ElementState::Released => self.drag = None,
                    _ => {}
                },
                WindowEvent::CursorMoved { position, .. } => {
                    let p = (position.x, position.y);
                    if let (Some(button), Some(last)) = (self.drag, self.cursor) {
                        let (dx, dy) = ((p.0 - last.0) as f32, (p.1 - last.1) as f32);
                        let height = window.inner_size().height as f32;
                        self.move_camera(|o| match button {
                            MouseButton::Left => o.orbit(dx, dy),
                            _ => o.pan(dx, dy, height),
                        });
                    }
                    self.cursor = Some(p);
                }
                WindowEvent::MouseWheel { delta, .. } if !consumed && !self.egui_ctx.is_pointer_over_egui() => {
                    let steps = match delta {
                        MouseScrollDelta::LineDelta(_, y) => y,
                        MouseScrollDelta::PixelDelta(p) => p.y as f32 / 50.0,
                    };
                    self.move_camera(|o| o.zoom(steps));
                }
                _ => {}
            }
        }

        fn about_to_wait(&mut self, _el: &ActiveEventLoop) {
            if let Some(w) = &self.window {
                w.request_redraw();
            }
        }
    }
}
