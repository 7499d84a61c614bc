//! Scenes for the path tracer: triangles with one material each, a camera,
//! and a uniform environment. Loaded from OBJ + MTL (tobj) or built in
//! procedurally, so scaling can be shown without downloads.
//!
//! The layout is plain arrays indexed by triangle, ready to be reordered by
//! the BVH and uploaded as structure-of-arrays.
//!
//! [`load`] takes what the user typed after `--scene`: a path to an OBJ file
//! ([`load_obj`]) or the name of a built-in scene ([`builtin`], [`BUILTINS`]).

mod error;
pub mod export;
mod meshes;
mod obj;
mod procedural;
mod scan;
mod stream;
mod texture;

use std::path::Path;

use glam::{Vec2, Vec3};

pub use error::SceneError;
pub use obj::{load_obj, load_obj_str};
pub use procedural::{BUILTINS, builtin, icosahedron};
pub use texture::{MAX_DECODED_BYTES, MAX_SIDE, MAX_TEXELS, Texture, TextureId, srgb_to_linear};
#[cfg(test)]
pub(crate) use texture::{TWO_COLOURS, write_textured_square};

/// How a surface scatters light. Keep in sync with `kernels/trace/common.cuh`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaterialKind {
    Diffuse = 0,
    Mirror = 1,
    Glass = 2,
    Glossy = 3,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    pub name: String,
    pub kind: MaterialKind,
    /// Diffuse albedo (Kd), or the specular tint (Ks) of mirror and glossy, or the glass's transmittance.
    pub albedo: Vec3,
    /// Emitted radiance (Ke); a triangle with any non-zero component is a light.
    pub emission: Vec3,
    /// Glossy lobe roughness in (0, 1], from Ns.
    pub roughness: f32,
    /// Index of refraction for glass (Ni).
    pub ior: f32,
    /// The diffuse texture (map_Kd) that replaces `albedo`; only diffuse materials have one.
    pub texture: Option<TextureId>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    pub position: Vec3,
    pub target: Vec3,
    pub up: Vec3,
    /// Vertical field of view in degrees.
    pub vfov_deg: f32,
}

#[derive(Clone, Debug)]
pub struct Scene {
    pub name: String,
    /// Triangle vertices, three per triangle.
    pub triangles: Vec<[Vec3; 3]>,
    /// Per-vertex shading normals, three per triangle (geometric normal when the file has none).
    pub normals: Vec<[Vec3; 3]>,
    /// Per-vertex texture coordinates, three per triangle (zero when the file has none).
    pub uvs: Vec<[Vec2; 3]>,
    /// Material index per triangle.
    pub material_of: Vec<u32>,
    pub materials: Vec<Material>,
    /// The textures materials name by [`TextureId`], one per distinct file.
    pub textures: Vec<Texture>,
    pub camera: Camera,
    /// Uniform radiance arriving from every direction that escapes the scene.
    pub environment: Vec3,
    /// Degenerate or non-finite triangles dropped while loading.
    pub skipped_triangles: usize,
    /// Things the user should know (a missing MTL, an unknown material) that did not stop loading.
    pub warnings: Vec<String>,
    /// The files it was read from (OBJ, MTL, textures), so that no output replaces one.
    pub sources: Vec<std::path::PathBuf>,
}

impl Material {
    /// A Lambertian surface that emits nothing.
    pub fn diffuse(name: &str, albedo: Vec3) -> Self {
        Material {
            name: name.to_owned(),
            kind: MaterialKind::Diffuse,
            albedo,
            emission: Vec3::ZERO,
            roughness: 1.0,
            ior: 1.0,
            texture: None,
        }
    }

    /// What a face gets when its material is missing: the grey diffuse most OBJ viewers show.
    pub fn fallback() -> Self {
        Material::diffuse("default", Vec3::splat(0.8))
    }

    pub fn is_emissive(&self) -> bool {
        self.emission.max_element() > 0.0
    }
}

impl Camera {
    /// Looks at the centre of the box `min..max` from the +Z side, far enough back that the
    /// box's bounding sphere fits in a 45° vertical field of view.
    pub fn fit(min: Vec3, max: Vec3) -> Self {
        let vfov_deg = 45.0_f32;
        let centre = 0.5 * (min + max);
        let radius = (0.5 * (max - min).length()).max(f32::MIN_POSITIVE);
        let distance = radius / (0.5 * vfov_deg.to_radians()).sin();
        Camera { position: centre + Vec3::Z * distance, target: centre, up: Vec3::Y, vfov_deg }
    }
}

impl Scene {
    /// Axis-aligned bounds of all triangles, `(min, max)`; `(+inf, -inf)` for no triangles.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        self.triangles
            .iter()
            .flatten()
            .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), &p| (lo.min(p), hi.max(p)))
    }

    /// Indices of the triangles whose material emits light, in scene order.
    pub fn emitters(&self) -> Vec<u32> {
        let emissive: Vec<bool> = self.materials.iter().map(Material::is_emissive).collect();
        (0..self.triangles.len() as u32).filter(|&t| emissive[self.material_of[t as usize] as usize]).collect()
    }
}

/// Opens what the user named: a path ending in `.obj`, or anything that exists and is not a folder,
/// is loaded as OBJ (so a FIFO or a device gets [`crate::input`]'s error, not "unknown scene");
/// anything else must be a built-in scene's name. Paths need not be UTF-8.
pub fn load(spec: impl AsRef<Path>) -> Result<Scene, SceneError> {
    let path = spec.as_ref();
    let is_obj = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("obj"));
    if is_obj || std::fs::metadata(path).is_ok_and(|m| !m.is_dir()) {
        return load_obj(path);
    }
    // Built-in names are ASCII; a name that is not UTF-8 is no built-in, and builtin says which are.
    builtin(&path.to_string_lossy())
}

/// The unit geometric normal of a triangle, or `None` when the triangle cannot be rendered: a
/// non-finite vertex, or no area to speak of (|cross| ≤ 1e-12 × the longest edge squared, which
/// is relative so that it means the same at any scene scale). Loaders skip such triangles and
/// count them.
pub(crate) fn geometric_normal(tri: &[Vec3; 3]) -> Option<Vec3> {
    if !tri.iter().all(|v| v.is_finite()) {
        return None;
    }
    let (e0, e1, e2) = (tri[1] - tri[0], tri[2] - tri[0], tri[2] - tri[1]);
    let cross = e0.cross(e1);
    let longest_sq = e0.length_squared().max(e1.length_squared()).max(e2.length_squared());
    let area2 = cross.length();
    // Written as a positive test so that an overflow to inf or NaN also counts as degenerate.
    let renderable = area2 > 1e-12 * longest_sq && area2.is_finite() && longest_sq.is_finite();
    renderable.then(|| cross / area2)
}
