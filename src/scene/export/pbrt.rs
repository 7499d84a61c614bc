//! The pbrt-v4 scene (`scene.pbrt`): the mapping and its approximations are in the parent
//! module's documentation; the file repeats them in comments. pbrt-v4 is not installable here, so
//! this output is checked by the tests' own reader only (tests/export.rs).

use std::fmt::Write as _;

use glam::Vec3;

use super::ply::Mesh;
use super::{ExportSettings, Names, xyz};
use crate::scene::{Material, MaterialKind, Scene};

const NOTE: &str = "\
# Written by `reap scene export`. reap's materials mapped to pbrt-v4's closest models:
# - diffuse: diffuse (textures: imagemap, bilinear, repeat, sRGB; pbrt's v runs up, as reap's).
# - mirror: conductor, reflectance = albedo, roughness 0: pbrt's Fresnel rises to 1 at grazing
#   angles, reap's mirror reflects the albedo at every angle.
# - glass: dielectric, eta = ior: exact Fresnel (reap: Schlick's) and no tint (pbrt-v4's
#   dielectric has none; reap multiplies by the glass's albedo).
# - glossy: conductor, reflectance = albedo, roughness = reap's GGX alpha (not remapped);
#   height-correlated Smith G2 as reap's, but the exact conductor Fresnel, not Schlick's.
# - area lights one-sided, as reap's; maxdepth = reap's --max-bounces. pbrt's Russian roulette
#   starts earlier than reap's (unbiased: only the noise differs). pbrt renders spectrally.
# - Scale -1 1 1: pbrt's LookAt camera is left-handed; without it the image is mirrored.";

fn rgb(name: &str, c: Vec3) -> String {
    format!("\"rgb {name}\" [ {} ]", xyz(c, " "))
}

/// pbrt's `fov`: the angle of the shorter image axis (reap's `vfov_deg` is the vertical one).
pub(super) fn pbrt_fov(vfov_deg: f32, width: u32, height: u32) -> f32 {
    if width >= height {
        return vfov_deg;
    }
    let half = (0.5 * vfov_deg.to_radians()).tan() * width as f32 / height as f32;
    2.0 * half.atan().to_degrees()
}

/// The whole file. `write!` into a String cannot fail, hence the ignored results.
pub(super) fn text(scene: &Scene, s: &ExportSettings, names: &Names, meshes: &[Mesh]) -> String {
    let c = &scene.camera;
    let mut x = format!("{NOTE}\n\n");
    let _ = writeln!(x, "Scale -1 1 1");
    let _ = writeln!(x, "LookAt {}\n       {}\n       {}", xyz(c.position, " "), xyz(c.target, " "), xyz(c.up, " "));
    let _ = writeln!(x, "Camera \"perspective\" \"float fov\" [ {} ]", pbrt_fov(c.vfov_deg, s.width, s.height));
    let _ = writeln!(x, "Sampler \"independent\" \"integer pixelsamples\" [ {} ]", s.spp);
    let _ = writeln!(x, "Integrator \"path\" \"integer maxdepth\" [ {} ]", s.max_bounces);
    let _ = writeln!(
        x,
        "Film \"rgb\" \"integer xresolution\" [ {} ] \"integer yresolution\" [ {} ] \"string filename\" [ \"scene.exr\" ]",
        s.width, s.height
    );
    let _ = writeln!(x, "PixelFilter \"box\" \"float xradius\" [ 0.5 ] \"float yradius\" [ 0.5 ]");
    let _ = writeln!(x, "\nWorldBegin\n");
    if scene.environment.max_element() > 0.0 {
        let _ = writeln!(x, "LightSource \"infinite\" {}", rgb("L", scene.environment));
    }
    for (t, file) in names.textures.iter().enumerate() {
        let _ = writeln!(
            x,
            "Texture \"texture{t}\" \"spectrum\" \"imagemap\" \"string filename\" [ \"{file}\" ] \
             \"string filter\" [ \"bilinear\" ] \"string wrap\" [ \"repeat\" ] \"string encoding\" [ \"sRGB\" ]"
        );
    }
    for mesh in meshes {
        let _ = writeln!(x, "{}", material(&scene.materials[mesh.material], &names.materials[mesh.material]));
    }
    for mesh in meshes {
        let m = &scene.materials[mesh.material];
        let _ = writeln!(x, "\nAttributeBegin");
        let _ = writeln!(x, "  NamedMaterial \"{}\"", names.materials[mesh.material]);
        if m.is_emissive() {
            let _ = writeln!(x, "  AreaLightSource \"diffuse\" {}", rgb("L", m.emission));
        }
        let _ = writeln!(x, "  Shape \"plymesh\" \"string filename\" [ \"{}\" ]", mesh.file);
        let _ = writeln!(x, "AttributeEnd");
    }
    x
}

/// `MakeNamedMaterial` for one material.
fn material(m: &Material, name: &str) -> String {
    let params = match m.kind {
        MaterialKind::Diffuse => match m.texture {
            Some(t) => format!("\"string type\" [ \"diffuse\" ] \"texture reflectance\" [ \"texture{}\" ]", t.0),
            None => format!("\"string type\" [ \"diffuse\" ] {}", rgb("reflectance", m.albedo)),
        },
        MaterialKind::Mirror => format!(
            "\"string type\" [ \"conductor\" ] {} \"float roughness\" [ 0 ] \"bool remaproughness\" [ false ]",
            rgb("reflectance", m.albedo)
        ),
        MaterialKind::Glass => format!("\"string type\" [ \"dielectric\" ] \"float eta\" [ {} ]", m.ior),
        MaterialKind::Glossy => format!(
            "\"string type\" [ \"conductor\" ] {} \"float roughness\" [ {} ] \"bool remaproughness\" [ false ]",
            rgb("reflectance", m.albedo),
            m.roughness.max(crate::trace::bsdf::ALPHA_MIN)
        ),
    };
    format!("MakeNamedMaterial \"{name}\" {params}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fov_is_the_shorter_axis() {
        assert_eq!(pbrt_fov(40.0, 64, 48), 40.0);
        assert_eq!(pbrt_fov(40.0, 48, 48), 40.0);
        // Portrait: the horizontal angle, whose tangent is the vertical one's times width / height.
        let h = pbrt_fov(90.0, 32, 64);
        assert!(((h.to_radians() * 0.5).tan() - 0.5).abs() < 1e-6, "{h}");
    }
}
