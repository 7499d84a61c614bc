//! From accumulated sums to the 8-bit image people look at: the one
//! definition of the display curve. Each pixel's mean radiance is clamped to
//! [0, 1] (no tone curve, so a furnace stays exactly white), sRGB-encoded and
//! rounded to 8 bits. The viewer shows these bytes as they are
//! (`shaders/display.wgsl`), `reap render` writes them as PNG, and
//! `kernels/trace/tonemap.cu` computes the same on the GPU so that the
//! viewer reads back 4 bytes a pixel instead of 16.
//!
//! `reap render` can also apply an exposure and a tone curve ([`Tone`]:
//! ACES fitted, AgX) to its PNG; that path runs on the CPU only, and the
//! default ([`Tone::CLAMP`]) gives exactly the bytes above.
//!
//! Keep in sync with `kernels/trace/tonemap.cu`: the same operations in the
//! same order (that kernel is compiled without FMA contraction), so the two
//! differ at most where the GPU's `powf` rounds differently from the CPU's,
//! by one step of 255.

use rayon::prelude::*;

/// sRGB encoding of a linear value, clamped, rounded to 8 bits. A NaN gives 0.
#[inline]
pub fn srgb8(linear: f32) -> u8 {
    let c = linear.clamp(0.0, 1.0);
    let s = if c <= 0.0031308 { 12.92 * c } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 };
    (s * 255.0 + 0.5) as u8
}

/// The display curve applied to linear radiance before sRGB encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToneCurve {
    /// Clamp to [0, 1]: no curve, so a white furnace stays exactly white (the default).
    #[default]
    Clamp,
    /// Stephen Hill's fit of the ACES RRT + sRGB ODT, with its sRGB → ACES input
    /// and output matrices (MJP's BakingLab, `ACES.hlsl`, MIT licence).
    Aces,
    /// Troy Sobotka's AgX base look as in Blender 4: inset matrix, log2 encoding
    /// over [-12.47393, 4.026069] EV, the common 6th-order polynomial fit of its
    /// sigmoid (Benjamin Wrensch, "Minimal AgX implementation", 2023), outset
    /// (inverse inset) matrix, then the 2.2 power back to linear.
    Agx,
}

impl ToneCurve {
    pub const ALL: [ToneCurve; 3] = [ToneCurve::Clamp, ToneCurve::Aces, ToneCurve::Agx];
    pub fn name(self) -> &'static str {
        match self {
            ToneCurve::Clamp => "clamp",
            ToneCurve::Aces => "aces",
            ToneCurve::Agx => "agx",
        }
    }
}

/// A name that is not a tone curve.
#[derive(Debug, thiserror::Error)]
#[error("unknown tone curve `{0}`: use clamp, aces or agx")]
pub struct UnknownCurve(pub String);

impl std::str::FromStr for ToneCurve {
    type Err = UnknownCurve;
    fn from_str(s: &str) -> Result<Self, UnknownCurve> {
        ToneCurve::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| UnknownCurve(s.into()))
    }
}

/// Exposure then a curve: what turns mean radiance into display values in [0, 1].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tone {
    /// Stops: linear radiance is multiplied by 2^exposure before the curve.
    pub exposure: f32,
    pub curve: ToneCurve,
}

impl Tone {
    /// The default: no exposure change, clamp (bit-identical to [`trace_tonemap`]).
    pub const CLAMP: Tone = Tone { exposure: 0.0, curve: ToneCurve::Clamp };

    /// Linear radiance to display-linear values (sRGB primaries), before encoding.
    pub fn apply(self, rgb: [f32; 3]) -> [f32; 3] {
        // exp2(0) is exactly 1, so the default leaves every value as it was.
        // Past 2^128 exp2 is infinite, and 0 × inf would turn a dark channel
        // into NaN: the largest finite factor keeps it 0.
        let k = self.exposure.exp2().min(f32::MAX);
        let c = [rgb[0] * k, rgb[1] * k, rgb[2] * k];
        match self.curve {
            ToneCurve::Clamp => c,
            ToneCurve::Aces => aces(c),
            ToneCurve::Agx => agx(c),
        }
    }
}

/// `m` times `v`, rows of `m` in order.
#[inline]
fn mul(m: &[[f32; 3]; 3], v: [f32; 3]) -> [f32; 3] {
    let row = |r: &[f32; 3]| r[0] * v[0] + r[1] * v[1] + r[2] * v[2];
    [row(&m[0]), row(&m[1]), row(&m[2])]
}

