//! Diffuse textures (`map_Kd`): decoded once per file at load, converted to linear RGB, so the
//! tracers only ever filter linear values (`src/trace/texture.rs` samples them).
//!
//! An image file is untrusted input: its header is checked against [`MAX_SIDE`] and
//! [`MAX_TEXELS`] before any pixel is decoded, so a file claiming 100000×100000 is refused
//! instead of exhausting memory. Every failure is a message for [`Scene::warnings`](super::Scene),
//! never an error: the material keeps its `Kd`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glam::Vec3;
use image::{ColorType, ImageReader, Limits};

use super::{Material, MaterialKind};

/// The longest side a texture may have, in texels.
pub const MAX_SIDE: u32 = 16384;
/// The most texels a texture may have: 8192×8192, 768 MiB as linear f32 RGB.
pub const MAX_TEXELS: u64 = 1 << 26;
/// The most bytes the decoder may allocate for one image: 8192×8192 RGBA16.
pub const MAX_DECODED_BYTES: u64 = 512 << 20;

/// A texture's index in [`Scene::textures`](super::Scene::textures).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextureId(pub u32);

/// An image in linear RGB, row 0 at the top as image files store it; alpha is dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct Texture {
    /// The file it came from, for messages.
    pub name: String,
    pub width: u32,
    pub height: u32,
    /// `width * height` texels, row by row, each component in [0, 1].
    pub texels: Vec<Vec3>,
}

/// The sRGB electro-optical transfer function (IEC 61966-2-1), exactly: encoded value to linear.
pub fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

impl Texture {
    /// Decodes a PNG, JPEG or EXR file. Integer images are taken as sRGB-encoded and converted to
    /// linear; float images (EXR) are already linear. Values are clamped to [0, 1]: an albedo
    /// above 1 would create energy. The error says why, for a warning.
    pub fn load(path: &Path) -> Result<Texture, String> {
        let open = || {
            ImageReader::open(path).and_then(|r| r.with_guessed_format()).map_err(|e| format!("cannot read it: {e}"))
        };
        // The header alone first: the size decides whether decoding may start.
        let (width, height) = open()?.into_dimensions().map_err(|e| format!("cannot decode it: {e}"))?;
        if width > MAX_SIDE || height > MAX_SIDE || width as u64 * height as u64 > MAX_TEXELS {
            return Err(format!(
                "it is {width}x{height}, larger than the limit of {MAX_SIDE} texels a side and {MAX_TEXELS} texels"
            ));
        }
        if width == 0 || height == 0 {
            return Err("it has no texels".into());
        }
        // The decoder checks these too, against what it reads while decoding.
        let mut limits = Limits::default();
        limits.max_image_width = Some(MAX_SIDE);
        limits.max_image_height = Some(MAX_SIDE);
        limits.max_alloc = Some(MAX_DECODED_BYTES);
        let mut reader = open()?;
        reader.limits(limits);
        let image = reader.decode().map_err(|e| format!("cannot decode it: {e}"))?;
        let linear_source = matches!(image.color(), ColorType::Rgb32F | ColorType::Rgba32F);
        let (width, height) = (image.width(), image.height());
        let rgb = image.into_rgb32f();
        let decode = |c: f32| {
            let linear = if linear_source { c } else { srgb_to_linear(c) };
            if linear.is_finite() { linear.clamp(0.0, 1.0) } else { 0.0 }
        };
        let texels = rgb.pixels().map(|p| Vec3::new(decode(p[0]), decode(p[1]), decode(p[2]))).collect();
        Ok(Texture { name: path.display().to_string(), width, height, texels })
    }

    /// The mean of all texels: what a surface covered by whole tiles of it reflects on average.
    pub fn mean(&self) -> Vec3 {
        let sum = self.texels.iter().fold(glam::DVec3::ZERO, |acc, t| acc + t.as_dvec3());
        (sum / self.texels.len().max(1) as f64).as_vec3()
    }
}

/// Gives each material with a `map_Kd` its texture (see [`TextureLoader::diffuse`]) and returns
/// the textures loaded. `mtl_files` lists each MTL file read with the materials it defines: a
/// texture's path is relative to its MTL file's folder; `obj` stands for a material no MTL
/// file claims.
pub(super) fn attach_textures(
    obj: &str,
    materials: &mut [Material],
    mtl_materials: &[tobj::Material],
    mtl_files: &[(String, Vec<String>)],
    warnings: &mut Vec<String>,
) -> Vec<Texture> {
    let mut loader = TextureLoader::default();
    for (material, m) in materials.iter_mut().zip(mtl_materials) {
        let Some(map) = &m.diffuse_texture else { continue };
        let mtl = mtl_files.iter().find(|(_, names)| names.contains(&m.name)).map_or(obj, |(f, _)| f.as_str());
        let dir = Path::new(mtl).parent().map_or(PathBuf::new(), Path::to_path_buf);
        material.texture = loader.diffuse(mtl, material, map, &dir, warnings);
    }
    loader.textures
}

/// The textures of one load, each file decoded once however many materials name it.
#[derive(Default)]
struct TextureLoader {
    textures: Vec<Texture>,
    /// Every file tried so far: its texture, or why it is not used.
    tried: HashMap<PathBuf, Result<TextureId, String>>,
}

impl TextureLoader {
    /// The texture `map` (a `map_Kd` value, relative to `mtl_dir`) for `material`, or `None` with
    /// a warning: the material then keeps its Kd. Only diffuse materials take one: the others'
    /// albedo is Ks or Tf, which map_Kd does not describe.
    fn diffuse(
        &mut self,
        mtl: &str,
        material: &Material,
        map: &str,
        mtl_dir: &Path,
        warnings: &mut Vec<String>,
    ) -> Option<TextureId> {
        let name = &material.name;
        if material.kind != MaterialKind::Diffuse {
            warnings.push(format!("{mtl}: material `{name}`: map_Kd `{map}` is ignored: only diffuse materials are textured"));
            return None;
        }
        // `map_Kd -s 2 2 1 wood.png`: the options (scale, offset, clamp…) are not supported, the file is the last word.
        let file = match map.split_whitespace().last() {
            Some(last) if map.starts_with('-') => {
                warnings.push(format!("{mtl}: material `{name}`: the options of map_Kd `{map}` are ignored"));
                last
            }
            _ => map,
        };
        let path = mtl_dir.join(file);
        let tried = self.tried.entry(path.clone()).or_insert_with(|| {
            Texture::load(&path).map(|texture| {
                self.textures.push(texture);
                TextureId(self.textures.len() as u32 - 1)
            })
        });
        match tried {
            Ok(id) => Some(*id),
            Err(why) => {
                warnings.push(format!(
                    "{mtl}: material `{name}`: map_Kd `{}` is not used, {why}; the material keeps its Kd",
                    path.display()
                ));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srgb_decoding_matches_the_standard() {
        assert_eq!(srgb_to_linear(0.0), 0.0);
        assert_eq!(srgb_to_linear(1.0), 1.0);
        assert!((srgb_to_linear(0.04) - 0.04 / 12.92).abs() < 1e-9);
        // 128/255 and 64/255 decode to these (computed in f64 from the formula).
        assert!((srgb_to_linear(128.0 / 255.0) - 0.215_860_5).abs() < 1e-6);
        assert!((srgb_to_linear(64.0 / 255.0) - 0.051_269_46).abs() < 1e-6);
    }
}
