"""reap's driver of Mitsuba 3 for `reap bench render --peers mitsuba`.

The file is not called mitsuba.py: Python would import it in place of Mitsuba.
reap writes this file to a temporary folder and runs it with $REAP_PYTHON or
python3. Arguments: --scene XML --variant NAME --spp N,N,... --seed S --out DIR.
Per sample count it renders once untimed (the warm-up: Dr.Jit traces and
compiles the kernel, which its cache keeps) and once timed with the same seed,
then writes DIR/mitsuba_<spp>.f32: raw little-endian float32 RGB, height x
width x 3, row 0 the top of the image. DIR/mitsuba.json says what ran and how
long it took, or, where Mitsuba could not run, why (`error`, at `stage`), so
the bench can print the reason and go on. Only the standard library and
Mitsuba are needed (no numpy).
"""

import argparse
import json
import os
import sys
import time
import traceback


def write_json(out, doc):
    path = os.path.join(out, "mitsuba.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def fail(out, stage, e):
    write_json(out, {"error": f"{type(e).__name__}: {e}".strip(), "stage": stage, "python": sys.version.split()[0]})
    return 0


def raw_rgb(mi, image, path):
    """The image as raw f32 rows, top row first. Mitsuba writes PFM bottom row
    first (as the format says), so the rows are reversed while copying."""
    pfm = path + ".pfm"
    mi.Bitmap(image, pixel_format=mi.Bitmap.PixelFormat.RGB).write(pfm)
    with open(pfm, "rb") as f:
        data = f.read()
    os.remove(pfm)
    lines, at = [], 0
    for _ in range(3):  # "PF", "width height", scale (negative: little-endian)
        end = data.index(b"\n", at)
        lines.append(data[at:end].decode())
        at = end + 1
    width, height = (int(v) for v in lines[1].split())
    if lines[0] != "PF" or float(lines[2]) >= 0:
        raise ValueError(f"unexpected PFM header {lines}")
    row = width * 12
    pixels = data[at:]
    if len(pixels) != row * height:
        raise ValueError(f"PFM holds {len(pixels)} bytes, expected {row * height}")
    with open(path + ".tmp", "wb") as f:
        for y in reversed(range(height)):
            f.write(pixels[y * row:(y + 1) * row])
    os.replace(path + ".tmp", path)
    return width, height


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scene", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--spp", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    spps = [int(s) for s in a.spp.split(",")]

    try:
        import drjit as dr
        import mitsuba as mi
    except Exception as e:
        return fail(a.out, "import", e)
    try:
        mi.set_variant(a.variant)
    except Exception as e:
        return fail(a.out, "variant", e)
    try:
        clock = time.perf_counter()
        scene = mi.load_file(a.scene)
        load_s = time.perf_counter() - clock
    except Exception as e:
        return fail(a.out, "load", e)

    def timed(spp):
        clock = time.perf_counter()
        image = mi.render(scene, spp=spp, seed=a.seed)
        dr.eval(image)
        dr.sync_thread()
        return image, time.perf_counter() - clock

    checkpoints = []
    try:
        for spp in spps:
            # The same seed as the timed render: the kernel it compiles is the one the cache returns.
            _, warmup_s = timed(spp)
            image, wall_s = timed(spp)
            name = f"mitsuba_{spp}.f32"
            width, height = raw_rgb(mi, image, os.path.join(a.out, name))
            checkpoints.append(
                {"spp": spp, "wall_s": wall_s, "warmup_s": warmup_s, "image": name, "width": width, "height": height}
            )
    except Exception as e:
        traceback.print_exc()
        return fail(a.out, "render", e)
    write_json(
        a.out,
        {
            "mitsuba": mi.__version__,
            "drjit": dr.__version__,
            "variant": a.variant,
            "python": sys.version.split()[0],
            "load_s": load_s,
            "checkpoints": checkpoints,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
