//! The interactive viewer (`reap view`, and `reap` with no arguments): in a
//! winit window, the path tracer's progressive image or the collision demo's
//! bodies (`reap view --collide`), with an egui overlay that compares
//! compaction algorithms per frame and per configuration.
//!
//! The layers, from the window inwards:
//! - `mod.rs`: the winit event loop (window, input); `app/frame.rs`: each
//!   redraw computes one frame of the mode shown, runs its overlay and
//!   presents; `app/actions.rs`: the overlays' actions done; `app/modes.rs`:
//!   each mode's session, state and camera.
//! - `gpu.rs` + `shaders/display.wgsl`: wgpu display of the engine's 8-bit
//!   image (`Engine::rgba8`) and the overlay, and screenshots; `bodies.rs` + `shaders/collide.wgsl`:
//!   the bodies as instanced meshes with a depth buffer.
//! - `overlay.rs`: the egui panel, written once over a `Panel`;
//!   `trace_overlay.rs`, `collide_overlay.rs`: what each mode's panel adds.
//!   They edit the state and return actions.
//! - `session.rs`: scene → BVH → packed scene → engine on either backend;
//!   `collide_session.rs`: scenario → collision engine on either backend.
//! - `state.rs`: the `Workload` trait and the one state over it (choices,
//!   table, "compare all", history, export); `trace_state.rs`,
//!   `collide_state.rs`: the two workloads. With `camera.rs`, `mesh.rs` and
//!   `clock.rs`: plain data and logic, no window or GPU, so their unit tests
//!   run anywhere. They compile without the `viewer` feature.

pub mod camera;
pub mod clock;
pub mod collide_state;
pub mod mesh;
pub mod state;
pub mod trace_state;

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
mod trace_overlay;

#[cfg(feature = "viewer")]
pub use app::{CollideOptions, ViewOptions, run, run_offscreen};

use std::path::Path;

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
    #[error(transparent)]
    Output(#[from] crate::files::OutputError),
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
}

impl ViewerError {
    /// Whether a headless render is the sensible fallback.
    pub fn is_no_display(&self) -> bool {
        matches!(self, ViewerError::NoDisplay(_) | ViewerError::Display(_))
    }
}

/// Writes 8-bit RGBA as PNG, whole or not at all: encoded in memory (the
/// same encoder `image::save_buffer_with_format` uses, so the same bytes),
/// then written through the crate's one atomic writer.
pub fn write_png(path: &Path, rgba: &[u8], width: u32, height: u32) -> Result<(), ViewerError> {
    let mut png = std::io::Cursor::new(Vec::new());
    image::write_buffer_with_format(
        &mut png,
        rgba,
        width,
        height,
        image::ExtendedColorType::Rgba8,
        image::ImageFormat::Png,
    )
    .map_err(|e| crate::files::fail(path, e))?;
    Ok(crate::files::write_atomically(path, png.get_ref())?)
}