/// BakingLab ACES.hlsl: sRGB → AP1 with the RRT's saturation folded in (rows).
const ACES_INPUT: [[f32; 3]; 3] =
    [[0.59719, 0.35458, 0.04823], [0.07600, 0.90834, 0.01566], [0.02840, 0.13383, 0.83777]];
/// BakingLab ACES.hlsl: ODT's saturation and AP1 → sRGB (rows).
const ACES_OUTPUT: [[f32; 3]; 3] =
    [[1.60475, -0.53108, -0.07367], [-0.10208, 1.10813, -0.00605], [-0.00327, -0.07276, 1.07602]];

/// Where [`rrt_odt_fit`] stops rising: its square still fits an f32 (the
/// largest is 3.4e38), and the curve equals its limit 1 / 0.983729 there to
/// f32 precision. Above it v × v overflowed and inf / inf gave NaN (black).
const ACES_FIT_TOP: f32 = 1e18;

/// BakingLab `RRTAndODTFit`: the curve of the RRT + ODT, fitted per channel.
#[inline]
fn rrt_odt_fit(v: f32) -> f32 {
    let v = v.min(ACES_FIT_TOP);
    let a = v * (v + 0.0245786) - 0.000090537;
    let b = v * (0.983729 * v + 0.432951) + 0.238081;
    a / b
}

/// BakingLab `ACESFitted`; the result is clamped by [`srgb8`] (HLSL's `saturate`).
pub fn aces(rgb: [f32; 3]) -> [f32; 3] {
    let v = mul(&ACES_INPUT, rgb);
    mul(&ACES_OUTPUT, [rrt_odt_fit(v[0]), rrt_odt_fit(v[1]), rrt_odt_fit(v[2])])
}

/// AgX inset matrix (Blender 4's, as rows: the GLSL original lists columns).
#[allow(clippy::excessive_precision)] // the published digits, kept so the source can be checked
const AGX_INSET: [[f32; 3]; 3] = [
    [0.842479062253094, 0.0784335999999992, 0.0792237451477643],
    [0.0423282422610123, 0.878468636469772, 0.0791661274605434],
    [0.0423756549057051, 0.0784336, 0.879142973793104],
];
/// AgX outset: the inset's inverse (rows).
#[allow(clippy::excessive_precision)] // the published digits, kept so the source can be checked
const AGX_OUTSET: [[f32; 3]; 3] = [
    [1.19687900512017, -0.0980208811401368, -0.0990297440797205],
    [-0.0528968517574562, 1.15190312990417, -0.0989611768448433],
    [-0.0529716355144438, -0.0980434501171241, 1.15107367264116],
];
const AGX_MIN_EV: f32 = -12.47393;
const AGX_MAX_EV: f32 = 4.026069;

/// The polynomial fit of AgX's default contrast sigmoid on [0, 1].
#[inline]
fn agx_contrast(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    15.5 * x4 * x2 - 40.14 * x4 * x + 31.96 * x4 - 6.868 * x2 * x + 0.4298 * x2 + 0.1191 * x - 0.00232
}

/// One channel of AgX between its matrices: log2 encoding, then the sigmoid.
#[inline]
fn agx_channel(v: f32) -> f32 {
    // log2 of 0 is -inf and of a negative NaN: both go to the range's foot. `clamp`
    // would keep the NaN; max then min drops it, as CUDA's fmaxf does.
    #[allow(clippy::manual_clamp)]
    let ev = v.log2().max(AGX_MIN_EV).min(AGX_MAX_EV);
    agx_contrast((ev - AGX_MIN_EV) / (AGX_MAX_EV - AGX_MIN_EV))
}

/// AgX base: display-linear sRGB. The sigmoid's foot is slightly negative
/// (−0.00232); it is clamped to 0 before the 2.2 power.
pub fn agx(rgb: [f32; 3]) -> [f32; 3] {
    let v = mul(&AGX_INSET, rgb);
    let c = mul(&AGX_OUTSET, [agx_channel(v[0]), agx_channel(v[1]), agx_channel(v[2])]);
    [c[0].max(0.0).powf(2.2), c[1].max(0.0).powf(2.2), c[2].max(0.0).powf(2.2)]
}

