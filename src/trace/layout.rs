//! The scene as both engines read it: triangles in BVH order with their
//! edges precomputed, vertex normals and UVs, materials, their textures in one
//! texel array, and the emitters with a power CDF for next-event estimation. The `#[repr(C)]` structs are the twins
//! of `kernels/trace/common.cuh`: keep the two in sync.

use glam::Vec3;

use crate::bvh::{Bvh, Node};
use crate::scene::{Camera, MaterialKind, Scene};
use crate::trace::bsdf::luminance;

/// common.cuh `Tri`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Tri {
    pub v0: [f32; 3],
    pub material: u32,
    pub e1: [f32; 3],
    /// The triangle's BVH position: what a hit's key holds, whichever BVH found it.
    pub pad0: u32,
    pub e2: [f32; 3],
    pub pad1: u32,
}

/// common.cuh `Material`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Material {
    pub albedo: [f32; 3],
    pub kind: u32,
    pub emission: [f32; 3],
    pub roughness: f32,
    pub ior: f32,
    pub emissive: u32,
    /// Index into [`Packed::textures`], or [`NO_TEXTURE`].
    pub texture: u32,
    pub pad: u32,
}

/// common.cuh `NO_TEXTURE`: a material without a texture.
pub const NO_TEXTURE: u32 = u32::MAX;

/// common.cuh `Texture`: where one texture's texels sit in [`Packed::texels`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TextureLayout {
    /// Its first texel; texels run row by row from the image's top row.
    pub offset: u64,
    pub width: u32,
    pub height: u32,
}

/// common.cuh `Camera`: a pinhole, with the image plane's half-extents folded
/// into `right` and `up`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CameraLayout {
    pub origin: [f32; 3],
    pub pad0: f32,
    pub forward: [f32; 3],
    pub pad1: f32,
    pub right: [f32; 3],
    pub pad2: f32,
    pub up: [f32; 3],
    pub pad3: f32,
}

impl CameraLayout {
    pub fn new(c: &Camera, width: u32, height: u32) -> Self {
        let forward = (c.target - c.position).normalize_or(Vec3::Z);
        let mut right = forward.cross(c.up).normalize_or_zero();
        if right == Vec3::ZERO {
            right = forward.any_orthonormal_vector();
        }
        let up = right.cross(forward);
        let half_h = (c.vfov_deg.to_radians() * 0.5).tan();
        let half_w = half_h * width as f32 / height as f32;
        CameraLayout {
            origin: c.position.to_array(),
            forward: forward.to_array(),
            right: (right * half_w).to_array(),
            up: (up * half_h).to_array(),
            ..Default::default()
        }
    }
}

/// Everything the stages read about the scene, in BVH order.
#[derive(Clone, Debug)]
pub struct Packed {
    pub nodes: Vec<Node>,
    pub tris: Vec<Tri>,
    /// Nine floats per triangle: its three vertex normals.
    pub normals: Vec<f32>,
    /// Six floats per triangle: its three vertex UVs (u, v). Empty when no
    /// material has a texture, as nothing reads them then.
    pub uvs: Vec<f32>,
    pub materials: Vec<Material>,
    pub textures: Vec<TextureLayout>,
    /// Every texture's linear RGB texels (w = 1), one after the other: a
    /// float4 is one aligned load on the GPU.
    pub texels: Vec<[f32; 4]>,
    /// Emitting triangles (BVH positions) and the inclusive CDF of their
    /// powers luminance(Le)·area: next-event estimation picks a triangle by
    /// power, then a uniform point on it.
    pub light_tris: Vec<u32>,
    pub light_cdf: Vec<f32>,
    /// P_total = Σ luminance(Le)·area over the emitters. Every emitter
    /// point's area pdf is then luminance(Le) / P_total, which an emitter hit
    /// evaluates without a table lookup (`bsdf::light_pdf`).
    pub light_power: f32,
    pub env: [f32; 3],
    /// Ray origins move this far off a surface: a fixed fraction of the scene's size.
    pub eps: f32,
    pub depth: u32,
    /// The 8-wide BVH over the same triangles, and its triangles in its own
    /// order (`wide.order`), each with its BVH position in `pad0` as the
    /// binary ones have theirs: a hit's key is the BVH position on either.
    pub wide: crate::bvh::wide::WideBvh,
    pub wide_tris: Vec<Tri>,
}

impl Packed {
    /// Whether a GPU engine traces this scene: the depth-first kernels'
    /// stack holds `stack` levels (wavefront.cu / wavefront.wgsl `STACK`), and
    /// a breadth-first item names a node's children with the top bit of 32
    /// (`TRACE_PAIR`), so at most 2^31 nodes.
    pub fn check_gpu(&self, stack: u32) -> crate::trace::TraceResult<()> {
        use crate::trace::TraceError;
        if self.depth >= stack {
            return Err(TraceError::Settings(format!(
                "the BVH is {} levels deep and the GPU traversal stack holds {stack}: split the scene",
                self.depth
            )));
        }
        if self.nodes.len() as u64 >= 1 << 31 {
            return Err(TraceError::Settings(format!(
                "the BVH has {} nodes and the GPU tracer indexes at most 2^31: split the scene",
                self.nodes.len()
            )));
        }
        Ok(())
    }

