//! The interactive viewer (`reap view`, and `reap` with no arguments): the
//! path tracer's progressive image in a winit window, with an egui overlay
//! that compares compaction algorithms per frame and per configuration.
//!
//! The layers, from the window inwards:
//! - `mod.rs`: the winit event loop; each redraw renders one frame, runs the
//!   overlay and presents.
//! - `gpu.rs` + `shaders/display.wgsl`: wgpu display of the accumulated sums
//!   and the overlay, and screenshots.
//! - `overlay.rs`: the egui widgets; they edit the state and return actions.
//! - `session.rs`: scene → BVH → packed scene → engine on either backend.
//! - `state.rs` and `camera.rs`: plain data and logic, no window or GPU, so
//!   their unit tests run anywhere. They compile without the `viewer` feature.

pub mod camera;
pub mod state;

#[cfg(feature = "viewer")]
mod gpu;
#[cfg(feature = "viewer")]
mod overlay;
#[cfg(feature = "viewer")]
pub mod session;

#[cfg(feature = "viewer")]
pub use app::{ViewOptions, run};

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
    use std::time::Instant;

    use winit::application::ApplicationHandler;
    use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
    use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
    use winit::keyboard::{KeyCode, PhysicalKey};
    use winit::window::{Window, WindowId};

    use super::camera::Orbit;
    use super::gpu::{Gpu, Layout, Overlay};
    use super::overlay::{self, Action, Facts, OverlayState, PANEL_WIDTH};
    use super::session::{BackendKind, Session, cuda_backend};
    use super::state::ViewerState;
    use super::{ViewerError, write_text};

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
        let session = Session::open(&opts.scene, kind, opts.width, opts.height, 8, None)?;
        let event_loop = EventLoop::new().map_err(|e| ViewerError::NoDisplay(e.to_string()))?;
        let mut state = ViewerState::new(session.engine.choices());
        state.backend_note = note;
        if let Some(k) = opts.compare_all {
            state.compare_frames = k.max(1);
            state.start_compare();
        }
        let orbit = Orbit::from_camera(&session.home);
        let egui_ctx = egui::Context::default();
        // Dark whatever the desktop says: the image is the focus, and screenshots compare alike.
        egui_ctx.set_theme(egui::Theme::Dark);
        let mut app = App {
            opts: opts.clone(),
            window: None,
            gpu: None,
            egui_ctx,
            egui_winit: None,
            overlay: OverlayState {
                scene_field: opts.scene.clone(),
                obj_field: String::new(),
                screenshot_field: "reap-view.png".into(),
                csv_field: "reap-view-timings.csv".into(),
                backends,
            },
            session,
            state,
            orbit,
            camera_dirty: false,
            drag: None,
            cursor: None,
            keys: HashSet::new(),
            window_frames: 0,
            last_frame: Instant::now(),
            fps: 0.0,
            screenshot: None,
            error: None,
        };
        event_loop.run_app(&mut app).map_err(|e| ViewerError::Display(e.to_string()))?;
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
                    Some(format!("No CUDA GPU, so the CPU computes the image ({why}).")),
                )),
            },
        }
    }

    struct App {
        opts: ViewOptions,
        window: Option<Arc<Window>>,
        gpu: Option<Gpu>,
        egui_ctx: egui::Context,
        egui_winit: Option<egui_winit::State>,
        overlay: OverlayState,
        session: Session,
        state: ViewerState,
        orbit: Orbit,
        camera_dirty: bool,
        drag: Option<MouseButton>,
        cursor: Option<(f64, f64)>,
        keys: HashSet<KeyCode>,
        window_frames: u64,
        last_frame: Instant,
        fps: f64,
        /// A screenshot the overlay asked for, saved with the next frame.
        screenshot: Option<PathBuf>,
        error: Option<ViewerError>,
    }

    impl App {
        fn fail(&mut self, el: &ActiveEventLoop, e: ViewerError) {
            self.error = Some(e);
            el.exit();
        }

        fn render_size(&self) -> (u32, u32) {
            let s = self.state.scale.clamp(0.05, 1.0);
            let w = ((self.opts.width as f32 * s).round() as u32).max(1);
            let h = ((self.opts.height as f32 * s).round() as u32).max(1);
            (w, h)
        }

        /// One window frame: camera, one render, the overlay, present.
        fn redraw(&mut self, el: &ActiveEventLoop) {
            let (Some(window), Some(_)) = (self.window.clone(), self.gpu.as_ref()) else { return };
            let now = Instant::now();
            let dt = now.duration_since(self.last_frame).as_secs_f64();
            self.last_frame = now;
            if dt > 0.0 {
                self.fps = if self.fps == 0.0 { 1.0 / dt } else { 0.9 * self.fps + 0.1 / dt };
            }
            self.fly(dt as f32);
            if self.camera_dirty {
                self.camera_dirty = false;
                if let Err(e) = self.session.set_camera(&self.orbit.camera()) {
                    self.state.message = Some((true, e.to_string()));
                }
                self.state.reset_accumulation();
            }

            if !self.state.paused {
                let choices = self.state.frame_choices();
                let backend = self.session.engine.kind().name();
                match self.session.frame(&choices, self.state.spp_per_frame, self.state.accumulated) {
                    Ok(frames) => {
                        for f in frames {
                            self.state.record(backend, &choices, f);
                        }
                    }
                    Err(e) => {
                        // A configuration that cannot run (e.g. a frontier too large) pauses instead of crashing.
                        self.state.message = Some((true, e.to_string()));
                        self.state.paused = true;
                        self.state.cancel_compare();
                    }
                }
                match self.session.image() {
                    Ok(sums) => {
                        let (w, h) = (self.session.width, self.session.height);
                        if let Some(gpu) = &mut self.gpu {
                            gpu.upload(&sums, w, h);
                        }
                    }
                    Err(e) => self.state.message = Some((true, e.to_string())),
                }
            }

            // The overlay.
            let Some(egui_winit) = &mut self.egui_winit else { return };
            let raw = egui_winit.take_egui_input(&window);
            let facts = Facts {
                backend: self.session.engine.kind(),
                device: match self.session.engine.kind() {
                    BackendKind::Cpu => "CPU (rayon)",
                    BackendKind::Cuda => "CUDA",
                },
                adapter: self.gpu.as_ref().map_or("", |g| g.adapter.as_str()),
                scene: &self.session.scene_name,
                triangles: self.session.triangles,
                width: self.session.width,
                height: self.session.height,
                fps: self.fps,
            };
            let mut actions = Vec::new();
            let (state, ov) = (&mut self.state, &mut self.overlay);
            let mut out = self.egui_ctx.run_ui(raw, |ui| actions = overlay::ui(ui, state, ov, &facts));
            egui_winit.handle_platform_output(&window, out.platform_output);
            let jobs = self.egui_ctx.tessellate(out.shapes, out.pixels_per_point);

            self.window_frames += 1;
            let last = self.opts.frames.is_some_and(|n| self.window_frames >= n);
            let shot =
                if last { self.opts.screenshot.clone().or(self.screenshot.take()) } else { self.screenshot.take() };
            let size = window.inner_size();
            let layout = self.layout(size.width as f32, size.height as f32, out.pixels_per_point);
            let mut overlay =
                Overlay { jobs: &jobs, textures: &mut out.textures_delta, pixels_per_point: out.pixels_per_point };
            let presented = self.gpu.as_mut().map(|gpu| gpu.present(layout, &mut overlay, shot.as_deref()));
            // Whatever present did not apply (it failed early) is dropped on purpose.
            out.textures_delta.clear();
            if let Some(presented) = presented {
                match presented {
                    Ok(()) => {
                        if let Some(p) = &shot {
                            self.state.message = Some((false, format!("saved {}", p.display())));
                        }
                    }
                    Err(e) if last => return self.fail(el, e),
                    Err(e) => self.state.message = Some((true, e.to_string())),
                }
            }
            for a in actions {
                self.act(a);
            }
            if last {
                el.exit();
            }
        }

        /// The image fitted, aspect kept, into the window left of the panel.
        fn layout(&self, w: f32, h: f32, ppp: f32) -> Layout {
            let area_w = (w - PANEL_WIDTH * ppp).max(1.0);
            let aspect = self.opts.width as f32 / self.opts.height as f32;
            let (iw, ih) = if area_w / h > aspect { (h * aspect, h) } else { (area_w, area_w / aspect) };
            Layout {
                rect: [(area_w - iw) * 0.5, (h - ih) * 0.5, iw.max(1.0), ih.max(1.0)],
                background: [0.08, 0.08, 0.08, 1.0],
            }
        }

        fn act(&mut self, action: Action) {
            let (w, h) = self.render_size();
            let s = &mut self.state;
            match action {
                Action::ResetAccumulation => {
                    if let Err(e) = self.session.reset() {
                        s.message = Some((true, e.to_string()));
                    }
                    s.reset_accumulation();
                }
                Action::ResetCamera => {
                    self.orbit = Orbit::from_camera(&self.session.home);
                    self.camera_dirty = true;
                }
                Action::Rebuild => self.rebuild(self.session.engine.kind()),
                Action::SetBackend(kind) => self.rebuild(kind),
                Action::OpenScene(spec) => {
                    if spec.is_empty() {
                        s.message = Some((true, "type the path of an .obj file first".into()));
                        return;
                    }
                    let kind = self.session.engine.kind();
                    match Session::open(&spec, kind, w, h, s.max_bounces, None) {
                        Ok(session) => {
                            self.orbit = Orbit::from_camera(&session.home);
                            s.message = Some((
                                false,
                                format!("opened {} ({} triangles)", session.scene_name, session.triangles),
                            ));
                            self.session = session;
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

        fn rebuild(&mut self, kind: BackendKind) {
            let (w, h) = self.render_size();
            let camera = self.orbit.camera();
            let bounces = self.state.max_bounces;
            match self.session.rebuild(kind, w, h, bounces, &camera) {
                Ok(()) => {
                    self.state.set_available(self.session.engine.choices());
                    self.state.reset_accumulation();
                }
                Err(e) => self.state.message = Some((true, e.to_string())),
            }
        }

        /// WASD (and Q/E) move camera and target together.
        fn fly(&mut self, dt: f32) {
            if self.keys.is_empty() || self.egui_ctx.egui_wants_keyboard_input() {
                return;
            }
            let step = self.orbit.distance * 0.8 * dt.min(0.1);
            let axis = |plus: KeyCode, minus: KeyCode| {
                (self.keys.contains(&plus) as i32 - self.keys.contains(&minus) as i32) as f32 * step
            };
            let (f, r, u) = (
                axis(KeyCode::KeyW, KeyCode::KeyS),
                axis(KeyCode::KeyD, KeyCode::KeyA),
                axis(KeyCode::KeyE, KeyCode::KeyQ),
            );
            if (f, r, u) != (0.0, 0.0, 0.0) {
                self.orbit.fly(f, r, u);
                self.camera_dirty = true;
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
                        match button {
                            MouseButton::Left => self.orbit.orbit(dx, dy),
                            _ => self.orbit.pan(dx, dy, window.inner_size().height as f32),
                        }
                        self.camera_dirty = true;
                    }
                    self.cursor = Some(p);
                }
                WindowEvent::MouseWheel { delta, .. } if !consumed && !self.egui_ctx.is_pointer_over_egui() => {
                    let steps = match delta {
                        MouseScrollDelta::LineDelta(_, y) => y,
                        MouseScrollDelta::PixelDelta(p) => p.y as f32 / 50.0,
                    };
                    self.orbit.zoom(steps);
                    self.camera_dirty = true;
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
