//! Display through wgpu: any adapter will do (lavapipe included), since the
//! path tracer and the collision demo compute on the CPU or through CUDA and
//! only hand over their results. For the path tracer this is the 8-bit sRGB
//! image the engine converted where it computes (`Engine::rgba8`), uploaded
//! each frame to an RGBA8 texture that `shaders/display.wgsl` copies to the
//! window; for the collision demo the bodies, which `bodies.rs` draws in 3D. egui draws the overlay on top; a screenshot draws
//! the same passes into an offscreen texture too and reads it back.

use std::num::NonZeroU64;
use std::path::Path;
use std::sync::Arc;

use winit::window::Window;

use super::ViewerError;
use super::bodies::{BodiesPass, SceneFrame};
use super::mesh::LineVertex;
use crate::collide::Body;

/// The display pass's uniform. Keep in sync with `shaders/display.wgsl` `Display`.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct DisplayUniform {
    rect: [f32; 4],
    background: [f32; 4],
}

/// Where the image goes and what surrounds it.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// x, y, width, height in framebuffer pixels.
    pub rect: [f32; 4],
    pub background: [f32; 4],
}

/// What the window shows left of the overlay.
#[derive(Clone, Copy, Debug)]
pub enum Content {
    /// The path tracer's image, last uploaded with [`Gpu::upload`].
    Image(Layout),
    /// The bodies last uploaded with [`Gpu::upload_bodies`].
    Bodies(SceneFrame),
}

/// What egui produced for one frame, ready for [`Gpu::present`].
pub struct Overlay<'a> {
    pub jobs: &'a [egui::ClippedPrimitive],
    /// Drained by [`Gpu::present`]: egui insists every delta is applied.
    pub textures: &'a mut egui::TexturesDelta,
    pub pixels_per_point: f32,
}

struct Image {
    texture: wgpu::Texture,
    /// The texture as a compute shader writes it (unorm: storage cannot be sRGB).
    storage: Option<wgpu::TextureView>,
    bind_group: wgpu::BindGroup,
    width: u32,
    height: u32,
}

pub struct Gpu {
    /// The window's surface; `None` offscreen, where frames are drawn into `offscreen`.
    surface: Option<wgpu::Surface<'static>>,
    offscreen: Option<wgpu::Texture>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// The same device as reap's wgpu layer opened it (features, limits,
    /// error scopes): what the wgpu backend computes on, so that its image
    /// never leaves the adapter.
    compute: Arc<crate::wgpu_runtime::Device>,
    config: wgpu::SurfaceConfiguration,
    pub adapter: String,
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    image: Option<Image>,
    /// Made on the collision view's first frame.
    bodies: Option<BodiesPass>,
    egui: egui_wgpu::Renderer,
}

/// The pieces both render passes (this display and [`BodiesPass`]) build the
/// same way, so each pass says only what is its own.
pub(super) fn shader(device: &wgpu::Device, label: &str, wgsl: &str) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    })
}

/// A layout entry for a uniform buffer holding one `T`.
pub(super) fn uniform_entry<T>(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: NonZeroU64::new(size_of::<T>() as u64),
        },
        count: None,
    }
}

/// A uniform buffer holding one `T`, written by the queue each frame.
pub(super) fn uniform_buffer<T>(device: &wgpu::Device, label: &str) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size_of::<T>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A single-sample 2D texture without mips.
pub(super) fn texture_2d(
    device: &wgpu::Device,
    label: &str,
    (width, height): (u32, u32),
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::Texture {
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    })
}

fn gpu_err(what: &str, e: &dyn std::fmt::Display) -> ViewerError {
    ViewerError::Display(format!("{what}: {e}"))
}

/// "NAME (BACKEND)" as the overlay shows the display adapter.
fn adapter_name(adapter: &wgpu::Adapter) -> String {
    let info = adapter.get_info();
    format!("{} ({:?})", info.name, info.backend)
}

/// Drives a wgpu future to completion. On native backends these resolve at
/// once, so polling with a no-op waker spares a dependency on an executor.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

