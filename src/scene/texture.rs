//! Diffuse textures (`map_Kd`): decoded once per file at load, converted to linear RGB, so the
//! tracers only ever filter linear values (`src/trace/texture.rs` samples them).
//!
//! An image file is untrusted input: its header is checked against [`MAX_SIDE`] and
//! [`MAX_TEXELS`] before any pixel is decoded, so a file claiming 100000×100000 is refused
//! instead of exhausting memory. Every failure is a message for [`Scene::warnings`](super::Scene),
//! never an error: the material keeps its `Kd`.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use glam::Vec3;
use image::{ColorType, ImageReader, Limits};

use super::{Material, MaterialKind};
use crate::input::{self, InputError, InputKind};
use crate::memory::{self, Limit};

/// The longest side a texture may have, in texels.
pub const MAX_SIDE: u32 = 16384;
/// The most texels a texture may have: 8192×8192, 768 MiB kept as linear f32 RGB in the scene;
/// its load peaks at [`load_peak_bytes`], and a render holds the tracers' RGBA copy beside it
/// (1.75 GiB in all: `reap render --backend cpu` of one 8192×8192 texture peaks at 1.85 GB RSS).
pub const MAX_TEXELS: u64 = 1 << 26;
/// Bytes one kept texel takes ([`Texture::texels`]).
const TEXEL_BYTES: u64 = std::mem::size_of::<Vec3>() as u64;
/// Bytes one texel may take as decoded, before conversion: RGBA at 16 bits.
const DECODED_TEXEL_BYTES: u64 = 8;
/// Bytes of the tracers' copy of a texel (`trace::layout::Packed::texels`, RGBA f32), made
/// while the scene keeps its own: what a render holds per texel is both.
const PACKED_TEXEL_BYTES: u64 = 16;
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
        Self::load_within(path, &mut Budget::unlimited())
    }

    /// [`Texture::load`], refusing a texture whose load would take `budget` past its limit
    /// (checked from the header, before decoding).
    fn load_within(path: &Path, budget: &mut Budget) -> Result<Texture, String> {
        let open = || {
            let (file, _) = input::open(path, InputKind::Texture).map_err(|e| match e {
                InputError::Io { source, .. } => format!("cannot read it: {source}"),
                refused => refused.to_string(),
            })?;
            // The decoder's limits below bound what it reads, so the file needs no `take`.
            ImageReader::new(BufReader::new(file)).with_guessed_format().map_err(|e| format!("cannot read it: {e}"))
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
        budget.check(width, height)?;
        // The decoder checks these too, against what it reads while decoding.
        let mut limits = Limits::default();
        limits.max_image_width = Some(MAX_SIDE);
        limits.max_image_height = Some(MAX_SIDE);
        limits.max_alloc = Some(MAX_DECODED_BYTES);
        let mut reader = open()?;
        reader.limits(limits);
        let image = reader.decode().map_err(|e| format!("cannot decode it: {e}"))?;
        let (width, height) = (image.width(), image.height());
        let texels = linear_texels(image);
        budget.kept += texels.len() as u64;
        Ok(Texture { name: path.display().to_string(), width, height, texels })
    }

    /// The mean of all texels: what a surface covered by whole tiles of it reflects on average.
    pub fn mean(&self) -> Vec3 {
        let sum = self.texels.iter().fold(glam::DVec3::ZERO, |acc, t| acc + t.as_dvec3());
        (sum / self.texels.len().max(1) as f64).as_vec3()
    }
}

/// Host bytes loading one `texels`-texel texture takes at its peak: the decoded image and the
/// linear texels it becomes, both alive while one is converted into the other (8192×8192 8-bit
/// RGB: 192 MiB + 768 MiB; 16-bit RGBA: 512 MiB + 768 MiB).
pub fn load_peak_bytes(texels: u64) -> u64 {
    texels * (DECODED_TEXEL_BYTES + TEXEL_BYTES)
}

/// The decoded image as clamped linear texels, converted straight from 8-bit samples (the
/// common case) without an f32 copy of the whole image beside the result.
fn linear_texels(image: image::DynamicImage) -> Vec<Vec3> {
    let clamp = |linear: f32| if linear.is_finite() { linear.clamp(0.0, 1.0) } else { 0.0 };
    // The values the f32 path below gives 8-bit samples (b / 255, decoded, clamped).
    let lut: [f32; 256] = std::array::from_fn(|b| clamp(srgb_to_linear(b as f32 / 255.0)));
    match image {
        image::DynamicImage::ImageRgb8(rgb) => {
            rgb.pixels().map(|p| Vec3::new(lut[p[0] as usize], lut[p[1] as usize], lut[p[2] as usize])).collect()
        }
        image::DynamicImage::ImageRgba8(rgba) => {
            rgba.pixels().map(|p| Vec3::new(lut[p[0] as usize], lut[p[1] as usize], lut[p[2] as usize])).collect()
        }
        other => {
            let linear_source = matches!(other.color(), ColorType::Rgb32F | ColorType::Rgba32F);
            let rgb = other.into_rgb32f();
            let decode = |c: f32| clamp(if linear_source { c } else { srgb_to_linear(c) });
            rgb.pixels().map(|p| Vec3::new(decode(p[0]), decode(p[1]), decode(p[2]))).collect()
        }
    }
}