    pub fn new(scene: &Scene, bvh: &Bvh) -> Self {
        let tris: Vec<Tri> = bvh
            .order
            .iter()
            .map(|&i| {
                let [a, b, c] = scene.triangles[i as usize];
                Tri {
                    v0: a.to_array(),
                    material: scene.material_of[i as usize],
                    e1: (b - a).to_array(),
                    e2: (c - a).to_array(),
                    ..Default::default()
                }
            })
            .enumerate()
            .map(|(k, t)| Tri { pad0: k as u32, ..t })
            .collect();
        let wide = crate::bvh::wide::WideBvh::build(&bvh.reorder(&scene.triangles));
        let wide_tris = wide.order.iter().map(|&k| tris[k as usize]).collect();
        let normals = bvh
            .order
            .iter()
            .flat_map(|&i| scene.normals[i as usize].iter().flat_map(|n| n.to_array()).collect::<Vec<_>>())
            .collect();
        let textured = scene.materials.iter().any(|m| m.texture.is_some_and(|t| (t.0 as usize) < scene.textures.len()));
        let uvs = if textured {
            // A scene built in code may leave `uvs` short: missing UVs read as zero.
            bvh.order
                .iter()
                .flat_map(|&i| scene.uvs.get(i as usize).copied().unwrap_or_default())
                .flat_map(|uv| uv.to_array())
                .collect()
        } else {
            Vec::new()
        };
        let mut textures = Vec::with_capacity(scene.textures.len());
        let mut texels = Vec::with_capacity(scene.textures.iter().map(|t| t.texels.len()).sum());
        for t in &scene.textures {
            textures.push(TextureLayout { offset: texels.len() as u64, width: t.width, height: t.height });
            texels.extend(t.texels.iter().map(|c| [c.x, c.y, c.z, 1.0]));
        }
        let materials: Vec<Material> = scene
            .materials
            .iter()
            .map(|m| Material {
                albedo: m.albedo.to_array(),
                kind: match m.kind {
                    MaterialKind::Diffuse => 0,
                    MaterialKind::Mirror => 1,
                    MaterialKind::Glass => 2,
                    MaterialKind::Glossy => 3,
                },
                emission: m.emission.to_array(),
                roughness: m.roughness,
                ior: m.ior,
                // The same test as the light list's below, so every emitter a ray can hit is one NEE can pick.
                emissive: (m.emission.max_element() > 0.0 && luminance(m.emission) > 0.0) as u32,
                // An id past the table would read outside the texels on the GPU.
                texture: m.texture.filter(|t| (t.0 as usize) < textures.len()).map_or(NO_TEXTURE, |t| t.0),
                pad: 0,
            })
            .collect();
        let mut light_tris = Vec::new();
        let mut powers = Vec::new();
        for (pos, t) in tris.iter().enumerate() {
            if let Some(m) = materials.get(t.material as usize).filter(|m| m.emissive != 0) {
                let area = 0.5 * Vec3::from(t.e1).cross(Vec3::from(t.e2)).length();
                let power = luminance(Vec3::from(m.emission)) * area;
                if power > 0.0 {
                    light_tris.push(pos as u32);
                    powers.push(power);
                }
            }
        }
        let light_power: f32 = powers.iter().sum();
        let mut acc = 0.0f64;
        let mut light_cdf: Vec<f32> = powers
            .iter()
            .map(|a| {
                acc += *a as f64;
                (acc / light_power.max(f32::MIN_POSITIVE) as f64) as f32
            })
            .collect();
        if let Some(last) = light_cdf.last_mut() {
            *last = 1.0; // rounding must not leave a sample past the end
        }
        let (lo, hi) = scene.bounds();
        Packed {
            nodes: bvh.nodes.clone(),
            tris,
            normals,
            uvs,
            materials,
            textures,
            texels,
            light_tris,
            light_cdf,
            light_power,
            env: scene.environment.to_array(),
            eps: 1e-5 * (hi - lo).length().max(1e-3),
            depth: bvh.depth,
            wide,
            wide_tris,
        }
    }

    /// Bytes the GPU needs for the scene.
    pub fn bytes(&self) -> u64 {
        (self.nodes.len() * 32
            + self.tris.len() * (48 + 36)
            + self.uvs.len() * 4
            + self.materials.len() * 48
            + self.textures.len() * 16
            + self.texels.len() * 16
            + self.light_tris.len() * 8
            + self.wide.nodes.len() * 80
            + self.wide_tris.len() * 48) as u64
    }
}
