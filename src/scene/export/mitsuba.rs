//! The Mitsuba 3 scene (`scene.xml`, format version 3.0.0): the mapping and its approximations are
//! in the parent module's documentation; the file repeats them in a comment.

use std::fmt::Write as _;

use glam::Vec3;

use super::ply::Mesh;
use super::{ExportSettings, Names, xyz};
use crate::scene::{Material, MaterialKind, Scene};

/// Where reap's Russian roulette starts, in Mitsuba's depth (its depth is 1 after the first
/// surface's BSDF sample; reap plays roulette from bounce index 3, the 4th surface).
const RR_DEPTH: u32 = 4;

const NOTE: &str = "\
  Written by `reap scene export`. reap's materials mapped to Mitsuba's closest models:
  - diffuse: diffuse (textures: bitmap, bilinear, repeat, sRGB, v flipped by the PLY loader).
  - mirror: conductor, material none (Fresnel 1), specular_reflectance = albedo (exact).
  - glass: dielectric with reflectance and transmittance = albedo; reap uses Schlick's Fresnel and
    no 1/eta^2 radiance scaling (which cancels for closed objects), Mitsuba the exact Fresnel.
  - glossy: principled, metallic 1, base_color = albedo (Schlick F0 as reap's), roughness =
    sqrt(reap's GGX alpha); Mitsuba's Smith G2 is separable, reap's height-correlated.
  - every non-dielectric BSDF is twosided, as reap's surfaces are; area lights are one-sided.
  - max_depth = reap render's max-bounces + 1 (Mitsuba counts the camera segment); rr_depth 4 starts
    Russian roulette at the vertex where reap does. Mitsuba also samples the environment for
    next-event estimation; reap does not (same expectation).";

fn rgb(name: &str, c: Vec3) -> String {
    format!("<rgb name=\"{name}\" value=\"{}\"/>", xyz(c, ", "))
}

/// The whole file. `write!` into a String cannot fail, hence the ignored results.
pub(super) fn text(scene: &Scene, s: &ExportSettings, names: &Names, meshes: &[Mesh]) -> String {
    let mut x = String::new();
    let c = &scene.camera;
    // Only camera rays are clipped: keep the whole scene inside.
    let (lo, hi) = scene.bounds();
    let far = 2.0 * (lo.distance(c.position).max(hi.distance(c.position)) + lo.distance(hi)) + 1.0;
    let _ = writeln!(x, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!--\n{NOTE}\n-->");
    let _ = writeln!(x, "<scene version=\"3.0.0\">");
    let _ = writeln!(x, "    <integrator type=\"path\">");
    let _ = writeln!(x, "        <integer name=\"max_depth\" value=\"{}\"/>", s.max_bounces + 1);
    let _ = writeln!(x, "        <integer name=\"rr_depth\" value=\"{RR_DEPTH}\"/>");
    let _ = writeln!(x, "    </integrator>");
    let _ = writeln!(x, "    <sensor type=\"perspective\">");
    let _ = writeln!(x, "        <string name=\"fov_axis\" value=\"y\"/>");
    let _ = writeln!(x, "        <float name=\"fov\" value=\"{}\"/>", c.vfov_deg);
    let _ = writeln!(x, "        <float name=\"near_clip\" value=\"{}\"/>", far * 1e-7);
    let _ = writeln!(x, "        <float name=\"far_clip\" value=\"{far}\"/>");
    let _ = writeln!(x, "        <transform name=\"to_world\">");
    let _ = writeln!(
        x,
        "            <lookat origin=\"{}\" target=\"{}\" up=\"{}\"/>",
        xyz(c.position, ", "),
        xyz(c.target, ", "),
        xyz(c.up, ", ")
    );
    let _ = writeln!(x, "        </transform>");
    let _ = writeln!(x, "        <sampler type=\"independent\">");
    let _ = writeln!(x, "            <integer name=\"sample_count\" value=\"{}\"/>", s.spp);
    let _ = writeln!(x, "        </sampler>");
    let _ = writeln!(x, "        <film type=\"hdrfilm\">");
    let _ = writeln!(x, "            <integer name=\"width\" value=\"{}\"/>", s.width);
    let _ = writeln!(x, "            <integer name=\"height\" value=\"{}\"/>", s.height);
    let _ = writeln!(x, "            <string name=\"pixel_format\" value=\"rgb\"/>");
    let _ = writeln!(x, "            <rfilter type=\"box\"/>");
    let _ = writeln!(x, "        </film>");
    let _ = writeln!(x, "    </sensor>");
    for mesh in meshes {
        let m = &scene.materials[mesh.material];
        let _ = writeln!(x, "{}", bsdf(m, &names.materials[mesh.material], names));
    }
    for mesh in meshes {
        let m = &scene.materials[mesh.material];
        let _ = writeln!(x, "    <shape type=\"ply\">");
        let _ = writeln!(x, "        <string name=\"filename\" value=\"{}\"/>", mesh.file);
        // reap's v runs up from the image's bottom row (OBJ's convention); Mitsuba's bitmap from the top.
        let _ = writeln!(x, "        <boolean name=\"flip_tex_coords\" value=\"true\"/>");
        let _ = writeln!(x, "        <ref id=\"{}\"/>", names.materials[mesh.material]);
        if m.is_emissive() {
            let _ = writeln!(x, "        <emitter type=\"area\">{}</emitter>", rgb("radiance", m.emission));
        }
        let _ = writeln!(x, "    </shape>");
    }
    if scene.environment.max_element() > 0.0 {
        let _ = writeln!(x, "    <emitter type=\"constant\">{}</emitter>", rgb("radiance", scene.environment));
    }
    let _ = writeln!(x, "</scene>");
    x
}

/// The `<bsdf>` element of one material, with id `id`.
fn bsdf(m: &Material, id: &str, names: &Names) -> String {
    let inner = match m.kind {
        MaterialKind::Diffuse => match m.texture {
            Some(t) => format!(
                "<bsdf type=\"diffuse\"><texture type=\"bitmap\" name=\"reflectance\">\
                 <string name=\"filename\" value=\"{}\"/><string name=\"filter_type\" value=\"bilinear\"/>\
                 <string name=\"wrap_mode\" value=\"repeat\"/></texture></bsdf>",
                names.textures[t.0 as usize]
            ),
            None => format!("<bsdf type=\"diffuse\">{}</bsdf>", rgb("reflectance", m.albedo)),
        },
        MaterialKind::Mirror => format!(
            "<bsdf type=\"conductor\"><string name=\"material\" value=\"none\"/>{}</bsdf>",
            rgb("specular_reflectance", m.albedo)
        ),
        // A dielectric is two-sided already; twosided refuses to wrap a transmitting BSDF.
        MaterialKind::Glass => {
            return format!(
                "    <bsdf type=\"dielectric\" id=\"{id}\"><float name=\"int_ior\" value=\"{}\"/>\
                 <float name=\"ext_ior\" value=\"1\"/>{}{}</bsdf>",
                m.ior,
                rgb("specular_reflectance", m.albedo),
                rgb("specular_transmittance", m.albedo)
            );
        }
        MaterialKind::Glossy => format!(
            "<bsdf type=\"principled\">{}<float name=\"metallic\" value=\"1\"/>\
             <float name=\"roughness\" value=\"{}\"/></bsdf>",
            rgb("base_color", m.albedo),
            principled_roughness(m.roughness)
        ),
    };
    format!("    <bsdf type=\"twosided\" id=\"{id}\">{inner}</bsdf>")
}

/// principled's roughness for reap's GGX alpha: principled takes alpha = roughness², both clamp
/// alpha at 1e-3.
fn principled_roughness(alpha: f32) -> f32 {
    alpha.max(crate::trace::bsdf::ALPHA_MIN).sqrt()
}