/// One pixel with exposure and a tone curve; [`Tone::CLAMP`] gives [`trace_tonemap`]'s bytes.
#[inline]
pub fn tonemap_with(sum: [f32; 4], tone: Tone) -> [u8; 4] {
    let [r, g, b] = tone.apply(mean(sum));
    [srgb8(r), srgb8(g), srgb8(b), 255]
}

/// Mean radiance of one pixel's sum (A = samples); black before any sample.
#[inline]
pub fn mean(sum: [f32; 4]) -> [f32; 3] {
    // A reciprocal then products: the kernel computes it the same way.
    let w = if sum[3] > 0.0 { 1.0 / sum[3] } else { 0.0 };
    [sum[0] * w, sum[1] * w, sum[2] * w]
}

/// One pixel: `trace_tonemap` for one thread. Alpha is opaque.
#[inline]
pub fn trace_tonemap(sum: [f32; 4]) -> [u8; 4] {
    let [r, g, b] = mean(sum);
    [srgb8(r), srgb8(g), srgb8(b), 255]
}

/// Every pixel, in parallel: the CPU twin of the `trace_tonemap` launch.
/// `rgba` holds one entry per sum.
pub fn tonemap(sum: &[[f32; 4]], rgba: &mut [[u8; 4]]) {
    rgba.par_iter_mut().zip(sum).for_each(|(out, &s)| *out = trace_tonemap(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_keeps_its_ends_and_its_linear_toe() {
        assert_eq!(srgb8(0.0), 0);
        assert_eq!(srgb8(-1.0), 0);
        assert_eq!(srgb8(f32::NAN), 0);
        assert_eq!(srgb8(1.0), 255);
        assert_eq!(srgb8(7.5), 255);
        assert_eq!(srgb8(f32::INFINITY), 255);
        // Linear toe: 12.92 * 0.003 * 255 = 9.88.
        assert_eq!(srgb8(0.003), 10);
        // Mid grey: 0.5 encodes to 0.7354, i.e. 188.
        assert_eq!(srgb8(0.5), 188);
        // Monotone over the whole range.
        let steps: Vec<u8> = (0..=4096).map(|i| srgb8(i as f32 / 4096.0)).collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn pixels_are_means_of_their_sums_and_opaque() {
        // Four samples summing to (2, 0.5, 8): mean (0.5, 0.125, 2) clamps the blue.
        assert_eq!(trace_tonemap([2.0, 0.5, 8.0, 4.0]), [srgb8(0.5), srgb8(0.125), 255, 255]);
        // No sample yet: black, not NaN.
        assert_eq!(trace_tonemap([0.0; 4]), [0, 0, 0, 255]);
        let sums = vec![[1.0, 1.0, 1.0, 1.0], [0.0; 4], [3.0, 0.0, 0.0, 2.0]];
        let mut rgba = vec![[9u8; 4]; 3];
        tonemap(&sums, &mut rgba);
        assert_eq!(rgba, [[255, 255, 255, 255], [0, 0, 0, 255], [255, 0, 0, 255]]);
    }

    fn grey(tone: Tone, v: f32) -> f32 {
        tone.apply([v, v, v])[0]
    }

    #[test]
    fn clamp_at_0_ev_is_the_default_and_bit_identical_to_before() {
        assert_eq!(Tone::default(), Tone::CLAMP);
        assert_eq!("clamp".parse::<ToneCurve>().ok(), Some(ToneCurve::Clamp));
        assert!("filmic".parse::<ToneCurve>().is_err());
        for i in 0..=2000 {
            let v = i as f32 / 500.0;
            for sum in [[v, v * 0.5, v * 3.0, 1.0], [v, 0.1, 7.0 * v, 3.0], [0.0; 4]] {
                assert_eq!(tonemap_with(sum, Tone::CLAMP), trace_tonemap(sum), "{sum:?}");
            }
        }
    }

    #[test]
    fn every_curve_keeps_black_rises_and_saturates() {
        for curve in ToneCurve::ALL {
            let tone = Tone { exposure: 0.0, curve };
            assert_eq!(tonemap_with([0.0, 0.0, 0.0, 1.0], tone), [0, 0, 0, 255], "{curve:?}: 0 -> 0");
            // Monotone on a grey ramp from 1e-4 to 1e3 (display values after srgb8's clamp).
            let ramp: Vec<f32> = (0..=7000).map(|i| grey(tone, 1e-4 * 10f32.powf(i as f32 / 1000.0))).collect();
            let clamped: Vec<f32> = ramp.iter().map(|v| v.clamp(0.0, 1.0)).collect();
            assert!(clamped.windows(2).all(|w| w[0] <= w[1]), "{curve:?} is not monotone");
            // Toward white for large inputs: 8-bit 250 or more at 1000.
            let top = tonemap_with([1000.0, 1000.0, 1000.0, 1.0], tone);
            assert!(top[..3].iter().all(|&c| c >= 250), "{curve:?}: {top:?}");
        }
    }

    #[test]
    fn a_huge_exposure_saturates_lit_pixels_and_keeps_dark_ones() {
        // Issue 33 item 5: ACES turned lit pixels black from about +62 EV on (v × v overflowed).
        for curve in ToneCurve::ALL {
            for exposure in [40.0, 62.0, 100.0, 127.0, 200.0, 1e30] {
                let tone = Tone { exposure, curve };
                for lit in
                    [[1.0, 0.5, 0.25, 1.0], [3.0, 0.0, 0.0, 1.0], [1e-6, 1e-6, 1e-6, 1.0], [1e30, 1e30, 1e30, 1.0]]
                {
                    let px = tonemap_with(lit, tone);
                    let white = curve != ToneCurve::Clamp;
                    assert!(
                        px[0] == 255 && (!white || px == [255; 4]),
                        "{curve:?} at {exposure} EV: {lit:?} -> {px:?}"
                    );
                }
                assert_eq!(tonemap_with([0.0, 0.0, 0.0, 1.0], tone), [0, 0, 0, 255], "{curve:?} at {exposure} EV");
            }
        }
        assert!((rrt_odt_fit(f32::INFINITY) - 1.0 / 0.983729).abs() < 1e-6);
        assert_eq!(rrt_odt_fit(ACES_FIT_TOP), rrt_odt_fit(f32::MAX));
    }

    #[test]
    fn one_stop_of_exposure_doubles_the_input() {
        for curve in ToneCurve::ALL {
            for v in [0.01f32, 0.18, 0.7, 3.0] {
                let up = Tone { exposure: 1.0, curve };
                let at0 = Tone { exposure: 0.0, curve };
                assert_eq!(up.apply([v, v * 0.5, v * 0.25]), at0.apply([2.0 * v, v, v * 0.5]), "{curve:?} {v}");
            }
        }
        // -2 EV quarters: 0.5 at -2 EV is 0.125 under clamp.
        assert_eq!(Tone { exposure: -2.0, curve: ToneCurve::Clamp }.apply([0.5; 3]), [0.125; 3]);
    }

    #[test]
    fn curves_match_hand_computed_values() {
        let close = |a: f32, b: f32| (a - b).abs() < 2e-4;
        // ACES at grey 0.18: input and output matrices' rows sum to 1 (to 1e-5), so per channel
        // (0.18 * 0.2045786 - 0.000090537) / (0.18 * 0.6100222 + 0.238081) = 0.0367336 / 0.347885 = 0.10559.
        let a = grey(Tone { exposure: 0.0, curve: ToneCurve::Aces }, 0.18);
        assert!(close(a, 0.10559), "aces(0.18) = {a}");
        // ACES at 1: (1.0245786 - 0.000090537) / (0.983729 + 0.432951 + 0.238081) = 1.024488 / 1.654761 = 0.61912.
        let a = grey(Tone { exposure: 0.0, curve: ToneCurve::Aces }, 1.0);
        assert!(close(a, 0.61912), "aces(1) = {a}");
        // AgX at grey 0.18: the inset's rows sum to 1, log2(0.18) = -2.473931, x = 10 / 16.5 = 0.606061;
        // the polynomial gives 0.496731, the outset's first row sums to 0.999828 (0.496645), ^2.2 = 0.21447.
        let g = grey(Tone { exposure: 0.0, curve: ToneCurve::Agx }, 0.18);
        assert!(close(g, 0.21447), "agx(0.18) = {g}");
        // AgX at the top of its range (2^4.026069 and above): polynomial 0.99858, outset 0.998409, ^2.2 = 0.99650.
        let g = grey(Tone { exposure: 0.0, curve: ToneCurve::Agx }, 100.0);
        assert!(close(g, 0.99650), "agx(100) = {g}");
    }
}
