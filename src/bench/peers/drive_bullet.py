"""reap's driver of PyBullet for `reap bench collide --peers bullet`.

The file is not called pybullet.py: Python would import it in place of PyBullet.
reap writes this file to a temporary folder and runs it with $REAP_PYTHON or
python3. Arguments: --scene JSON --out DIR. The scene is reap's own, built by
reap (`scenario::build`): the world (time step, gravity, friction, restitution,
the speed below which nothing bounces, the container's box) and every body
(shape, half extents or radius, inverse mass, position, rotation as x y z w,
linear and angular velocity in world space), and how to step it: `substeps`
per frame, the solver's iterations (`solver_iterations`; null: PyBullet's
default), `frames` frames, and the frames after which to report every body's
state (`samples`; 0 is the start).

PyBullet runs in DIRECT mode (no GUI, one CPU thread). Each frame is one
stepSimulation of the scene's time step, split by PyBullet into `substeps`
steps (numSubSteps), as reap splits its frame; the solver's iterations a
step are reported (numSolverIterations). The container is six static planes facing in.
Bullet multiplies the two bodies' coefficients of a contact, so every body and
wall gets the square root of reap's friction and restitution: each contact
then has reap's. Bullet has one friction coefficient, so reap's static one is
not used. Damping is off and no body sleeps, as in reap.

Each stepSimulation is timed by a monotonic clock (time.perf_counter); reading
the states back is not timed. DIR/bullet.json says what ran, each frame's step
in ms and the sampled states (per body: px py pz qx qy qz qw vx vy vz wx wy wz),
or, where PyBullet could not run, why (`error`, at `stage`), so the bench can
print the reason and go on. Only the standard library and PyBullet (which
imports numpy) are needed.
"""

import argparse
import json
import math
import os
import sys
import time
import traceback


def write_json(out, doc):
    path = os.path.join(out, "bullet.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(path + ".tmp", path)


def fail(out, stage, e):
    write_json(out, {"error": f"{type(e).__name__}: {e}".strip(), "stage": stage, "python": sys.version.split()[0]})
    return 0


def version(p):
    try:
        from importlib.metadata import version as installed

        return installed("pybullet")
    except Exception:
        return f"API {p.getAPIVersion()}"


def build(p, scene):
    """The world and the bodies in PyBullet; the bodies' ids in reap's order."""
    w = scene["world"]
    p.setGravity(*w["gravity"])
    p.setPhysicsEngineParameter(
        fixedTimeStep=w["dt"],
        numSubSteps=scene["substeps"],
        restitutionVelocityThreshold=w["rest_speed"],
    )
    if scene.get("solver_iterations") is not None:
        p.setPhysicsEngineParameter(numSolverIterations=scene["solver_iterations"])
    friction, restitution = math.sqrt(w["friction"]), math.sqrt(w["restitution"])

    def surface(body):
        p.changeDynamics(
            body,
            -1,
            lateralFriction=friction,
            restitution=restitution,
            rollingFriction=0,
            spinningFriction=0,
            linearDamping=0,
            angularDamping=0,
            activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING,
        )

    lo, hi = w["min"], w["max"]
    for k in range(3):
        for side, at in ((1.0, lo), (-1.0, hi)):
            normal = [0.0, 0.0, 0.0]
            normal[k] = side
            point = [0.0, 0.0, 0.0]
            point[k] = at[k]
            plane = p.createCollisionShape(p.GEOM_PLANE, planeNormal=normal)
            surface(p.createMultiBody(baseMass=0, baseCollisionShapeIndex=plane, basePosition=point))
    ids = []
    for b in scene["bodies"]:
        if b["shape"] == "sphere":
            shape = p.createCollisionShape(p.GEOM_SPHERE, radius=b["half"][0])
        else:
            shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=b["half"])
        mass = 1.0 / b["inv_mass"] if b["inv_mass"] > 0 else 0.0
        body = p.createMultiBody(
            baseMass=mass,
            baseCollisionShapeIndex=shape,
            basePosition=b["pos"],
            baseOrientation=b["rot"],
            useMaximalCoordinates=True,
        )
        p.resetBaseVelocity(body, b["vel"], b["omega"])
        surface(body)
        ids.append(body)
    return ids


def states(p, ids):
    out = []
    for body in ids:
        pos, rot = p.getBasePositionAndOrientation(body)
        vel, omega = p.getBaseVelocity(body)
        out.append([*pos, *rot, *vel, *omega])
    return out


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--scene", required=True)
    a.add_argument("--out", required=True)
    a = a.parse_args()

    try:
        import pybullet as p
    except Exception as e:
        return fail(a.out, "import", e)
    try:
        with open(a.scene) as f:
            scene = json.load(f)
        clock = time.perf_counter()
        p.connect(p.DIRECT)
        ids = build(p, scene)
        setup_s = time.perf_counter() - clock
        iterations = p.getPhysicsEngineParameters()["numSolverIterations"]
    except Exception as e:
        traceback.print_exc()
        return fail(a.out, "setup", e)

    wanted = set(scene["samples"])
    samples, step_ms = [], []
    try:
        if 0 in wanted:
            samples.append({"frame": 0, "bodies": states(p, ids)})
        for frame in range(1, scene["frames"] + 1):
            clock = time.perf_counter()
            p.stepSimulation()
            step_ms.append(1e3 * (time.perf_counter() - clock))
            if frame in wanted:
                samples.append({"frame": frame, "bodies": states(p, ids)})
    except Exception as e:
        traceback.print_exc()
        return fail(a.out, "step", e)
    write_json(
        a.out,
        {
            "pybullet": version(p),
            "python": sys.version.split()[0],
            "solver_iterations": iterations,
            "setup_s": setup_s,
            "step_ms": step_ms,
            "samples": samples,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
