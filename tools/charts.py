"""The charts' one way in and out.

load_matplotlib(): matplotlib with its file-only backend (no display: it works
over SSH and in CI) and the pieces the tools draw with, or None when it does
not import (make venv installs it); no_matplotlib(): what a chart tool then
says, one line, and the exit code it ends with.

save_png(): a figure as a PNG and, with --chinese (tools/chart_zh.py), its
Chinese twin <name>.zh-CN.png, each written only when its bytes change, so a
redraw of unchanged data leaves git clean. Each chart keeps the dpi and PNG
metadata it was first drawn with: the same inputs give the same bytes.
tools/diagrams.py writes its own paletted PNGs from the same figures.
"""
import io
import os
import sys
from types import SimpleNamespace

import chart_zh
import cli
from generated import write_if_changed


def load_matplotlib():
    """matplotlib.pyplot and the classes the tools use, or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch, Rectangle
        import numpy
        from PIL import Image   # both come with matplotlib
    except ImportError:
        return None
    return SimpleNamespace(plt=plt, Patch=Patch, Rectangle=Rectangle, Line2D=Line2D,
                           ListedColormap=ListedColormap, Image=Image, np=numpy)


def no_matplotlib(tool, target):
    """One line on stderr for a chart tool that cannot import matplotlib, and
    its exit code (3: cli.py's no device, or no matplotlib for the charts).
    target: the make target that installs it into .venv and draws again."""
    print(f"{tool}: error: matplotlib is not installed; run `pip install -r "
          f"tools/requirements.txt` (or `make {target}`, which creates a venv)", file=sys.stderr)
    return cli.EXIT_DEVICE


def save_png(plt, fig, path, dpi, relayout=False, metadata=None, quiet=False):
    """Write fig to path (and its Chinese twin) and close it; the paths it
    wrote, each announced as '<tool>: wrote <path>' unless quiet. relayout:
    the figure was laid out by tight_layout(), which the Chinese words need
    again."""
    options = {"dpi": dpi}
    if metadata is not None:
        options["metadata"] = metadata
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **options)
    chinese = chart_zh.chinese_png(fig, relayout=relayout, **options)
    plt.close(fig)
    written = []
    if write_if_changed(path, buffer.getvalue()):
        written.append(path)
    if chinese is not None and write_if_changed(chart_zh.zh_path(path), chinese):
        written.append(chart_zh.zh_path(path))
    if not quiet:
        tool = os.path.basename(sys.argv[0]) or "charts.py"
        for done in written:
            print(f"{tool}: wrote {done}")
    return written