impl Gpu {
    pub fn new(window: Arc<Window>) -> Result<Self, ViewerError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let size = window.inner_size();
        let surface = instance.create_surface(window).map_err(|e| gpu_err("cannot create a wgpu surface", &e))?;
        // The display adapter also computes on the wgpu backend: the fast one.
        let adapter = block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: Some(&surface),
            apply_limit_buckets: false,
        }))
        .map_err(|e| {
            gpu_err(
                "no graphics adapter can draw to this window (install a Vulkan driver, e.g. mesa-vulkan-drivers)",
                &e,
            )
        })?;
        let caps = surface.get_capabilities(&adapter);
        // egui blends in gamma space: it prefers a unorm target, which then
        // gets the image's sRGB bytes as they are.
        let name = adapter_name(&adapter);
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| matches!(f, wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Rgba8Unorm))
            .or_else(|| caps.formats.first().copied())
            .ok_or_else(|| ViewerError::Display(format!("the adapter {name} cannot present to this window")))?;
        let mut config = surface
            .get_default_config(&adapter, size.width.max(1), size.height.max(1))
            .ok_or_else(|| ViewerError::Display(format!("the adapter {name} cannot present to this window")))?;
        config.format = format;
        config.view_formats = vec![format];
        config.present_mode = wgpu::PresentMode::AutoNoVsync;
        Self::on(&adapter, Some(surface), config)
    }

    /// Draws into a texture of `width` x `height` instead of a window, on the
    /// best adapter for compute (`reap view --offscreen`): where no window can
    /// open on the GPU that computes (the H100 machine), the same frames, overlay
    /// and draws run and are timed.
    pub fn offscreen(width: u32, height: u32) -> Result<Self, ViewerError> {
        let adapter =
            crate::wgpu_runtime::pick(&Default::default()).map_err(|e| ViewerError::Backend(e.to_string()))?;
        let format = wgpu::TextureFormat::Rgba8Unorm;
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width: width.max(1),
            height: height.max(1),
            present_mode: wgpu::PresentMode::AutoNoVsync,
            desired_maximum_frame_latency: 2,
            alpha_mode: wgpu::CompositeAlphaMode::Opaque,
            view_formats: vec![format],
            color_space: Default::default(),
        };
        Self::on(&adapter, None, config)
    }

    fn on(
        adapter: &wgpu::Adapter,
        surface: Option<wgpu::Surface<'static>>,
        config: wgpu::SurfaceConfiguration,
    ) -> Result<Self, ViewerError> {
        let adapter_name = adapter_name(adapter);
        let format = config.format;
        // Opened as the wgpu backend opens its devices (the adapter's own
        // limits, timestamps and subgroups where it has them), so that the
        // backend can compute on this very device.
        let compute =
            crate::wgpu_runtime::Device::on_adapter(&adapter, crate::wgpu_runtime::Features::from_env(), "reap viewer")
                .map_err(|e| gpu_err("cannot open the graphics device", &e))?;
        let compute = Arc::new(compute);
        let (device, queue) = (compute.device.clone(), compute.queue.clone());

        let offscreen = match &surface {
            Some(surface) => {
                surface.configure(&device, &config);
                None
            }
            None => {
                let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
                Some(texture_2d(&device, "offscreen frame", (config.width, config.height), format, usage))
            }
        };

        let module = shader(&device, "display.wgsl", include_str!("../../shaders/display.wgsl"));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("display"),
            entries: &[
                uniform_entry::<DisplayUniform>(0, wgpu::ShaderStages::FRAGMENT),
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: false },
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("display"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("display"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                buffers: &[],
                compilation_options: Default::default(),
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                targets: &[Some(wgpu::ColorTargetState { format, blend: None, write_mask: wgpu::ColorWrites::ALL })],
                compilation_options: Default::default(),
            }),
            multiview_mask: None,
            cache: None,
        });
        let uniform = uniform_buffer::<DisplayUniform>(&device, "display uniform");
        let egui = egui_wgpu::Renderer::new(&device, format, egui_wgpu::RendererOptions::default());
        Ok(Gpu {
            surface,
            offscreen,
            device,
            queue,
            compute,
            config,
            adapter: adapter_name,
            pipeline,
            layout,
            uniform,
            image: None,
            bodies: None,
            egui,
        })
    }

    pub fn max_texture_side(&self) -> usize {
        self.device.limits().max_texture_dimension_2d as usize
    }

    pub fn resize(&mut self, width: u32, height: u32) {
        if width > 0 && height > 0 && (width, height) != (self.config.width, self.config.height) {
            self.config.width = width;
            self.config.height = height;
            match &self.surface {
                Some(surface) => surface.configure(&self.device, &self.config),
                None => {
                    let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
                    let size = (width, height);
                    self.offscreen = Some(texture_2d(&self.device, "offscreen frame", size, self.config.format, usage));
                }
            }
        }
    }

    /// The display adapter's device for the wgpu backend, or why it cannot
    /// compute (a GL adapter, or one too small for the compaction shaders).
    pub fn compute_device(&self) -> Result<Arc<crate::wgpu_runtime::Device>, String> {
        if matches!(self.compute.info.backend, wgpu::Backend::Gl | wgpu::Backend::BrowserWebGpu | wgpu::Backend::Noop) {
            return Err(format!(
                "the display adapter {} draws through {:?}, which the wgpu backend does not compute on (it needs \
                 Vulkan, Metal or DX12)",
                self.adapter, self.compute.info.backend
            ));
        }
        self.compute.check_compute().map_err(|e| e.to_string())?;
        Ok(self.compute.clone())
    }

    /// The display texture of the path tracer's image, made (or remade) at `width` x `height`.
    fn image(&mut self, width: u32, height: u32) -> &Image {
        if self.image.as_ref().is_none_or(|i| (i.width, i.height) != (width, height)) {
            // The bytes are sRGB-encoded already: a unorm target gets them as
            // they are, an sRGB target gets them decoded here and encoded by
            // the target (shaders/display.wgsl). Storage cannot be sRGB, so
            // the texture is unorm and an sRGB view reads it where needed.
            let srgb = self.config.format.is_srgb();
            let sampled = if srgb { wgpu::TextureFormat::Rgba8UnormSrgb } else { wgpu::TextureFormat::Rgba8Unorm };
            let computes = self.compute_device().is_ok();
            let mut usage = wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST;
            if computes {
                usage |= wgpu::TextureUsages::STORAGE_BINDING;
            }
            let view_formats: &[wgpu::TextureFormat] = if srgb { &[wgpu::TextureFormat::Rgba8UnormSrgb] } else { &[] };
            let texture = self.device.create_texture(&wgpu::TextureDescriptor {
                label: Some("path tracer image"),
                size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba8Unorm,
                usage,
                view_formats,
            });
            let view =
                texture.create_view(&wgpu::TextureViewDescriptor { format: Some(sampled), ..Default::default() });
            let storage = computes.then(|| texture.create_view(&Default::default()));
            let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("display"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: self.uniform.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&view) },
                ],
            });
            self.image = Some(Image { texture, storage, bind_group, width, height });
        }
        self.image.as_ref().expect("made above")
    }

    /// Where the wgpu backend writes the path tracer's image (`width` x
    /// `height`, 8-bit sRGB bytes in an Rgba8Unorm storage texture): the
    /// texture the display pass samples, so the image never leaves the adapter.
    pub fn image_target(&mut self, width: u32, height: u32) -> Option<wgpu::TextureView> {
        self.image(width, height).storage.clone()
    }

    /// Uploads the path tracer's image (8-bit sRGB RGBA), `width` x `height`.
    pub fn upload(&mut self, rgba: &[[u8; 4]], width: u32, height: u32) {
        if rgba.len() != width as usize * height as usize {
            return;
        }
        let queue = self.queue.clone();
        let image = self.image(width, height);
        queue.write_texture(
            image.texture.as_image_copy(),
            rgba.as_flattened(),
            wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(width * 4), rows_per_image: None },
            wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
        );
    }

    /// The collision demo's bodies and its container's outline, for the next
    /// [`Content::Bodies`] frames.
    pub fn upload_bodies(&mut self, bodies: &[Body], lines: &[LineVertex]) {
        let (device, format) = (&self.device, self.config.format);
        let pass = self.bodies.get_or_insert_with(|| BodiesPass::new(device, format));
        pass.upload(&self.device, &self.queue, bodies, lines);
    }

    /// As [`Self::upload_bodies`], from a wgpu engine's buffer on this
    /// device: `count` bodies, `spheres` of them spheres.
    pub fn group_bodies(&mut self, bodies: &wgpu::Buffer, count: u32, spheres: u32, lines: &[LineVertex]) {
        let (device, format) = (&self.device, self.config.format);
        let pass = self.bodies.get_or_insert_with(|| BodiesPass::new(device, format));
        pass.group_from(&self.device, &self.queue, bodies, count, spheres, lines);
    }

    /// Draws the content and the overlay to the window, and when `screenshot`
    /// is given, into an offscreen texture that is read back and saved as PNG.
    pub fn present(
        &mut self,
        content: Content,
        overlay: &mut Overlay<'_>,
        screenshot: Option<&Path>,
    ) -> Result<(), ViewerError> {
        let format = self.config.format;
        match &content {
            Content::Image(layout) => self.queue.write_buffer(
                &self.uniform,
                0,
                bytemuck::bytes_of(&DisplayUniform { rect: layout.rect, background: layout.background }),
            ),
            Content::Bodies(frame) => {
                let (device, format) = (&self.device, self.config.format);
                let pass = self.bodies.get_or_insert_with(|| BodiesPass::new(device, format));
                pass.prepare(&self.device, &self.queue, (self.config.width, self.config.height), frame);
            }
        }
        for (id, deltas) in overlay.textures.set.drain() {
            for delta in deltas {
                self.egui.update_texture(&self.device, &self.queue, id, &delta);
            }
        }
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [self.config.width, self.config.height],
            pixels_per_point: overlay.pixels_per_point,
        };
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let user = self.egui.update_buffers(&self.device, &self.queue, &mut encoder, overlay.jobs, &screen);

        let frame = match &self.surface {
            Some(surface) => match surface.get_current_texture() {
                wgpu::CurrentSurfaceTexture::Success(f) | wgpu::CurrentSurfaceTexture::Suboptimal(f) => Some(f),
                wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                    surface.configure(&self.device, &self.config);
                    None
                }
                _ => None,
            },
            None => None,
        };
        if let Some(frame) = &frame {
            let view = frame.texture.create_view(&Default::default());
            self.draw(&mut encoder, &view, &content, overlay.jobs, &screen);
        }
        if let Some(target) = &self.offscreen {
            let view = target.create_view(&Default::default());
            self.draw(&mut encoder, &view, &content, overlay.jobs, &screen);
        }
        let capture = screenshot.map(|_| {
            let size = (self.config.width, self.config.height);
            let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
            let texture = texture_2d(&self.device, "screenshot", size, format, usage);
            let view = texture.create_view(&Default::default());
            self.draw(&mut encoder, &view, &content, overlay.jobs, &screen);
            // Rows of a texture-to-buffer copy are padded to 256 bytes.
            let row = self.config.width * 4;
            let padded = row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
            let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("screenshot readback"),
                size: padded as u64 * self.config.height as u64,
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                mapped_at_creation: false,
            });
            encoder.copy_texture_to_buffer(
                texture.as_image_copy(),
                wgpu::TexelCopyBufferInfo {
                    buffer: &buffer,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(padded),
                        rows_per_image: None,
                    },
                },
                texture.size(),
            );
            (buffer, row, padded)
        });
        self.queue.submit(user.into_iter().chain([encoder.finish()]));
        // Freed only after the submit that may still use them.
        for id in overlay.textures.free.drain() {
            self.egui.free_texture(&id);
        }
        if let Some(frame) = frame {
            self.queue.present(frame);
        }
        if let (Some((buffer, row, padded)), Some(path)) = (capture, screenshot) {
            self.save(&buffer, row, padded, path)?;
        }
        Ok(())
    }

    fn draw(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        view: &wgpu::TextureView,
        content: &Content,
        jobs: &[egui::ClippedPrimitive],
        screen: &egui_wgpu::ScreenDescriptor,
    ) {
        // The bodies need a depth buffer, which egui's pipelines do not
        // declare: they get a pass of their own, and the overlay loads it.
        let load = match (content, &self.bodies) {
            (Content::Bodies(frame), Some(bodies)) => {
                bodies.draw(encoder, view, frame);
                wgpu::LoadOp::Load
            }
            _ => wgpu::LoadOp::Clear(wgpu::Color::BLACK),
        };
        let pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("image + overlay"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view,
                resolve_target: None,
                ops: wgpu::Operations { load, store: wgpu::StoreOp::Store },
                depth_slice: None,
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        // egui's renderer takes a 'static pass; nothing touches the encoder until it drops.
        let mut pass = pass.forget_lifetime();
        if let (Content::Image(_), Some(image)) = (content, &self.image) {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &image.bind_group, &[]);
            pass.draw(0..3, 0..1);
        }
        self.egui.render(&mut pass, jobs, screen);
    }

    fn save(&self, buffer: &wgpu::Buffer, row: u32, padded: u32, path: &Path) -> Result<(), ViewerError> {
        let slice = buffer.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let fail = |why: String| ViewerError::Output(crate::files::fail(path, why));
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| fail(format!("reading the frame back: {e}")))?;
        rx.recv()
            .map_err(|e| fail(format!("reading the frame back: {e}")))?
            .map_err(|e| fail(format!("reading the frame back: {e}")))?;
        let bgra = matches!(self.config.format, wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb);
        let mut rgba = Vec::with_capacity((row * self.config.height) as usize);
        {
            let mapped = slice.get_mapped_range().map_err(|e| fail(format!("reading the frame back: {e}")))?;
            for line in mapped.chunks(padded as usize) {
                for px in line[..row as usize].chunks_exact(4) {
                    let [a, b, c, _] = [px[0], px[1], px[2], px[3]];
                    // The window is opaque: store alpha 255 whatever the surface kept.
                    rgba.extend_from_slice(&if bgra { [c, b, a, 255] } else { [a, b, c, 255] });
                }
            }
        }
        buffer.unmap();
        super::write_png(path, &rgba, self.config.width, self.config.height)
    }
}