/// Writes text, whole or not at all.
pub fn write_text(path: &Path, text: &str) -> Result<(), ViewerError> {
    Ok(crate::files::write_atomically(path, text.as_bytes())?)
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
    use super::collide_overlay::CollideFacts;
    use super::collide_session::CollideSession;
    use super::collide_state::{CollideState, Colliding};
    use super::gpu::{Content, Gpu, Layout, Overlay};
    use super::mesh::world_lines;
    use super::overlay::{self, Action, Facts, OverlayState, PANEL_WIDTH};
    use super::session::{BackendKind, DisplayDevice, Session, cuda_backend};
    use super::state::{Mode, Snapshot};
    use super::trace_overlay::TraceFacts;
    use super::trace_state::{Tracing, ViewerState};
    use super::{ViewerError, write_text};
    use crate::collide::Scenario;

    mod actions;
    mod frame;
    mod modes;
    use modes::{Collide, Tracer, home};

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
        /// Wide levels one breadth-first step descends per tile.
        pub block_levels: crate::trace::BlockLevels,
        /// Breadth-first levels sorted by node before their expansion.
        pub group_levels: u32,
        /// The BVH the traversals start on (the overlay switches it).
        pub bvh: crate::trace::BvhKind,
        /// Ranks the path tracer's image is split across (GPUs 0..N).
        pub gpus: usize,
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
            BackendKind::Cuda | BackendKind::Wgpu => 100_000,
        }
    }

    /// Host bytes per pixel the viewer adds to an engine's: the RGBA8 image it displays and a
    /// screenshot's readback.
    const VIEWER_HOST_BYTES: u64 = 4 + 4;

    /// Refuses a size of no pixels, or one whose buffers do not fit the host's memory, before
    /// anything is allocated: `render`'s check, with the CPU engine's buffers (the overlay can
    /// switch to it) and the viewer's own.
    fn check_size(opts: &ViewOptions) -> Result<(), ViewerError> {
        use crate::memory;
        if opts.width == 0 || opts.height == 0 {
            return Err(ViewerError::Backend("--width and --height must be at least 1".into()));
        }
        let per_pixel = crate::trace::IMAGE_HOST_BYTES + crate::trace::PATH_HOST_BYTES + VIEWER_HOST_BYTES;
        let pixels = memory::times(opts.width as u64, opts.height as u64);
        let need = pixels.and_then(|p| memory::times(p, per_pixel));
        let what = format!("a view of {}x{} pixels", opts.width, opts.height);
        memory::check(what, need, memory::Limit::host(), "lower --width and --height")?;
        Ok(())
    }

    /// Opens the window and runs until it closes (or `frames` have been drawn).
    pub fn run(opts: ViewOptions) -> Result<(), ViewerError> {
        check_size(&opts)?;
        #[cfg(all(unix, not(target_os = "macos")))]
        if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
            return Err(ViewerError::NoDisplay(
                "DISPLAY is not set (the viewer needs an X11 or XWayland display)".into(),
            ));
        }
        // The sessions open once the window's device exists (`resumed`): the
        // wgpu backend computes on it.
        let event_loop = EventLoop::new().map_err(|e| ViewerError::NoDisplay(e.to_string()))?;
        let mut app = App::new(opts);
        event_loop.run_app(&mut app).map_err(|e| ViewerError::Display(e.to_string()))?;
        app.finish()
    }

    /// The viewer without a window (`reap view --offscreen --frames N`): the
    /// same frames, overlay and draws, into a texture on the best adapter for
    /// compute, timed as a window's would be. What measures the viewer where
    /// the computing GPU has no display (the H100 machine).
    pub fn run_offscreen(opts: ViewOptions) -> Result<(), ViewerError> {
        check_size(&opts)?;
        let Some(frames) = opts.frames else {
            return Err(ViewerError::Backend("--offscreen draws no window to close: give --frames N".into()));
        };
        let size = (opts.width + PANEL_WIDTH as u32, opts.height);
        let gpu = Gpu::offscreen(size.0, size.1)?;
        let mut app = App::new(opts);
        app.display = gpu.compute_device();
        app.gpu = Some(gpu);
        open_sessions(&mut app)?;
        let screen = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(size.0 as f32, size.1 as f32));
        for _ in 0..frames {
            let raw = egui::RawInput { screen_rect: Some(screen), ..Default::default() };
            let drawn = app.frame(raw, size);
            if let Some(e) = drawn.error {
                app.error = Some(e);
                break;
            }
            if drawn.last {
                break;
            }
        }
        app.finish()
    }

    /// The backend to start on, the ones the overlay offers, and the note it
    /// shows once. `auto` takes CUDA, else the display adapter through wgpu
    /// when it is a hardware GPU, else the CPU; the menu offers every
    /// backend that works here.
    fn pick_backend(
        want: Option<BackendKind>,
        display: &DisplayDevice,
    ) -> Result<(BackendKind, Vec<BackendKind>, Option<String>), ViewerError> {
        let cuda = cuda_backend().map(drop);
        let mut offered = Vec::new();
        if cuda.is_ok() {
            offered.push(BackendKind::Cuda);
        }
        if display.is_ok() {
            offered.push(BackendKind::Wgpu);
        }
        offered.push(BackendKind::Cpu);
        match want {
            Some(BackendKind::Cpu) => Ok((BackendKind::Cpu, offered, None)),
            Some(BackendKind::Cuda) => {
                cuda.map_err(ViewerError::Backend)?;
                Ok((BackendKind::Cuda, offered, None))
            }
            Some(BackendKind::Wgpu) => {
                display.as_ref().map_err(|e| ViewerError::Backend(e.clone()))?;
                Ok((BackendKind::Wgpu, offered, None))
            }
            None => match (cuda, display) {
                (Ok(()), _) => Ok((BackendKind::Cuda, offered, None)),
                (Err(why), Ok(d)) if d.is_hardware() => {
                    let note = format!("No CUDA GPU, so the display adapter computes the frames through wgpu ({why}).");
                    Ok((BackendKind::Wgpu, offered, Some(note)))
                }
                (Err(why), _) => {
                    let note =
                        format!("No CUDA GPU and no hardware wgpu adapter, so the CPU computes the frames ({why}).");
                    Ok((BackendKind::Cpu, offered, Some(note)))
                }
            },
        }
    }

    /// Opens the mode asked for on the backend picked, once the window's
    /// device exists.
    fn open_sessions(app: &mut App) -> Result<(), ViewerError> {
        let (kind, backends, note) = pick_backend(app.opts.backend, &app.display)?;
        match app.opts.collide {
            None => app.tracer = Some(Tracer::open(&app.opts, kind, &backends, &app.display)?),
            Some(c) => {
                let bodies = c.bodies.unwrap_or(default_bodies(kind));
                app.collide = Some(Collide::open(c.scenario, bodies, kind, app.opts.gpus, &backends, &app.display)?);
            }
        }
        if let Some(t) = &mut app.tracer {
            t.state.backend_note = note.clone();
            if let Some(k) = app.opts.compare_all {
                t.state.compare_frames = k.max(1);
                t.state.start_compare();
            }
        }
        if let Some(c) = &mut app.collide {
            c.state.backend_note = note.clone();
            if let Some(k) = app.opts.compare_all {
                c.state.compare_frames = k.max(1);
                c.state.start_compare();
            }
        }
        (app.backends, app.note) = (backends, note);
        Ok(())
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
        /// The window's device as the wgpu backend computes on it, or why not.
        display: DisplayDevice,
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
        Collide(Vec<Action>),
    }

    impl App {
        fn fail(&mut self, el: &ActiveEventLoop, e: ViewerError) {
            self.error = Some(e);
            el.exit();
        }

        fn render_size(&self) -> (u32, u32) {
            let scale = self.tracer.as_ref().map_or(1.0, |t| t.state.workload.scale);
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
                        t.dirty = true;
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

    impl App {
        fn new(opts: ViewOptions) -> Self {
            let mode = if opts.collide.is_some() { Mode::Collision } else { Mode::PathTracer };
            let egui_ctx = egui::Context::default();
            // Dark whatever the desktop says: the image is the focus, and screenshots compare alike.
            egui_ctx.set_theme(egui::Theme::Dark);
            App {
                opts,
                window: None,
                gpu: None,
                egui_ctx,
                egui_winit: None,
                mode,
                tracer: None,
                collide: None,
                backends: Vec::new(),
                note: None,
                display: Err("no window yet".into()),
                drag: None,
                cursor: None,
                keys: HashSet::new(),
                window_frames: 0,
                last_frame: Instant::now(),
                fps: 0.0,
                clock: Default::default(),
                screenshot: None,
                error: None,
            }
        }

        /// After the last frame: a timed run (--frames) says where the frame
        /// time went, the first frames (window, kernel compilation, first
        /// uploads) left out.
        fn finish(self) -> Result<(), ViewerError> {
            if let (Some(n), None) = (self.opts.frames, &self.error)
                && let Some(s) = self.clock.summary((n as usize / 10).clamp(1, 10))
            {
                println!("{s}");
            }
            match self.error {
                Some(e) => Err(e),
                None => Ok(()),
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
            self.display = gpu.compute_device();
            self.gpu = Some(gpu);
            self.window = Some(window);
            if let Err(e) = open_sessions(self) {
                return self.fail(el, e);
            }
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