/// What one scene's textures may take of host memory together: the limit, read once when the
/// load starts, against what the textures kept so far and the next one will hold in a render
/// (the scene's texels and the tracers' copy; more than any one load's peak).
struct Budget {
    limit: Option<Limit>,
    /// Texels of the textures kept so far.
    kept: u64,
}

impl Budget {
    fn unlimited() -> Self {
        Budget { limit: None, kept: 0 }
    }

    fn host() -> Self {
        Budget { limit: Some(Limit::host()), kept: 0 }
    }

    fn check(&self, width: u32, height: u32) -> Result<(), String> {
        let Some(limit) = self.limit else { return Ok(()) };
        let texels = self.kept + width as u64 * height as u64;
        let need = memory::times(texels, TEXEL_BYTES + PACKED_TEXEL_BYTES);
        debug_assert!(need.is_some_and(|n| n >= load_peak_bytes(width as u64 * height as u64)));
        memory::check(
            format!(
                "it ({width}x{height}) and the {} texels of the textures before it, at {} bytes a texel in the \
                 scene and the tracer,",
                self.kept,
                TEXEL_BYTES + PACKED_TEXEL_BYTES
            ),
            need,
            limit,
            "use smaller textures, or fewer distinct texture files",
        )
        .map_err(|e| e.to_string())
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
    let mut loader = TextureLoader { textures: Vec::new(), budget: Budget::host(), tried: HashMap::new() };
    for (material, m) in materials.iter_mut().zip(mtl_materials) {
        let Some(map) = &m.diffuse_texture else { continue };
        let mtl = mtl_files.iter().find(|(_, names)| names.contains(&m.name)).map_or(obj, |(f, _)| f.as_str());
        let dir = Path::new(mtl).parent().map_or(PathBuf::new(), Path::to_path_buf);
        material.texture = loader.diffuse(mtl, material, map, &dir, warnings);
    }
    loader.textures
}

/// The textures of one load, each file decoded once however many materials name it.
struct TextureLoader {
    textures: Vec<Texture>,
    budget: Budget,
    /// Every file tried so far, by canonical path: its texture, or why it is not used.
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
            warnings.push(format!(
                "{mtl}: material `{name}`: map_Kd `{map}` is ignored: only diffuse materials are textured"
            ));
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
        // One file however it is spelled (absolute, through `..` or a symlinked folder): decoded
        // once. A path that does not resolve keeps its spelling, for the warning.
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        let tried = self.tried.entry(key).or_insert_with(|| {
            Texture::load_within(&path, &mut self.budget).map(|texture| {
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

/// Test assets written to a fresh folder: a square seen face on, `-1..2` in x and y at z = 0,
/// with UVs equal to the positions (so `0..1` is one tile), a diffuse material textured with
/// `two.png`: 2×1 texels, left and right of [`TWO_COLOURS`] (sRGB bytes).
#[cfg(test)]
pub(crate) fn write_textured_square(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("reap-texture-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let obj = "mtllib square.mtl\nv -1 -1 0\nv 2 -1 0\nv 2 2 0\nv -1 2 0\n\
               vt -1 -1\nvt 2 -1\nvt 2 2\nvt -1 2\nusemtl two\nf 1/1 2/2 3/3 4/4\n";
    std::fs::write(dir.join("square.obj"), obj).expect("write the OBJ");
    std::fs::write(dir.join("square.mtl"), "newmtl two\nKd 0.5 0.5 0.5\nmap_Kd two.png\n").expect("write the MTL");
    let [left, right] = TWO_COLOURS;
    let png = image::RgbImage::from_fn(2, 1, |x, _| image::Rgb(if x == 0 { left } else { right }));
    png.save(dir.join("two.png")).expect("write the PNG");
    dir
}

/// The texels of [`write_textured_square`]'s texture, left then right, as sRGB bytes.
#[cfg(test)]
pub(crate) const TWO_COLOURS: [[u8; 3]; 2] = [[204, 51, 26], [26, 77, 230]];

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

    fn linear(srgb: [u8; 3]) -> Vec3 {
        Vec3::from_array(srgb.map(|c| srgb_to_linear(c as f32 / 255.0)))
    }

    #[test]
    fn a_map_kd_png_replaces_kd_with_linear_texels_read_through_the_uvs() {
        let dir = write_textured_square("png");
        let scene = super::super::load_obj(&dir.join("square.obj")).expect("the square loads");
        assert!(scene.warnings.is_empty(), "{:?}", scene.warnings);
        assert_eq!(scene.textures.len(), 1);
        let t = &scene.textures[0];
        assert_eq!((t.width, t.height), (2, 1));
        let want = TWO_COLOURS.map(linear);
        for (got, want) in t.texels.iter().zip(want) {
            assert!((*got - want).abs().max_element() < 1e-6, "{got} vs {want}");
        }
        assert_eq!(scene.materials[0].texture, Some(TextureId(0)));
        // Two triangles from the quad, UVs equal to the positions' x and y.
        assert_eq!(scene.uvs.len(), 2);
        for (tri, uvs) in scene.triangles.iter().zip(&scene.uvs) {
            for (p, uv) in tri.iter().zip(uvs) {
                assert_eq!(p.truncate(), *uv);
            }
        }
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_jpeg_decodes_and_two_materials_share_one_texture() {
        let dir = write_textured_square("jpeg");
        let grey = image::RgbImage::from_pixel(16, 8, image::Rgb([128, 128, 128]));
        grey.save(dir.join("grey.jpg")).expect("write the JPEG");
        let mtl = "newmtl a\nmap_Kd grey.jpg\nnewmtl b\nKd 0.1 0.1 0.1\nmap_Kd grey.jpg\n";
        std::fs::write(dir.join("square.mtl"), mtl).expect("write the MTL");
        let obj = "mtllib square.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 1 1\n\
                   usemtl a\nf 1/1 2/2 3/3\nusemtl b\nf 1 2 3\n";
        std::fs::write(dir.join("square.obj"), obj).expect("write the OBJ");
        let scene = super::super::load_obj(&dir.join("square.obj")).expect("the scene loads");
        assert!(scene.warnings.is_empty(), "{:?}", scene.warnings);
        assert_eq!(scene.textures.len(), 1, "one file, one texture");
        assert!(scene.materials.iter().all(|m| m.texture == Some(TextureId(0))));
        let t = &scene.textures[0];
        assert_eq!((t.width, t.height, t.texels.len()), (16, 8, 128));
        // A flat grey survives JPEG within a step of its 8-bit value.
        let step = srgb_to_linear(129.0 / 255.0) - srgb_to_linear(128.0 / 255.0);
        let want = srgb_to_linear(128.0 / 255.0);
        assert!(t.texels.iter().flat_map(|c| c.to_array()).all(|c| (c - want).abs() <= step), "{:?}", t.texels[0]);
        // The face without `vt` gets zero UVs.
        assert_eq!(scene.uvs[1], [glam::Vec2::ZERO; 3]);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_missing_huge_or_misplaced_texture_warns_and_keeps_kd() {
        let dir = write_textured_square("bad");
        // A PNG header claiming 100000×100000 and no pixels: refused before decoding.
        let huge = std::fs::File::create(dir.join("huge.png")).expect("create the PNG");
        let mut header = png::Encoder::new(huge, 100_000, 100_000).write_header().expect("write the header");
        header.write_chunk(png::chunk::IDAT, &[0; 8]).expect("write a scrap of pixel data");
        let mtl = "newmtl gone\nKd 0.25 0.5 0.75\nmap_Kd no such.png\n\
                   newmtl huge\nKd 0.5 0.5 0.5\nmap_Kd huge.png\n\
                   newmtl chrome\nillum 3\nKs 0.9 0.9 0.9\nmap_Kd two.png\n";
        std::fs::write(dir.join("square.mtl"), mtl).expect("write the MTL");
        let obj = "mtllib square.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\n\
                   usemtl gone\nf 1 2 3\nusemtl huge\nf 1 2 3\nusemtl chrome\nf 1 2 3\n";
        std::fs::write(dir.join("square.obj"), obj).expect("write the OBJ");
        let scene = super::super::load_obj(&dir.join("square.obj")).expect("the scene loads");
        assert!(scene.textures.is_empty());
        assert!(scene.materials.iter().all(|m| m.texture.is_none()));
        assert_eq!(scene.materials[0].albedo, Vec3::new(0.25, 0.5, 0.75), "Kd stays");
        let warned = |what: &str| scene.warnings.iter().any(|w| w.contains(what));
        assert!(warned("no such.png` is not used, cannot read it"), "{:?}", scene.warnings);
        assert!(warned("huge.png` is not used, it is 100000x100000, larger than the limit"), "{:?}", scene.warnings);
        assert!(warned("material `chrome`: map_Kd `two.png` is ignored"), "{:?}", scene.warnings);
        assert_eq!(scene.warnings.len(), 3, "{:?}", scene.warnings);
        std::fs::remove_dir_all(dir).ok();
    }
}
