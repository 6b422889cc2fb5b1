"""Designs perturbed and rendered per second (AesEval-style stages), on the generated Crello sample.

    python bench/render.py --designs 1000

Builds the sample designs (sample/design_fixture.py), makes ``--designs`` distinct designs from them (the
sample's eight, each under a new id, so every one gets its own seeded perturbation), then times, in one
process: perturbing each (Algorithm 1, assets/designs/logic/perturb.py), rendering each base design and each
perturbed design (assets/designs/logic/render.py, PNG encoding included). Layers are decoded once and cached,
as the design_renders asset does. A benchmark, not a test: figures go in bench/README.md.
"""

import argparse
import io
import sys
import tempfile
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assets.designs.logic.perturb import perturb_design  # noqa: E402
from assets.designs.logic.crello_records import read_design_folder  # noqa: E402
from assets.designs.logic.render import render_design, to_png_bytes  # noqa: E402
from assets.designs.logic.fonts import default_resolver  # noqa: E402
from sample.design_fixture import build_design_fixture  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--designs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build_design_fixture(Path(tmp))
        layers: dict[str, bytes] = {}
        reads = list(read_design_folder(Path(tmp) / "v5", on_layer=lambda p: layers.__setitem__(p.ref, p.data)))
    samples = [r.design for r in reads if r.ok]
    designs = [replace(samples[i % len(samples)], design_id=f"{samples[i % len(samples)].design_id}-{i}")
               for i in range(args.designs)]

    @lru_cache(maxsize=256)
    def load(ref: str) -> Image.Image:
        image = Image.open(io.BytesIO(layers[ref]))
        image.load()
        return image

    fonts = default_resolver()
    pool = sorted(ref for ref in layers)
    started = time.perf_counter()
    perturbed = [perturb_design(d, args.seed, None, pool).design for d in designs]
    perturb_s = time.perf_counter() - started
    started = time.perf_counter()
    n_bytes = sum(len(to_png_bytes(render_design(d, load, fonts).image)) for d in designs + perturbed)
    render_s = time.perf_counter() - started
    pixels = sum(d.canvas_width * d.canvas_height for d in designs) / len(designs)
    print(f"{len(designs)} designs ({len(samples)} sample layouts, mean {pixels / 1e3:.0f} kpx), one process")
    print(f"perturbed : {len(designs)} in {perturb_s:.2f} s = {len(designs) / perturb_s:,.0f} designs/s")
    print(f"rendered  : {2 * len(designs)} (base + perturbed) in {render_s:.2f} s = {2 * len(designs) / render_s:.1f} designs/s"
          f" (PNG, {n_bytes / 2 / len(designs) / 1e3:.0f} kB each)")
    print(f"perturb + render one variant: {len(designs) / (perturb_s + render_s / 2):.1f} designs/s")


if __name__ == "__main__":
    main()
