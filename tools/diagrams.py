#!/usr/bin/env python3
"""Draw each step's access pattern from tools/patterns.py, no GPU needed.

    python3 tools/diagrams.py [--root DIR] [--out-dir DIR] [--steps STEP...]

Writes plots/diagrams/<step>-<kind>.png for every step that has a model:
  lanes    which lanes of one block work at each level, warp by warp
  banks    the shared-memory bank map of each level's worst request
  shuffle  the __shfl_down_sync levels of steps 7 and up
  loads    which thread loads which element (grid-stride steps; a small grid)
  ticket   blocks draw tickets in any order; the last reads every partial
           (single-pass steps; a small grid)
A PNG is rewritten only when its bytes change, so reruns leave git clean.
The README blocks that show the pictures (<!-- BEGIN figures -->) are
tools/docs.py's to write (`make docs`): it asks figures_block() here for
their text, so links and alt text come from the same model as the pictures.

Exit codes: 0 done, 2 bad input (one line on stderr), 3 matplotlib missing.
"""

import argparse
import io
import glob
import os
import sys

import cli  # how main() ends
import charts  # matplotlib loaded
import patterns as pt
from generated import write_if_changed

DPI = 100
FIGURES_DIR = os.path.join("plots", "diagrams")

# One colour per lane state, the same in every step's pictures. The blues
# are plot.py's two bar colours; grey reads as "idle", white as "absent".
STATE_COLOURS = {
    pt.WORK: "#1f4e8c",
    pt.SPARE: "#8fb4e3",
    pt.OFF: "#c9c9c9",
    pt.SKIP: "#ffffff",
}
STATE_LABELS = {
    pt.WORK: "works: condition true, result used",
    pt.SPARE: "runs, but no later level reads its result",
    pt.OFF: "idle: its warp issues the instruction, its condition is false",
    pt.SKIP: "its warp does not issue the instruction at all",
}
IDLE_WARP_LABEL = "a whole warp idles, yet issues (a branch would skip it)"
GAP_COLOUR = "#ffffff"
LANES_TALL = 24     # a lanes picture with more rows gets thinner ones
EDGE_COLOUR = "#555555"

# Bank map: words per bank in one request. 1 is the goal (one pass); every
# extra word is one more pass, drawn warmer.
DEGREE_COLOURS = ((0, "#ffffff"), (1, "#b9dfbb"), (2, "#f7c99b"),
                  (4, "#ee9a5a"), (8, "#d9534f"), (1 << 30, "#8b1a1a"))

# Parts of the input (loads pictures).
PART_COLOURS = {pt.BODY: "#8fb4e3", pt.HEAD: "#f0b44c", pt.TAIL: "#b07cc6"}
SKIPPED_COLOUR = "#e6e6e6"

# The loads pictures shrink the grid so every element gets a cell; the
# index expressions are the kernel's own, with these sizes put in.
EXAMPLE_BLOCK, EXAMPLE_GRID = 4, 2
EXAMPLE_N = 45                   # with UNROLL 4: one full trip, then a partial one
EXAMPLE_OFFSET = 1               # step 8: start one float past a 16-byte boundary
EXAMPLE_N_VECTOR = 3 + 4 * 37 + 2   # 3 head floats, 37 float4s, 2 tail floats
# The ticket picture: six blocks of EXAMPLE_BLOCK threads, so the last
# block's loop runs one full trip and one partial one. The order in which
# they reach the fetch_add is the hardware's; this is one such order.
EXAMPLE_FINISH = (3, 0, 5, 1, 4, 2)

CAPTION_SOURCE = ("computed by tools/patterns.py from the index expressions of "
                  "{step}/reduce.cu, no GPU; each if is issued as nvcc 13 compiles "
                  "it for sm_90 (predicated, or a branch)")


class DiagramError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


# ----------------------------------------------------------------------------
# Which figures a step gets, and their alt text (no matplotlib needed)
# ----------------------------------------------------------------------------

def figure_kinds(built):
    kinds = []
    if built.tree():
        kinds.append("lanes")
    if any(st.kind == "level" for st in built.all_stages()):
        kinds.append("banks")
    if any(st.kind == "shuffle" for st in built.all_stages()):
        kinds.append("shuffle")
    if hasattr(built.loads, "unroll"):
        kinds.append("loads")
    if built.ticket is not None:
        kinds.append("ticket")
    return kinds


def worst_degree(built):
    return max((st.worst().degree for st in built.shared_stages() if st.worst()),
               default=0)


# The alt text of each picture as a template: tools/docs.py translates the
# template (its STRINGS table) and fills in the same values in every language.
ALT_TEXT = {
    "lanes": "{step}: which of the {threads} threads ({warps} warps) of one block work at "
             "each level, and which warps issue it",
    "banks": "{step}: shared-memory bank map of each level; no bank serves two words in "
             "one request",
    "banks-conflict": "{step}: shared-memory bank map of each level; the worst request puts "
                      "{degree} words in one bank",
    "shuffle": "{step}: the {levels} __shfl_down_sync levels; lane i adds lane i + offset, "
               "and only lane 0 keeps the full sum",
    "loads": "{step}: which thread loads which element, for a small grid",
    "loads-vector": "{step}: which thread loads which float, head, float4 body and tail, "
                    "for a small grid with --offset {offset}",
    "ticket": "{step}: blocks draw tickets in the order they finish; the one that draws "
              "ticket gridDim.x - 1 reads every partial sum in block order, for a small grid",
}


def alt_text(built, kind):
    """(a template of ALT_TEXT, its values): what one picture shows."""
    values = {"step": built.step}
    if kind == "lanes":
        key = "lanes"
        values.update(threads=built.block, warps=built.block // pt.WARP)
    elif kind == "banks":
        degree = worst_degree(built)
        key = "banks" if degree <= 1 else "banks-conflict"
        values.update(degree=degree)
    elif kind == "shuffle":
        key = "shuffle"
        values.update(levels=len({st.shuffle_offset for st in built.all_stages()
                                  if st.kind == "shuffle"}))
    elif kind == "loads":
        key = "loads-vector" if isinstance(built.loads, pt.VectorGridStride) else "loads"
        values.update(offset=EXAMPLE_OFFSET)
    elif kind == "ticket":
        key = "ticket"
    else:
        raise DiagramError(f"unknown figure kind {kind}")
    return ALT_TEXT[key], values


def figure_name(step, kind):
    return f"{step}-{kind}.png"


def english(template, **values):
    return template.format(**values)


def figures_block(built, readme_dir, out_dir, translate=english):
    """The body of a README's figures block: one image link per picture.

    translate(template, **values) gives the alt text in the README's
    language; the links are the same in every language."""
    links = []
    for kind in figure_kinds(built):
        path = os.path.join(out_dir, figure_name(built.step, kind))
        link = os.path.relpath(path, readme_dir).replace(os.sep, "/")
        template, values = alt_text(built, kind)
        links.append(f"![{translate(template, **values)}]({link})")
    return "\n\n".join(links)


# ----------------------------------------------------------------------------
# Drawing
# ----------------------------------------------------------------------------

load_matplotlib = charts.load_matplotlib   # matplotlib, numpy and PIL, or None


def save(mpl, fig, path):
    """Write the figure as a paletted PNG, only if its bytes changed.

    Flat colours and text need few colours: a fixed palette keeps each file
    a fraction of matplotlib's RGBA PNG. Mapping to it without dithering is
    deterministic, and no tag names the software or a date, so the same
    picture always gives the same bytes."""
    data = png_bytes(mpl, fig)
    mpl.plt.close(fig)
    if write_if_changed(path, data):
        print(f"diagrams.py: wrote {path}")


def png_bytes(mpl, fig):
    """The figure as it stands, a paletted PNG (save() says why)."""
    fig.canvas.draw()
    size = fig.canvas.get_width_height()
    image = to_palette(mpl, bytes(fig.canvas.buffer_rgba()), size)
    buffer = io.BytesIO()
    image.save(buffer, format="png", optimize=True)
    return buffer.getvalue()


def add_cell(ax, patch):
    """ax.add_patch() without its update of the data limits, the slowest part
    of drawing thousands of cells: every picture sets its own limits, and the
    same bytes come out (tests/test_patterns.py compares them)."""
    return ax.add_artist(patch)


def hex_rgb(colour):
    return tuple(int(colour[k:k + 2], 16) for k in (1, 3, 5))


def palette_colours():
    """A fixed palette: every colour the pictures use, each blended towards
    white and black (the edges of antialiased lines and text), and greys.
    Fixed rather than fitted to the image, so a colour that covers only a
    legend swatch keeps its exact value."""
    theme = (list(STATE_COLOURS.values()) + [c for _, c in DEGREE_COLOURS]
             + list(PART_COLOURS.values()) + [SKIPPED_COLOUR, EDGE_COLOUR, "#d0d0d0"]
             + list(ROW_WARP_COLOURS))
    colours = {(255, 255, 255)}
    for colour in theme:
        rgb = hex_rgb(colour)
        for t in (0.2, 0.4, 0.6, 0.8, 1.0):
            colours.add(tuple(round(255 + (c - 255) * t) for c in rgb))
        for t in (0.25, 0.5, 0.75):
            colours.add(tuple(round(c * (1 - t)) for c in rgb))
    colours |= {(g, g, g) for g in range(0, 256, 8)}
    return sorted(colours)


def to_palette(mpl, rgba, size):
    """Map every pixel to its nearest palette colour (exactly, with numpy:
    Pillow's own palette lookup rounds, and turned white into light grey)."""
    np = mpl.np
    palette = np.array(palette_colours(), dtype=np.int64)
    pixels = np.frombuffer(rgba, dtype=np.uint8).reshape(-1, 4)[:, :3].astype(np.int64)
    packed = (pixels[:, 0] << 16) | (pixels[:, 1] << 8) | pixels[:, 2]
    unique, inverse = np.unique(packed, return_inverse=True)
    rgb = np.stack([unique >> 16, (unique >> 8) & 255, unique & 255], axis=1)
    distance = ((rgb[:, None, :] - palette[None, :, :]) ** 2).sum(axis=2)
    index = distance.argmin(axis=1)[inverse.reshape(-1)].astype(np.uint8)
    image = mpl.Image.frombytes("P", size, index.tobytes())
    image.putpalette([value for rgb in palette.tolist() for value in rgb])
    return image


def new_figure(mpl, width, rows, row_height, top, bottom, left, right):
    """A figure whose axes has fixed margins in inches, rows * row_height tall."""
    height = top + rows * row_height + bottom
    fig = mpl.plt.figure(figsize=(width, height), dpi=DPI)
    ax = fig.add_axes((left / width, bottom / height,
                       1 - (left + right) / width, rows * row_height / height))
    return fig, ax


def titles(fig, built, title, subtitle, left):
    width, height = fig.get_figwidth(), fig.get_figheight()
    fig.text(left / width, 1 - 0.12 / height, title, fontsize=12.5,
             fontweight="bold", va="top")
    fig.text(left / width, 1 - 0.42 / height, subtitle, fontsize=9, va="top",
             color="#333333")
    fig.text(left / width, 0.1 / height, CAPTION_SOURCE.format(step=built.step),
             fontsize=8, va="bottom", color="#666666")


def bare(ax):
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)


def degree_colour(degree):
    for limit, colour in DEGREE_COLOURS:
        if degree <= limit:
            return colour
    return DEGREE_COLOURS[-1][1]


def row_note(stage):
    issuing, working = stage.issuing_warps(), stage.working_warps()
    lanes = sum(state in (pt.WORK, pt.SPARE) for state in stage.threads)
    idle = len(issuing) - len(working)
    warps = f"{len(issuing)} warp{'s' if len(issuing) != 1 else ''} issue"
    if idle:
        warps += f" ({idle} with no lane on)"
    return f"{warps}, {lanes} lane{'s' if lanes != 1 else ''} run"


def once_note(built):
    """The divider above the stages that only the last block runs."""
    note = "the last block only, once per launch"
    if built.grid:
        note += (f": gridDim.x = {built.grid} partials (a full wave on "
                 f"{pt.EXAMPLE_SMS} SMs, as on an H200)")
    return note


def draw_lanes(mpl, built, path):
    # Rows: one per stage; a single-pass step's once-per-launch stages come
    # after a blank divider row (None).
    rows = [st for st in built.stages if st.insts]
    once = [st for st in built.once if st.insts]
    if once:
        rows += [None] + once
    warps = built.block // pt.WARP
    gap = 3
    width = warps * pt.WARP + (warps - 1) * gap
    codes = {state: k for k, state in enumerate(pt.LANE_STATES)}
    gap_code = len(pt.LANE_STATES)
    grid = []
    for stage in rows:
        row = []
        for warp in range(warps):
            if warp:
                row += [gap_code] * gap
            row += ([gap_code] * pt.WARP if stage is None else
                    [codes[s] for s in stage.threads[warp * pt.WARP:(warp + 1) * pt.WARP]])
        grid.append(row)
    left, right = 1.55, 3.3
    # Step 9's two rounds make a long picture: thinner rows keep it small.
    row_height = 0.3 if len(rows) <= LANES_TALL else 0.25
    fig, ax = new_figure(mpl, 12, len(rows), row_height, 1.05, 1.1, left, right)
    colours = [STATE_COLOURS[s] for s in pt.LANE_STATES] + [GAP_COLOUR]
    ax.imshow(grid, cmap=mpl.ListedColormap(colours), vmin=0, vmax=gap_code,
              aspect="auto", interpolation="nearest")
    for y, stage in enumerate(rows):
        if stage is None:
            ax.text(-0.5, y, once_note(built), va="center", fontsize=9,
                    fontstyle="italic", color="#333333")
            continue
        working = set(stage.working_warps())
        for warp in range(warps):
            x = warp * (pt.WARP + gap) - 0.5
            if warp in stage.issuing_warps() and warp not in working:
                # The whole warp idles, yet spends an issue slot on the level.
                add_cell(ax, mpl.Rectangle((x, y - 0.5), pt.WARP, 1, fill=False,
                                           hatch="////", edgecolor="#8a8a8a",
                                           linewidth=0))
        ax.text(width + 3, y, row_note(stage), va="center", fontsize=8.5)
    # Frame each warp, section by section, so skipped (white) lanes show.
    sections = [(0, len(rows))] if not once else [(0, len(rows) - len(once) - 1),
                                                 (len(rows) - len(once), len(once))]
    for first, count in sections:
        for warp in range(warps):
            x = warp * (pt.WARP + gap) - 0.5
            add_cell(ax, mpl.Rectangle((x, first - 0.5), pt.WARP, count, fill=False,
                                       edgecolor=EDGE_COLOUR, linewidth=0.6))
    for y in range(1, len(rows)):
        ax.axhline(y - 0.5, color="#ffffff", linewidth=1.2)
    ax.set_yticks(range(len(rows)), ["" if st is None else st.label for st in rows],
                  fontsize=9)
    centres = [warp * (pt.WARP + gap) + pt.WARP / 2 - 0.5 for warp in range(warps)]
    ax.set_xticks(centres, [f"warp {w}" for w in range(warps)], fontsize=9)
    ax.xaxis.tick_top()
    ax.set_xlim(-0.5, width - 0.5)
    bare(ax)
    handles = [mpl.Patch(facecolor=STATE_COLOURS[s], edgecolor=EDGE_COLOUR,
                         label=STATE_LABELS[s]) for s in pt.LANE_STATES]
    handles.append(mpl.Patch(facecolor=STATE_COLOURS[pt.OFF], hatch="////",
                             edgecolor="#8a8a8a", label=IDLE_WARP_LABEL))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, 0),
              ncol=2, fontsize=8.5, frameon=False, borderaxespad=0.3)
    titles(fig, built, f"{built.step}: which lanes work at each level",
           f"one block of {built.block} threads = {warps} warps of 32 lanes; "
           f"{built.summary}", left)
    save(mpl, fig, path)


def draw_banks(mpl, built, path):
    stages = built.shared_stages()
    left, right = 1.55, 4.6
    fig, ax = new_figure(mpl, 12, len(stages), 0.3, 1.3, 0.75, left, right)
    for y, stage in enumerate(stages):
        worst = stage.worst()
        counts = worst.words_per_bank() if worst else [0] * pt.NUM_BANKS
        for b, count in enumerate(counts):
            add_cell(ax, mpl.Rectangle((b - 0.5, y - 0.5), 1, 1,
                                       facecolor=degree_colour(count),
                                       edgecolor="#ffffff", linewidth=1))
            if count > 1:
                ax.text(b, y, str(count), ha="center", va="center", fontsize=7.5,
                        color="#ffffff" if count > 4 else "#222222")
        extra = sum(inst.extra_passes for inst in stage.shared())
        note = "no lane touches shared memory"
        if worst and worst.degree <= 1:
            note = "every request: one word per bank, one pass"
        elif worst:
            note = (f"{worst.degree}-way: warp {worst.warp}, {worst.what}; "
                    f"+{extra} extra passes per block")
        ax.text(pt.NUM_BANKS + 0.2, y, note, va="center", fontsize=8.5)
    ax.set_xlim(-0.5, pt.NUM_BANKS - 0.5)
    ax.set_ylim(len(stages) - 0.5, -0.5)
    ax.set_yticks(range(len(stages)), [st.label for st in stages], fontsize=9)
    ax.set_xticks(range(0, pt.NUM_BANKS, 4), [str(b) for b in range(0, pt.NUM_BANKS, 4)],
                  fontsize=8.5)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("bank = word address mod 32 (4-byte words)", fontsize=9)
    bare(ax)
    titles(fig, built, f"{built.step}: shared-memory banks, worst warp request "
           f"of each level",
           "green: one word per bank, one pass; a number k: that bank serves k "
           "different words, so the request takes k passes (k - 1 extra)", left)
    save(mpl, fig, path)


def draw_shuffle(mpl, built, path):
    offsets = []
    for stage in built.all_stages():
        if stage.kind == "shuffle" and stage.shuffle_offset not in offsets:
            offsets.append(stage.shuffle_offset)
    left, right = 1.2, 2.6
    fig, ax = new_figure(mpl, 12, len(offsets) + 1, 0.5, 1.05, 1.05, left, right)
    for lane in range(pt.WARP):
        ax.plot(lane, 0, "o", color=STATE_COLOURS[pt.WORK], markersize=4.5)
    sums = 1
    for y, offset in enumerate(offsets, start=1):
        sums *= 2
        for lane in range(pt.WARP):
            state = pt.WORK if lane < offset else pt.SPARE
            source = lane + offset
            if source < pt.WARP:
                ax.plot([source, lane], [y - 1, y], color=STATE_COLOURS[state],
                        linewidth=1.3 if state == pt.WORK else 0.6, zorder=1)
            ax.plot(lane, y, "o", color=STATE_COLOURS[state], markersize=4.5, zorder=2)
        keep = f"lane 0 holds all {sums}" if offset == 1 else \
            f"lanes 0-{offset - 1} hold sums of {sums}"
        ax.text(pt.WARP, y, keep, va="center", fontsize=8.5)
    ax.text(pt.WARP, 0, "each lane's own value", va="center", fontsize=8.5)
    ax.set_ylim(len(offsets) + 0.5, -0.5)
    ax.set_xlim(-0.8, pt.WARP - 0.2)
    ax.set_xticks(range(0, pt.WARP, 4), [str(k) for k in range(0, pt.WARP, 4)], fontsize=8.5)
    ax.set_yticks(range(len(offsets) + 1), ["start"] + [f"offset {o}" for o in offsets],
                  fontsize=9)
    bare(ax)
    handles = [mpl.Patch(color=STATE_COLOURS[s], label=STATE_LABELS[s])
               for s in (pt.WORK, pt.SPARE)]
    ax.set_xlabel("lane", fontsize=9)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, -0.16), ncol=2,
              fontsize=8.5, frameon=False, borderaxespad=0.3)
    warps = built.block // pt.WARP
    titles(fig, built, f"{built.step}: v += __shfl_down_sync(FULL_MASK, v, offset)",
           f"lane i adds lane i + offset (a source past lane 31 returns the lane's "
           f"own v); all {warps} warps do this, then warp 0 once more over the "
           f"{warps} warp sums", left)
    save(mpl, fig, path)


def example_loads(built):
    """(loads, n, offset, slot order, small loads model) for a loads picture."""
    source = built.loads
    small = type(source)(EXAMPLE_BLOCK, source.unroll, source.min_per_thread, source.src)
    vector = isinstance(source, pt.VectorGridStride)
    n = EXAMPLE_N_VECTOR if vector else EXAMPLE_N
    offset = EXAMPLE_OFFSET if vector else 0
    loads = list(small.thread_loads(n, EXAMPLE_GRID, offset))
    return loads, n, offset, small.slots(n, EXAMPLE_GRID, offset), small


def cell_text(load):
    if load.width == 1:
        return str(load.first)
    return f"{load.first}-{load.first + load.width - 1}"


def draw_loads(mpl, built, path):
    loads, n, offset, slots, small = example_loads(built)
    threads = EXAMPLE_GRID * EXAMPLE_BLOCK
    by_cell = {(ld.slot, ld.thread): ld for ld in loads}
    left, right = 1.1, 4.4
    fig, ax = new_figure(mpl, 11, len(slots), 0.38, 1.45, 0.8, left, right)
    for y, slot in enumerate(slots):
        for t in range(threads):
            load = by_cell.get((slot, t))
            colour = PART_COLOURS[load.part] if load else SKIPPED_COLOUR
            add_cell(ax, mpl.Rectangle((t - 0.5, y - 0.5), 1, 1, facecolor=colour,
                                       edgecolor="#ffffff", linewidth=1.5))
            ax.text(t, y, cell_text(load) if load else "-", ha="center",
                    va="center", fontsize=8.5, color="#222222")
    ax.axvline(EXAMPLE_BLOCK - 0.5, color="#333333", linewidth=1.5)
    ax.set_xlim(-0.5, threads - 0.5)
    ax.set_ylim(len(slots) - 0.5, -0.5)
    ax.set_xticks(range(threads), [str(t) for t in range(threads)], fontsize=9)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("thread i = blockIdx.x * BLOCK + tid   (block 0 | block 1)", fontsize=9)
    ax.set_yticks(range(len(slots)), slots, fontsize=9)
    bare(ax)
    notes = [f"BLOCK = {EXAMPLE_BLOCK}, gridDim.x = {EXAMPLE_GRID} (shrunk)",
             f"stride = gridDim.x * BLOCK = {threads}",
             f"UNROLL = {small.unroll} (the source's), n = {n}"]
    if isinstance(small, pt.VectorGridStride):
        head, n4, tail = small.split(n, offset)
        notes += [f"--offset {offset}: g_in starts {offset * pt.WORD_BYTES} bytes",
                  f"past a 16-byte boundary, so head = {head},",
                  f"n4 = {n4} float4s from g_in + {head}, tail = {tail}"]
    notes += ["cell: the g_in index (range) loaded",
              "-: the bound check is false; the",
              "   load still issues, predicated off"]
    for k, note in enumerate(notes):
        ax.text(threads - 0.2, -0.5 + k * 0.5, note, fontsize=8.5, va="top")
    present = [part for part in (pt.HEAD, pt.BODY, pt.TAIL)
               if any(ld.part == part for ld in loads)]
    handles = [mpl.Patch(facecolor=PART_COLOURS[p], label=p) for p in present]
    handles.append(mpl.Patch(facecolor=SKIPPED_COLOUR, label="no load"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, 0),
              ncol=len(handles), fontsize=8.5, frameon=False, borderaxespad=0.3)
    titles(fig, built, f"{built.step}: which thread loads which element",
           f"a small grid so every element has a cell; the real launch has "
           f"{built.block} threads per block, the index math is the same", left)
    save(mpl, fig, path)


def draw_ticket(mpl, built, path):
    """Blocks reach the fetch_add in some order and draw tickets 0, 1, ...;
    each stores its partial in its own slot; the block with the last ticket
    reads the slots in block order, with the loop's stride."""
    small = type(built.ticket)(EXAMPLE_BLOCK, built.ticket.src)
    grid = len(EXAMPLE_FINISH)
    draws = small.draws(EXAMPLE_FINISH)
    last = next(b for b, _, is_last in draws if is_last)
    loads = list(small.partial_loads(grid))
    reader = {(ld.slot, ld.first): ld.thread for ld in loads}
    trips = sorted({ld.slot for ld in loads}, key=lambda slot: int(slot.split()[1]))
    columns = max(grid, EXAMPLE_BLOCK * len(trips))
    rows = 4 + len(trips)      # tickets, two rows for the lines, slots, trips
    left, right, row_height = 1.9, 3.7, 0.42
    fig, ax = new_figure(mpl, 12, rows, row_height, 1.35, 0.95, left, right)
    dark, light = STATE_COLOURS[pt.WORK], STATE_COLOURS[pt.SPARE]

    def cell(x, y, text, colour, text_colour="#222222", height=0.8):
        add_cell(ax, mpl.Rectangle((x - 0.46, y - height / 2), 0.92, height,
                                   facecolor=colour, edgecolor="#ffffff", linewidth=1.5))
        ax.text(x, y, text, ha="center", va="center", fontsize=8.5, color=text_colour,
                linespacing=1.3)

    # Row 0: the fetch_adds in the order they happen; each block's line goes
    # to its own slot (row 3), so the lines cross when the order is not the
    # block order.
    for x, (b, ticket, is_last) in enumerate(draws):
        cell(x, 0, f"block {b}\nticket {ticket}", dark if is_last else light,
             "#ffffff" if is_last else "#222222", height=0.9)
        ax.plot([x, b], [0.45, 2.6], color=EDGE_COLOUR, linewidth=0.9, zorder=0)
    for b in range(grid):
        cell(b, 3, f"[{b}]", SKIPPED_COLOUR)
    # The last block's loop: in trip t, thread tid reads slot tid + t * BLOCK.
    for y, slot in enumerate(trips, start=4):
        trip = int(slot.split()[1])
        for tid in range(EXAMPLE_BLOCK):
            b = tid + trip * EXAMPLE_BLOCK
            if (slot, b) in reader:
                cell(b, y, f"tid {reader[(slot, b)]}", dark, "#ffffff")
            else:   # b >= gridDim.x: the bound check is false
                cell(b, y, f"tid {tid}: -", STATE_COLOURS[pt.OFF])
    ax.set_xlim(-0.5, columns - 0.5)
    ax.set_ylim(rows - 0.5, -0.6)
    labels = {0: "fetch_add, in time order", 3: "g_partials[blockIdx.x]"}
    labels.update({y: f"last block, {slot}" for y, slot in enumerate(trips, start=4)})
    ax.set_yticks(list(labels), list(labels.values()), fontsize=9)
    ax.set_xticks([])
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("time: the order in which thread 0 of each block reaches the "
                  "fetch_add  \u2192", fontsize=9)
    bare(ax)
    notes = [f"BLOCK = {EXAMPLE_BLOCK}, gridDim.x = {grid} (shrunk)",
             "ticket: the counter's value before",
             "   its fetch_add(1)",
             "s_last = (ticket == gridDim.x - 1): only",
             f"   block {last} goes on, the others return",
             "the finish order changes from run to",
             "   run; the slots, and the order the",
             "   last block reads them in, do not",
             "for (b = tid; b < gridDim.x; b += BLOCK)",
             "then block_reduce: the same tree",
             "   every run, so the same bits"]
    width, height = fig.get_figwidth(), fig.get_figheight()
    top = 1 - 1.35 / height
    for k, note in enumerate(notes):
        fig.text((width - right + 0.25) / width, top - k * 0.17 / height, note,
                 fontsize=8.5, va="top")
    handles = [mpl.Patch(facecolor=dark, label="the last block, and what it reads"),
               mpl.Patch(facecolor=light, label="returns after its ticket"),
               mpl.Patch(facecolor=SKIPPED_COLOUR, label="one slot per block"),
               mpl.Patch(facecolor=STATE_COLOURS[pt.OFF],
                         label="-: b >= gridDim.x, the lane idles")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, 0),
              ncol=len(handles), fontsize=8.5, frameon=False, borderaxespad=0.3)
    titles(fig, built, f"{built.step}: the ticket, and the last block's reads",
           "each block stores its partial sum in its own slot, then draws a ticket; "
           "the block that draws the last ticket adds every slot, in block order", left)
    save(mpl, fig, path)


DRAW = {"lanes": draw_lanes, "banks": draw_banks, "shuffle": draw_shuffle,
        "loads": draw_loads, "ticket": draw_ticket}


# ----------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------

# ----------------------------------------------------------------------------
# Part 2: which elements of a small matrix the first load instruction of each
# warp reads, for the row sum steps (rows/step0..4). The mappings are the
# kernels' index expressions with small sizes put in; a 32-byte sector holds
# 8 floats, and a load request costs one transaction per sector it touches.
# ----------------------------------------------------------------------------

ROW_WARP_COLOURS = ("#1f4e8c", "#f0b44c", "#5aa05a", "#b07cc6")
ROW_FIGURE = "loads"
ROW_ALT = ("{step}: which elements of a {rows} x {cols} matrix the first load instruction of "
           "warps 0 to 3 reads; warp 0 touches {sectors} sectors of 32 bytes")
SECTOR_FLOATS = 8


def row_first_loads(step, rows, cols):
    """{(row, col): warp} for the first load instruction of warps 0..3."""
    cells = {}
    for warp in range(4):
        for lane in range(32):
            t = warp * 32 + lane
            if step == "rows/step0_thread":          # thread t sums row t from column 0
                hits = [(t, 0)]
            elif step == "rows/step1_block":         # block r = row r; thread t reads column t
                hits = [(0, t)]
            elif step == "rows/step2_warp":          # warp w = row w; lane reads column lane
                hits = [(warp, lane)]
            elif step == "rows/step3_vector":        # warp w = row w; lane reads float4 lane
                hits = [(warp, 4 * lane + j) for j in range(4)]
            else:                                    # groups of G = 64: two warps per row
                g = 64
                row, i = t // g, t % g
                hits = [(row, 4 * i + j) for j in range(4)]
            for r, c in hits:
                if r < rows and c < cols:
                    cells[(r, c)] = warp
    return cells


ROW_PICTURES = {   # step -> (rows, cols, what the picture says)
    "rows/step0_thread": (32, 64, "one thread per row: a warp's 32 lanes read 32 rows, "
                                  "one sector each"),
    "rows/step1_block": (4, 160, "one block per row: a warp reads 32 consecutive floats of "
                                 "its row"),
    "rows/step2_warp": (4, 160, "one warp per row: the same coalesced read, and 8 rows per block"),
    "rows/step3_vector": (4, 160, "float4: each lane reads 16 bytes, a warp 512 contiguous "
                                  "bytes in one instruction"),
    "rows/step4_group": (2, 288, "few wide rows: a group of G = 64 threads (2 warps) per row"),
}


def row_sectors(cells, warp):
    return len({(r, c // SECTOR_FLOATS) for (r, c), w in cells.items() if w == warp})


def draw_row_loads(mpl, step, path):
    rows, cols, note = ROW_PICTURES[step]
    cells = row_first_loads(step, rows, cols)
    cell = min(0.16, 10.0 / cols)
    width = cols * cell + 1.4
    fig, ax = new_figure(mpl, width, rows, max(cell, 0.12 if rows > 8 else 0.22), 0.75, 0.45,
                         0.9, 0.5)
    for r in range(rows):
        for c in range(cols):
            warp = cells.get((r, c))
            add_cell(ax, mpl.Rectangle((c, rows - 1 - r), 1, 1,
                                       facecolor=ROW_WARP_COLOURS[warp] if warp is not None
                                       else "#ffffff", edgecolor="#d0d0d0", linewidth=0.3))
    for c in range(0, cols + 1, SECTOR_FLOATS):   # sector boundaries
        ax.axvline(c, color=EDGE_COLOUR, linewidth=0.5, alpha=0.5)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_yticks([rows - 0.5 - r for r in range(0, rows, max(1, rows // 4))],
                  [f"row {r}" for r in range(0, rows, max(1, rows // 4))], fontsize=8)
    ax.set_xticks([0, cols // 2, cols], ["col 0", f"{cols // 2}", f"{cols}"], fontsize=8)
    bare(ax)
    handles = [mpl.Patch(facecolor=ROW_WARP_COLOURS[w], label=f"warp {w}") for w in range(4)
               if any(v == w for v in cells.values())]
    ax.legend(handles=handles, loc="upper right", bbox_to_anchor=(1.0, 1.32), ncol=4,
              fontsize=8, frameon=False)
    fig.text(0.9 / width, 1 - 0.12 / fig.get_figheight(), f"{step}: the first load of warps 0-3",
             fontsize=11.5, fontweight="bold", va="top")
    fig.text(0.9 / width, 1 - 0.4 / fig.get_figheight(),
             f"{note}; warp 0 touches {row_sectors(cells, 0)} sectors of 32 bytes "
             "(vertical lines: sector boundaries)", fontsize=8.5, va="top", color="#333333")
    save(mpl, fig, path)


# rows/step10_aligned: how each row of an odd width is split where float4s can
# start. Row r begins r x cols floats into the matrix (itself on a 16-byte
# boundary), so with cols = 3 (mod 4) the four rows begin 0, 3, 2 and 1 floats
# past a boundary and need heads of 0, 1, 2 and 3 floats (split_row()).
ROW_SPLIT = {"rows/step10_aligned": (4, 43, 4)}   # step -> (rows, cols, floats per pack)
ROW_SPLIT_FIGURE = "split"
ROW_SPLIT_ALT = ("{step}: how each row of a {rows} x {cols} matrix is split: up to {most} floats "
                 "before its first 16-byte boundary and after its last whole float4, loaded one "
                 "by one, and float4s between them")
SPLIT_HEAD, SPLIT_TAIL = "#f0b44c", "#b07cc6"
SPLIT_BODY = ("#1f4e8c", "#6f9bd1")   # alternate packs, so each float4 shows


def row_split(rows, cols, pack):
    """[(head, packs, tail)] per row: split_row() of rows/step10_aligned."""
    out = []
    for r in range(rows):
        head = min((pack - r * cols % pack) % pack, cols)
        out.append((head, (cols - head) // pack, (cols - head) % pack))
    return out


def draw_row_split(mpl, step, path):
    rows, cols, pack = ROW_SPLIT[step]
    cell = 0.22
    width = cols * cell + 2.1
    fig, ax = new_figure(mpl, width, rows, 0.4, 1.05, 0.45, 1.75, 0.35)
    for r, (head, packs, tail) in enumerate(row_split(rows, cols, pack)):
        y = rows - 1 - r
        for c in range(cols):
            if c < head:
                colour = SPLIT_HEAD
            elif c < head + packs * pack:
                colour = SPLIT_BODY[(c - head) // pack % 2]
            else:
                colour = SPLIT_TAIL
            add_cell(ax, mpl.Rectangle((c, y), 1, 1, facecolor=colour, edgecolor="#ffffff",
                                       linewidth=0.6))
        for c in range(cols + 1):   # 16-byte boundaries of the flat array, in this row
            if (r * cols + c) % pack == 0:
                ax.plot([c, c], [y - 0.08, y + 1.08], color="#222222", linewidth=1.2)
    ax.set_xlim(-0.3, cols + 0.3)
    ax.set_ylim(-0.2, rows + 0.2)
    ax.set_yticks([rows - 0.5 - r for r in range(rows)],
                  [f"row {r}: head {h}, tail {t}"
                   for r, (h, _, t) in enumerate(row_split(rows, cols, pack))], fontsize=8)
    ax.set_xticks([0, cols], ["col 0", f"{cols}"], fontsize=8)
    bare(ax)
    handles = [mpl.Patch(facecolor=SPLIT_HEAD, label="head: one float per thread (0 to 2)"),
               mpl.Patch(facecolor=SPLIT_BODY[0], label="body: one float4 per lane"),
               mpl.Patch(facecolor=SPLIT_TAIL, label="tail: one float per thread (0 to 2)"),
               mpl.Line2D([], [], color="#222222", linewidth=1.2, label="16-byte boundary")]
    split_legend_and_titles(fig, ax, width, handles,
                            f"{step}: each row split where float4s can start",
                            f"{rows} rows of {cols} floats, one after another: each row starts "
                            "at another distance from a 16-byte boundary, so each has its own "
                            "head and tail")
    save(mpl, fig, path)


def split_legend_and_titles(fig, ax, width, handles, title, subtitle):
    """The legend in one row above the cells, then the title and subtitle: the
    layout of the part 2 split pictures (draw_row_split, draw_row_params)."""
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=len(handles),
              fontsize=8, frameon=False, borderaxespad=0.2)
    fig.text(0.3 / width, 1 - 0.12 / fig.get_figheight(), title, fontsize=11.5,
             fontweight="bold", va="top")
    fig.text(0.3 / width, 1 - 0.4 / fig.get_figheight(), subtitle, fontsize=8.5, va="top",
             color="#333333")


# rows/step13_layernorm_aligned (and its bfloat16 twin, step 14): gamma and beta
# are indexed by column, so where a row's head moves its body off x's 16-byte
# boundaries, the body's packs sit `head` elements past gamma's boundaries and
# are read in the widest pieces their addresses allow (load_pieces()).
ROW_PARAMS = {"rows/step13_layernorm_aligned": (4, 43, 4),   # step -> (rows, cols, pack)
              "rows/step14_bf16_layernorm_aligned": (4, 45, 8)}
ROW_PARAMS_FIGURE = "params"
ROW_PARAMS_ALT = ("{step}: for each row of a {rows} x {cols} matrix, its split in x and the "
                  "pieces in which its body reads gamma and beta, whose 16-byte boundaries fall "
                  "elsewhere in every row")
PIECE_COLOURS = ("#2a7a4b", "#8fcf9f")   # alternate pieces, so each load shows


def param_pieces(pos, pack):
    """Element counts of the loads that read one pack of gamma whose first
    element lies pos elements past a 16-byte boundary (pack elements to 16
    bytes): each the widest naturally aligned load, as load_pieces() does."""
    pieces, j = [], 0
    while j < pack:
        at = (pos + j) % pack
        n = next(w for w in (pack, pack // 2, pack // 4, pack // 8, 1)
                 if w >= 1 and at % w == 0 and j + w <= pack)
        pieces.append(n)
        j += n
    return pieces


def draw_row_params(mpl, step, path):
    rows, cols, pack = ROW_PARAMS[step]
    cell = 0.22
    width = cols * cell + 2.3
    fig, ax = new_figure(mpl, width, 2 * rows, 0.4, 1.05, 0.45, 1.95, 0.35)
    labels, ticks = [], []
    for r, (head, packs, tail) in enumerate(row_split(rows, cols, pack)):
        top = 2 * (rows - r) - 1   # x's strip; gamma's just below it
        for c in range(cols):
            colour = SPLIT_HEAD if c < head else SPLIT_TAIL if c >= head + packs * pack \
                else SPLIT_BODY[(c - head) // pack % 2]
            add_cell(ax, mpl.Rectangle((c, top), 1, 0.9, facecolor=colour, edgecolor="#ffffff",
                                       linewidth=0.6))
        # gamma: the head and tail columns one by one, the body in pieces.
        k = 0
        for i in range(packs):
            c = head + i * pack
            for n in param_pieces(head % pack, pack):
                add_cell(ax, mpl.Rectangle((c + 0.05, top - 1 + 0.05), n - 0.1, 0.8,
                                           facecolor=PIECE_COLOURS[k % 2], edgecolor="none"))
                c += n
                k += 1
        for c in list(range(head)) + list(range(head + packs * pack, cols)):
            add_cell(ax, mpl.Rectangle((c + 0.05, top - 1 + 0.05), 0.9, 0.8,
                                       facecolor=SPLIT_HEAD if c < head else SPLIT_TAIL,
                                       edgecolor="none"))
        for c in range(cols + 1):
            if (r * cols + c) % pack == 0:   # x's boundaries: the flat matrix's
                ax.plot([c, c], [top - 0.05, top + 0.95], color="#222222", linewidth=1.2)
            if c % pack == 0:                # gamma's: its own, column 0 on one
                ax.plot([c, c], [top - 1.05, top - 0.05], color="#222222", linewidth=1.2)
        loads = len(param_pieces(head % pack, pack))
        labels += [f"row {r}: x, head {head}", f"gamma: {loads} load{'s' if loads > 1 else ''} a pack"]
        ticks += [top + 0.45, top - 0.55]
    ax.set_xlim(-0.3, cols + 0.3)
    ax.set_ylim(-0.2, 2 * rows + 0.2)
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.set_xticks([0, cols], ["col 0", f"{cols}"], fontsize=8)
    bare(ax)
    unit = "float" if pack == 4 else "bfloat16"
    handles = [mpl.Patch(facecolor=SPLIT_HEAD, label="head"),
               mpl.Patch(facecolor=SPLIT_BODY[0], label="x: one 16-byte pack per lane"),
               mpl.Patch(facecolor=PIECE_COLOURS[0], label="gamma: one load per piece"),
               mpl.Patch(facecolor=SPLIT_TAIL, label="tail"),
               mpl.Line2D([], [], color="#222222", linewidth=1.2, label="16-byte boundary")]
    split_legend_and_titles(fig, ax, width, handles,
                            f"{step}: x's packs on x's boundaries, gamma's in pieces",
                            f"{rows} rows of {cols} {unit}s: gamma is indexed by column and "
                            "starts on a boundary, so a row's head puts its body's packs that "
                            "far past gamma's boundaries")
    save(mpl, fig, path)


# rows/step15_cluster: where each pack of one wide row lives when its group of
# G = blocks x threads spans a cluster. Pack i of the body belongs to thread
# t = i mod G (pack t + k G into slot k), which is thread t mod B of block
# t / B; while i < SLOTS x G it sits in slot i / G of that thread's
# registers, past that in its block's shared memory (at (i / G) B + t mod B).
# Each block reduces its packs to one pair, and the pairs meet once, through
# distributed shared memory.
# rows/step17_layernorm_cluster places its packs the same way; its blocks
# exchange twice: their sums (the mean), then their squares around it.
ROW_CLUSTER = {"rows/step15_cluster": (4, 4, 2, 40),   # step -> (blocks, threads each, slots, packs)
               "rows/step17_layernorm_cluster": (4, 4, 2, 40)}
ROW_CLUSTER_FIGURE = "cluster"
ROW_CLUSTER_ALT = ("{step}: which of a cluster's {blocks} blocks holds each float4 of one row "
                   "({packs} float4s, {slots} in each thread's registers, the rest in shared "
                   "memory), and the one exchange of the blocks' (max, sum) pairs")
ROW_CLUSTER_LN_ALT = ("{step}: which of a cluster's {blocks} blocks holds each float4 of one row "
                      "({packs} float4s, {slots} in each thread's registers, the rest in shared "
                      "memory), and the two exchanges of the blocks' sums: the mean, then the "
                      "variance")
# What each block hands the others, what the exchange gives every block, and
# the picture's alt text.
ROW_CLUSTER_EXCHANGE = {
    "rows/step15_cluster": ("(max, sum)\nof its packs", "cluster.sync(), then in every block lane r "
                            "reads block r's pair: the row's max and sum, the same in each",
                            ROW_CLUSTER_ALT),
    "rows/step17_layernorm_cluster": ("sum, then squares\naround the mean",
                                      "cluster.sync() twice: lane r reads block r's sum (the "
                                      "row's mean), then its squares around it (the variance)",
                                      ROW_CLUSTER_LN_ALT),
}


def cluster_owner(i, blocks, threads, slots):
    """(block, place) of pack i of a row: place is "registers" or "shared"."""
    g = blocks * threads
    return i % g // threads, "registers" if i < slots * g else "shared"


def draw_row_cluster(mpl, step, path):
    blocks, threads, slots, packs = ROW_CLUSTER[step]
    handed, exchange, _ = ROW_CLUSTER_EXCHANGE[step]
    g = blocks * threads
    width = packs * 0.3 + 1.2
    fig, ax = new_figure(mpl, width, 5, 0.42, 1.1, 0.2, 0.6, 0.6)
    top = 4.0   # the row, at y = top .. top + 1
    for i in range(packs):
        block, place = cluster_owner(i, blocks, threads, slots)
        add_cell(ax, mpl.Rectangle((i, top), 1, 1, facecolor=ROW_WARP_COLOURS[block],
                                   edgecolor="#ffffff", linewidth=0.8,
                                   hatch="////" if place == "shared" else None))
    for k in range(packs // g + 1):   # slot k holds packs k G .. (k + 1) G - 1
        ax.plot([k * g, k * g], [top - 0.15, top + 1.15], color="#222222", linewidth=1.2)
        if k * g < packs:
            label = f"slot {k} (registers)" if k < slots else "rest (shared memory)"
            ax.text(k * g + min(g, packs - k * g) / 2, top - 0.3, label, ha="center",
                    va="top", fontsize=8)
    box = packs / blocks
    for b in range(blocks):   # each block's pair, and the exchange below
        x0 = b * box + box * 0.1
        add_cell(ax, mpl.Rectangle((x0, 1.6), box * 0.8, 1.0, facecolor=ROW_WARP_COLOURS[b],
                                   edgecolor="#222222", linewidth=0.8))
        ax.text(x0 + box * 0.4, 2.1, f"block {b}: {handed}", ha="center",
                va="center", fontsize=8, color="#ffffff" if b == 0 else "#111111")
        ax.annotate("", xy=(x0 + box * 0.4, 0.75), xytext=(x0 + box * 0.4, 1.6),
                    arrowprops=dict(arrowstyle="->", color="#222222", linewidth=1.2))
    add_cell(ax, mpl.Rectangle((0, 0.05), packs, 0.7, facecolor="#ffffff", edgecolor="#222222",
                               linewidth=0.8))
    ax.text(packs / 2, 0.4, exchange, ha="center", va="center", fontsize=8.5)
    ax.set_xlim(-0.3, packs + 0.3)
    ax.set_ylim(0, 5.2)
    ax.set_xticks([])
    ax.set_yticks([])
    bare(ax)
    handles = [mpl.Patch(facecolor=ROW_WARP_COLOURS[b], label=f"block {b}") for b in range(blocks)]
    handles.append(mpl.Patch(facecolor="#ffffff", edgecolor="#555555", hatch="////",
                             label="in the block's shared memory"))
    split_legend_and_titles(fig, ax, width, handles,
                            f"{step}: one row over a cluster of {blocks} blocks",
                            f"G = {blocks} x {threads} threads; float4 i goes to thread i mod G, "
                            f"slot i / G; past {slots} slots, to its block's shared memory")
    save(mpl, fig, path)


# rows/step26_bf16_push (step 23's bulk kernel, its pairs pushed): a row
# wider than one block's share, over a cluster of `blocks` blocks.
# split_row() cuts the row where 16-byte packs of 8
# bfloat16s can start (head, packs, tail); block r takes packs [r share,
# (r + 1) share) of the body (share = packs at most / blocks, rounded up:
# launch_bulk()), block 0 also the head and the last block the tail. Lane l
# of warp 0 copies chunk l, l + 32, ... of its block's share into shared
# memory (CHUNK bytes each); warp w of block r pushes its (max, sum) into
# slot r x WARPS_PER_BLOCK + w of every block. Shrunk: 4 blocks, 2 warps a
# block, one pack a chunk.
ROW_BULK_STEP = "rows/step26_bf16_push"
ROW_BULK = (4, 2, 5, 70)   # blocks, warps a block, elements from the row to a 16-byte boundary, cols
ROW_BULK_PACK = 8          # bfloat16s in 16 bytes
ROW_BULK_FIGURE = "bulk"
ROW_BULK_ALT = ("{step}: which of a cluster's {blocks} blocks takes each bfloat16 of one row "
                "({cols} of them, shrunk: a head and a tail read by threads, the body's 16-byte packs "
                "copied into shared memory by cp.async.bulk, a share per block), and where "
                "each warp's (max, sum) lands in every block")


def bulk_split(cols, start, pack=ROW_BULK_PACK):
    """(head, packs, tail) of a row that starts `start` elements past a
    16-byte boundary: split_row()."""
    head = min((pack - start % pack) % pack, cols)
    return head, (cols - head) // pack, (cols - head) % pack


def bulk_share(cols, blocks, pack=ROW_BULK_PACK):
    """Packs a block of a row over `blocks` blocks: the packs a row of `cols`
    elements holds at most, over the blocks, rounded up (step 23's
    launch_bulk(); part 3's step 14 as share_bytes() / 32)."""
    return -(-(cols // pack) // blocks)


def bulk_owner(e, cols, start, blocks, pack=ROW_BULK_PACK):
    """(block, "head", "body" or "tail") of element e of a row."""
    head, packs, tail = bulk_split(cols, start, pack)
    share = bulk_share(cols, blocks, pack)
    if e < head:
        return 0, "head"
    if e >= cols - tail:
        return blocks - 1, "tail"
    return (e - head) // pack // share, "body"


def bulk_elements(cols, start, blocks, pack=ROW_BULK_PACK):
    """{element: [(block, where)]} by the kernel's own expressions (step 23's
    and part 3's step 14's, the same): each block's packs [first, first + its
    packs), its head and tail threads."""
    head, body, tail = bulk_split(cols, start, pack)
    share = bulk_share(cols, blocks, pack)
    found = {}
    for rank in range(blocks):
        first = min(rank * share, body)
        packs = min(first + share, body) - first
        for i in range(packs * pack):
            found.setdefault(head + first * pack + i, []).append((rank, "body"))
        for t in range(pack):
            if rank == 0 and t < head:
                found.setdefault(t, []).append((rank, "head"))
            if rank == blocks - 1 and t < tail:
                found.setdefault(cols - tail + t, []).append((rank, "tail"))
    return found


def push_slot(rank, warp, warps):
    """The slot of every block that warp `warp` of block `rank` pushes into:
    its (max, sum) pair in step 23, its sum of dy * y in part 3's step 14."""
    return rank * warps + warp


def bulk_pushes(blocks, warps, lanes=32):
    """{block: [(slot, from block, from warp)]} by the kernels' push loop
    written out: lane r of every warp of every block, r < blocks, stores the
    warp's value into block r, at push_slot()."""
    found = {}
    for rank in range(blocks):
        for warp in range(warps):
            for lane in range(lanes):
                if lane < blocks:
                    found.setdefault(lane, []).append((push_slot(rank, warp, warps), rank, warp))
    return found


def draw_row_bulk(mpl, path):
    blocks, warps, start, cols = ROW_BULK
    pack = ROW_BULK_PACK
    head, body, tail = bulk_split(cols, start)
    share = bulk_share(cols, blocks)
    cell = 0.22
    width = cols * cell + 1.2
    fig, ax = new_figure(mpl, width, 8, 0.42, 1.1, 0.2, 0.6, 0.6)
    top = 7.0   # the row, at y = top .. top + 1
    for e in range(cols):
        block, where = bulk_owner(e, cols, start, blocks)
        add_cell(ax, mpl.Rectangle((e, top), 1, 1, facecolor=ROW_WARP_COLOURS[block],
                                   edgecolor="#ffffff", linewidth=0.6,
                                   hatch="////" if where != "body" else None))
    for k in range(body + 1):   # the packs' 16-byte boundaries
        x = head + k * pack
        ax.plot([x, x], [top - 0.08, top + 1.08], color="#222222", linewidth=1.0)
    for b in range(blocks):
        first = min(b * share, body)
        packs = min(first + share, body) - first
        x0, x1 = head + first * pack, head + (first + packs) * pack
        ax.text((x0 + x1) / 2, top - 0.25, f"block {b}'s share", ha="center", va="top",
                fontsize=8)
        # Its copy in the block's shared memory, one chunk a pack (shrunk).
        add_cell(ax, mpl.Rectangle((x0 + 0.4, 4.4), x1 - x0 - 0.8, 1.0,
                                   facecolor=ROW_WARP_COLOURS[b], edgecolor="#222222",
                                   linewidth=0.8))
        for k in range(1, packs):
            ax.plot([x0 + k * pack, x0 + k * pack], [4.4, 5.4], color="#222222", linewidth=0.8)
        ax.annotate("", xy=((x0 + x1) / 2, 5.4), xytext=((x0 + x1) / 2, top - 0.7),
                    arrowprops=dict(arrowstyle="->", color="#222222", linewidth=1.2))
        # Its slots: warp w of block r lands in slot r x warps + w of every block.
        for r in range(blocks):
            for w in range(warps):
                slot = push_slot(r, w, warps)
                sx = x0 + (x1 - x0 - blocks * warps * 1.6) / 2 + slot * 1.6
                add_cell(ax, mpl.Rectangle((sx, 2.3), 1.5, 0.9, facecolor=ROW_WARP_COLOURS[r],
                                           edgecolor="#222222", linewidth=0.6))
                ax.text(sx + 0.75, 2.75, f"{r}.{w}", ha="center", va="center", fontsize=6.5,
                        color="#ffffff" if r == 0 else "#111111")
    clear = dict(facecolor="#ffffff", edgecolor="none", pad=1.5)
    ax.text(cols / 2, 6.1, "cp.async.bulk: warp 0's lanes copy the share in chunks (16 KB, "
            "shrunk to one pack), counted in bytes on one mbarrier", ha="center", va="center",
            fontsize=8.5, bbox=clear)
    ax.text(cols / 2, 3.75, "st.async: warp w of block r writes its (max, sum) into slot r.w of "
            "every block, counted on a second mbarrier: no cluster barrier to meet", ha="center",
            va="center", fontsize=8.5, bbox=clear)
    add_cell(ax, mpl.Rectangle((0, 0.15), cols, 1.2, facecolor="#ffffff", edgecolor="#222222",
                               linewidth=0.8))
    ax.text(cols / 2, 0.75, "each block combines its slots in one fixed order (the same bits in "
            "every block),\nwrites y over x in shared memory, and sends it out by cp.async.bulk",
            ha="center", va="center", fontsize=8.5)
    ax.set_xlim(-0.3, cols + 0.3)
    ax.set_ylim(0, 8.2)
    ax.set_xticks([])
    ax.set_yticks([])
    bare(ax)
    handles = [mpl.Patch(facecolor=ROW_WARP_COLOURS[b], label=f"block {b}") for b in range(blocks)]
    handles.append(mpl.Patch(facecolor="#ffffff", edgecolor="#555555", hatch="////",
                             label="head and tail: read by threads"))
    split_legend_and_titles(fig, ax, width, handles,
                            f"{ROW_BULK_STEP}: one row over a cluster of {blocks} blocks, "
                            "by bulk copies",
                            f"a row of {cols} bfloat16s starting {start} elements past a 16-byte "
                            f"boundary: head {head}, "
                            f"{body} packs of 8, tail {tail}; {share} packs a share; "
                            f"{warps} warps a block (shrunk from 8)")
    return fig


ROW_NO_PICTURE = ("No access-pattern picture for {step}: it reads its rows as {base} does, "
                  "whose page has the picture.")
# Steps whose bulk copies split a row as ROW_BULK_STEP's picture draws, without its
# pushed pairs (step 23: its pairs meet at a cluster barrier instead).
ROW_BULK_SHARES = {"rows/step23_bf16_bulk"}
ROW_BULK_ELSEWHERE = ("No picture of its own for {step}: {base}'s page draws how its bulk copies "
                      "split a row; the pairs' arrows there are {base}'s own idea.")


def row_picture_base(step):
    """The step whose picture shows how step reads its rows: the nearest one
    with a picture on its chain of diff bases (tools/steps.py: step 22 reads
    as step 13 does, step 16 as step 15, step 12 as step 4)."""
    import steps   # the step list (tools/steps.py)
    has = set(ROW_PICTURES) | set(ROW_SPLIT) | set(ROW_CLUSTER) | set(ROW_PARAMS) | {ROW_BULK_STEP}
    seen = set()
    while step and step not in has and step not in seen:
        seen.add(step)
        step = steps.diff_base(steps.REPO, step, source=True)
    return step if step in has else None


def row_figures_block(step, readme_dir, out_dir, translate=english):
    """The figures block of a part 2 step's README: its picture, or a line saying it has none."""
    if step in ROW_SPLIT:
        rows, cols, pack = ROW_SPLIT[step]
        link = os.path.relpath(row_figure_path(step, out_dir), readme_dir).replace(os.sep, "/")
        alt = translate(ROW_SPLIT_ALT, step=step, rows=rows, cols=cols, most=pack - 1)
        return f"![{alt}]({link})"
    if step in ROW_CLUSTER:
        blocks, _, slots, packs = ROW_CLUSTER[step]
        link = os.path.relpath(row_figure_path(step, out_dir), readme_dir).replace(os.sep, "/")
        alt = translate(ROW_CLUSTER_EXCHANGE[step][2], step=step, blocks=blocks, packs=packs,
                        slots=slots)
        return f"![{alt}]({link})"
    if step == ROW_BULK_STEP:
        blocks, _, _, cols = ROW_BULK
        alt = translate(ROW_BULK_ALT, step=step, blocks=blocks, cols=cols)
        name = os.path.basename(row_figure_path(step, out_dir))
        if alt != english(ROW_BULK_ALT, step=step, blocks=blocks, cols=cols):   # the Chinese page
            name = name.replace(".png", ".zh-CN.png")
        link = os.path.relpath(os.path.join(out_dir, name), readme_dir).replace(os.sep, "/")
        return f"![{alt}]({link})"
    if step in ROW_PARAMS:
        rows, cols, _ = ROW_PARAMS[step]
        link = os.path.relpath(row_figure_path(step, out_dir), readme_dir).replace(os.sep, "/")
        alt = translate(ROW_PARAMS_ALT, step=step, rows=rows, cols=cols)
        return f"![{alt}]({link})"
    if step in ROW_BULK_SHARES:
        return translate(ROW_BULK_ELSEWHERE, step=step, base=ROW_BULK_STEP.split("/")[-1])
    if step not in ROW_PICTURES:
        base = row_picture_base(step)
        return translate(ROW_NO_PICTURE, step=step, base=base.split("/")[-1] if base else "—")
    rows, cols, _ = ROW_PICTURES[step]
    cells = row_first_loads(step, rows, cols)
    name = f"{step.replace('/', '-')}-{ROW_FIGURE}.png"
    link = os.path.relpath(os.path.join(out_dir, name), readme_dir).replace(os.sep, "/")
    alt = translate(ROW_ALT, step=step, rows=rows, cols=cols, sectors=row_sectors(cells, 0))
    return f"![{alt}]({link})"


def row_figure_path(step, out_dir):
    kind = ROW_SPLIT_FIGURE if step in ROW_SPLIT else \
        ROW_BULK_FIGURE if step == ROW_BULK_STEP else \
        ROW_PARAMS_FIGURE if step in ROW_PARAMS else \
        ROW_CLUSTER_FIGURE if step in ROW_CLUSTER else ROW_FIGURE
    return os.path.join(out_dir, f"{step.replace('/', '-')}-{kind}.png")


# ----------------------------------------------------------------------------
# Part 3: the column reduction of LayerNorm's backward pass (back/). dgamma
# and dbeta are sums down the columns of a rows x cols matrix. The picture
# puts step 0's pattern (a thread per row, atomics into every column) beside
# step 2's (a warp along a row, slices of rows per block, a partial row per
# block, then sums down the partial rows). Every cell comes from the index
# functions below, each the kernel's expressions with small sizes put in.
# ----------------------------------------------------------------------------

BACK_STEP0, BACK_STEP2 = "back/step0_thread", "back/step2_partials"
BACK_FIGURE = os.path.join(FIGURES_DIR, "back-columns.png")
BACK_WARP = 32
BACK_BLOCK = 256                        # BLOCK_SIZE of both sources
BACK_CHUNK = BACK_BLOCK // BACK_WARP    # step 2's ROWS_PER_CHUNK (and WARPS)
BACK_ROWS, BACK_COLS = 32, 32           # the picture's matrix
BACK_MAX_BLOCKS = 3   # grid_blocks()' blocks of one wave, shrunk from 528 on an H200
BACK_INSTANT = 0      # step 0: the loop trip whose loads the picture marks
# One colour per block of step 2: part 2's warp colours but the first, the
# dark blue that marks one load instruction here.
BACK_BLOCK_COLOURS = ROW_WARP_COLOURS[1:]
BACK_ALT = ("LayerNorm backward, dgamma and dbeta as sums down the columns of a {rows} x {cols} "
            "matrix: step 0's warp loads one column of 32 rows and every row adds into every "
            "column by atomicAdd; step 2's warp loads 32 neighbouring columns of one row, each "
            "block sums a slice of rows into its partial row, and a second kernel sums the "
            "{blocks} partial rows down each column in a fixed order")


def back_step0_reads(rows, cols, block=BACK_BLOCK):
    """back/step0_thread, loop 2: [(trip c, block, thread, row, col)], one per
    load of dy (and atomicAdd into column col). row = blockIdx.x * blockDim.x
    + threadIdx.x; a thread past the last row returns."""
    out = []
    for b in range((rows + block - 1) // block):
        for tid in range(block):
            row = b * block + tid
            if row >= rows:
                continue
            for c in range(cols):
                out.append((c, b, tid, row, c))
    return out


def back_grid(rows, max_blocks=BACK_MAX_BLOCKS):
    """grid_blocks() of back/step2_partials: a block per chunk of rows, at most one wave."""
    return min((rows + BACK_CHUNK - 1) // BACK_CHUNK, max_blocks)


def back_slice(b, rows, grid):
    """Rows [first, last) of block b: first = blockIdx.x * rows / gridDim.x."""
    return b * rows // grid, (b + 1) * rows // grid


def back_step2_reads(rows, cols, grid, block=BACK_BLOCK):
    """back/step2_partials, loop 2: [(block, chunk, k, thread, row, col)] in
    each thread's order: for each chunk of its slice, thread tid takes columns
    tid, tid + BLOCK_SIZE, ... and, for each, rows chunk + k, k = 0, 1, ..."""
    out = []
    for b in range(grid):
        first, last = back_slice(b, rows, grid)
        for chunk in range(first, last, BACK_CHUNK):
            chunk_rows = min(BACK_CHUNK, last - chunk)
            for tid in range(block):
                for c in range(tid, cols, block):
                    for k in range(BACK_CHUNK):
                        if k < chunk_rows:
                            out.append((b, chunk, k, tid, chunk + k, c))
    return out


def back_partial_sums(blocks, cols, block=BACK_BLOCK):
    """back/step2_partials, column_sums_kernel: {col: [[partial rows of warp
    0], [of warp 1], ...]}: warp w adds partial rows w, w + WARPS, ... in that
    order (column c = tile * 32 + lane), then warp 0 adds the warps' sums in
    warp order."""
    warps = block // BACK_WARP
    order = {}
    for tile in range((cols + BACK_WARP - 1) // BACK_WARP):
        for lane in range(BACK_WARP):
            c = tile * BACK_WARP + lane
            if c >= cols:
                continue
            order[c] = [list(range(w, blocks, warps)) for w in range(warps)]
    return order


def draw_back_columns(mpl, path):
    rows, cols = BACK_ROWS, BACK_COLS
    grid = back_grid(rows)
    step0 = back_step0_reads(rows, cols)
    step2 = back_step2_reads(rows, cols, grid)
    sums = back_partial_sums(grid, cols)
    cell = 0.14
    gap = 1.6
    height = rows + gap + 1 + gap + grid + 1.2 + 1   # matrix, partial rows, dgamma
    panel, left, middle = cols * cell, 1.75, 2.1
    width = left + panel + middle + panel + 0.4
    top, bottom = 1.0, 0.75
    fig = mpl.plt.figure(figsize=(width, top + height * cell + bottom), dpi=DPI)
    fig_h = fig.get_figheight()
    axes = []
    for x0 in (left, left + panel + middle):
        ax = fig.add_axes((x0 / width, bottom / fig_h, panel / width, height * cell / fig_h))
        ax.set_xlim(0, cols)
        ax.set_ylim(height, 0)
        ax.set_xticks([])
        ax.set_yticks([])
        bare(ax)
        axes.append(ax)
    dark, light = STATE_COLOURS[pt.WORK], STATE_COLOURS[pt.SPARE]

    def box(ax, c, y, colour, h=1.0):
        add_cell(ax, mpl.Rectangle((c, y), 1, h, facecolor=colour, edgecolor="#ffffff",
                                   linewidth=0.4))

    def label(ax, y, text, **kw):
        ax.text(-0.6, y, text, ha="right", va="center", fontsize=8, **kw)

    # (a) step 0: warp 0 at trip BACK_INSTANT loads column BACK_INSTANT of
    # rows 0-31; every (row, col) atomically adds into column col.
    ax = axes[0]
    now = {(row, col) for c, b, tid, row, col in step0
           if c == BACK_INSTANT and b * BACK_BLOCK + tid < BACK_WARP}
    atomics = {}
    for _, _, _, row, col in step0:
        box(ax, col, row, dark if (row, col) in now else light)
        atomics[col] = atomics.get(col, 0) + 1
    y = rows + gap
    for col in range(cols):
        box(ax, col, y, STATE_COLOURS[pt.OFF])
        ax.text(col + 0.5, y + 0.5, str(atomics.get(col, 0)), ha="center", va="center",
                fontsize=5.5)
    label(ax, rows / 2, f"rows 0-{rows - 1}:\nthread = row")
    label(ax, y + 0.5, "dgamma[c]")
    ax.annotate("", xy=(1.5, y - 0.1), xytext=(1.5, rows + 0.1),
                arrowprops=dict(arrowstyle="->", color="#222222", linewidth=1.0))
    ax.text(2.2, rows + gap / 2, "atomicAdd from every row, in no fixed order",
            va="center", fontsize=7.5)
    ax.set_title(f"{BACK_STEP0}: a thread per row", fontsize=10, loc="left")
    # (b) step 2: colour by block; the outlined row is warp 0's first load
    # in loop 2 (threads 0-31, k = 0 of block 0's first chunk).
    ax = axes[1]
    for b, chunk, k, tid, row, col in step2:
        box(ax, col, row, BACK_BLOCK_COLOURS[b])
    first_load = [(row, col) for b, chunk, k, tid, row, col in step2
                  if b == 0 and chunk == back_slice(0, rows, grid)[0] and k == 0
                  and tid < BACK_WARP]
    r0 = first_load[0][0]
    c_lo, c_hi = min(c for _, c in first_load), max(c for _, c in first_load)
    add_cell(ax, mpl.Rectangle((c_lo, r0), c_hi - c_lo + 1, 1, fill=False,
                               edgecolor="#d9534f", linewidth=1.8))
    for b in range(grid):
        first, last = back_slice(b, rows, grid)
        label(ax, (first + last) / 2, f"block {b}: rows {first}-{last - 1}")
        for chunk in range(first + BACK_CHUNK, last, BACK_CHUNK):   # chunk boundaries
            ax.plot([0, cols], [chunk, chunk], color="#ffffff", linewidth=1.6)
        ax.plot([0, cols], [first, first], color="#222222", linewidth=1.0)
    y = rows + gap
    for b in range(grid):
        for col in range(cols):
            box(ax, col, y + b, BACK_BLOCK_COLOURS[b])
        label(ax, y + b + 0.5, f"partial row {b}")
    ax.annotate("", xy=(1.5, y - 0.1), xytext=(1.5, rows + 0.1),
                arrowprops=dict(arrowstyle="->", color="#222222", linewidth=1.0))
    ax.text(2.2, rows + gap / 2, "each block sums its rows down each column, in row order",
            va="center", fontsize=7.5)
    y2 = y + grid + 1.2
    for col in range(cols):
        box(ax, col, y2, STATE_COLOURS[pt.OFF])
    order = [b for warp in sums[0] for b in warp]
    label(ax, y2 + 0.5, "dgamma[c]")
    ax.text(0, y2 + 1.25, "kernel 2 adds partial rows " + ", ".join(str(b) for b in order)
            + " in this order, in every column", va="top", fontsize=7.5)
    ax.set_title(f"{BACK_STEP2}: a warp along a row, a partial row per block",
                 fontsize=10, loc="left")
    handles = [mpl.Patch(facecolor=dark, label="one load instruction of warp 0: "
                         "32 rows, 32 sectors"),
               mpl.Patch(facecolor=light, label="step 0: read by its row's thread, one column "
                         "per trip"),
               mpl.Patch(facecolor="#ffffff", edgecolor="#d9534f", linewidth=1.8,
                         label="one load instruction of warp 0: 32 neighbouring columns, "
                               "one 128-byte line")]
    handles += [mpl.Patch(facecolor=BACK_BLOCK_COLOURS[b], label=f"block {b}")
                for b in range(grid)]
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(left / width, 0.02),
               ncol=3, fontsize=7.5, frameon=False)
    fig.text(left / width, 1 - 0.12 / fig_h,
             "LayerNorm backward: dgamma and dbeta are sums down the columns",
             fontsize=12, fontweight="bold", va="top")
    fig.text(left / width, 1 - 0.42 / fig_h,
             f"{rows} x {cols} floats (shrunk); BLOCK_SIZE = {BACK_BLOCK}, gridDim.x = {grid} "
             f"(one wave, shrunk); cells from the kernels' index expressions, no GPU",
             fontsize=8.5, va="top", color="#333333")
    return fig


def draw_back(mpl, out_dir):
    """back-columns.png and its Chinese twin (draw_localized)."""
    path = os.path.join(out_dir, os.path.basename(BACK_FIGURE))
    draw_localized(mpl, path, draw_back_columns(mpl, path))


# ----------------------------------------------------------------------------
# Part 3's step 13 (back/step13_cluster): one wide row of softmax's backward
# pass over a thread-block cluster. Block k of the row's cluster holds its
# k-th share of PER x B floats: thread t of it the floats first + j B, with
# first = k PER B + t (its kernel's `first`). Past what the cluster holds,
# C PER B floats, the rest is summed and read again: float rest + j C B of
# thread t of block k, rest = (C PER + k) B + t (its `rest` and `stride`).
# Each block sums its share of dy * y; the sums meet once, through
# distributed shared memory, and every block writes its share's dx.
# ----------------------------------------------------------------------------

BACK_CLUSTER_STEP = "back/step13_cluster"
BACK_CLUSTER = (4, 4, 2, 40)   # blocks, threads a block, floats a thread holds, row width
BACK_CLUSTER_FIGURE = os.path.join(FIGURES_DIR, "back-step13_cluster-cluster.png")
BACK_CLUSTER_ALT = ("{step}: which of a cluster's {blocks} blocks holds each float of one row "
                    "({cols} floats, {per} in each thread's registers, the rest read twice), "
                    "the one exchange of the blocks' sums of dy * y, and dx written by each "
                    "block over its share")


def back_cluster_owner(c, blocks, threads, per):
    """(block, thread, "registers" or "rest") of float c of a row in step 13."""
    held = blocks * per * threads
    if c < held:
        return c // (per * threads), c % threads, "registers"
    return (c - held) // threads % blocks, (c - held) % threads, "rest"


def back_cluster_floats(blocks, threads, per, cols):
    """{float c: (block, thread, where)} by step 13's loops themselves: each
    thread's registers (k < PER_THREAD, first + k B below cols), then its
    rest (from rest, every stride)."""
    found = {}
    for rank in range(blocks):
        for t in range(threads):
            first = rank * per * threads + t
            for k in range(per):
                if first + k * threads < cols:
                    found.setdefault(first + k * threads, []).append((rank, t, "registers"))
            c = (blocks * per + rank) * threads + t
            while c < cols:
                found.setdefault(c, []).append((rank, t, "rest"))
                c += blocks * threads
    return found


def draw_back_cluster(mpl, path):
    blocks, threads, per, cols = BACK_CLUSTER
    share = per * threads
    width = cols * 0.3 + 1.2
    fig, ax = new_figure(mpl, width, 6, 0.42, 1.1, 0.2, 0.6, 0.6)
    top = 5.0   # the row, at y = top .. top + 1
    for c in range(cols):
        block, _, where = back_cluster_owner(c, blocks, threads, per)
        add_cell(ax, mpl.Rectangle((c, top), 1, 1, facecolor=ROW_WARP_COLOURS[block],
                                   edgecolor="#ffffff", linewidth=0.8,
                                   hatch="////" if where == "rest" else None))
    for b in range(blocks + 1):   # each block's share, then the rest
        x = min(b * share, cols)
        ax.plot([x, x], [top - 0.15, top + 1.15], color="#222222", linewidth=1.2)
        if b < blocks:
            ax.text(x + share / 2, top - 0.3, f"block {b}'s share", ha="center", va="top",
                    fontsize=8)
    if cols > blocks * share:
        ax.text((blocks * share + cols) / 2, top - 0.3, "rest: read twice", ha="center",
                va="top", fontsize=8)
    for b in range(blocks):   # each block's sum, the exchange, and its dx
        x0 = b * share + share * 0.1
        add_cell(ax, mpl.Rectangle((x0, 2.6), share * 0.8, 1.0, facecolor=ROW_WARP_COLOURS[b],
                                   edgecolor="#222222", linewidth=0.8))
        ax.text(x0 + share * 0.4, 3.1, f"block {b}: sum of dy * y\nover its floats", ha="center",
                va="center", fontsize=8, color="#ffffff" if b == 0 else "#111111")
        ax.annotate("", xy=(x0 + share * 0.4, 1.95), xytext=(x0 + share * 0.4, 2.6),
                    arrowprops=dict(arrowstyle="->", color="#222222", linewidth=1.2))
    add_cell(ax, mpl.Rectangle((0, 1.25), blocks * share, 0.7, facecolor="#ffffff",
                               edgecolor="#222222", linewidth=0.8))
    ax.text(blocks * share / 2, 1.6, "cluster.sync(), then lane k of every warp reads block k's "
            "sum: s, the same bits in every block", ha="center", va="center", fontsize=8.5)
    add_cell(ax, mpl.Rectangle((0, 0.1), cols, 0.7, facecolor="#ffffff", edgecolor="#222222",
                               linewidth=0.8))
    ax.text(cols / 2, 0.45, "each block writes dx = y * (dy - s) over its floats; a block leaves "
            "only when no other can still read its sum", ha="center", va="center", fontsize=8.5)
    ax.set_xlim(-0.3, cols + 0.3)
    ax.set_ylim(0, 6.2)
    ax.set_xticks([])
    ax.set_yticks([])
    bare(ax)
    handles = [mpl.Patch(facecolor=ROW_WARP_COLOURS[b], label=f"block {b}") for b in range(blocks)]
    handles.append(mpl.Patch(facecolor="#ffffff", edgecolor="#555555", hatch="////",
                             label="summed, then read again for dx"))
    split_legend_and_titles(fig, ax, width, handles,
                            f"{BACK_CLUSTER_STEP}: one row of softmax's backward pass over a "
                            f"cluster of {blocks} blocks",
                            f"{cols} floats, B = {threads} threads a block, {per} floats of y and "
                            f"of dy a thread (shrunk from 256 and 16): block k holds floats "
                            f"{share}k to {share}k + {share - 1}, thread t every {threads}th "
                            f"from {share}k + t")
    return fig


# ----------------------------------------------------------------------------
# Part 3's step 14 (back/step14_bulk): one wide row of softmax's backward pass
# over a cluster of blocks of 256 threads, by bulk copies. The row is split
# as part 2's step 23 splits its rows, with 16-byte packs of 4 floats:
# bulk_split() (head floats before y_row's first 16-byte boundary, the body's
# packs, the tail after them), bulk_owner() and bulk_elements() (block r
# takes packs [r share, (r + 1) share) of the body, block 0 also the head,
# the last block the tail), with share = share_bytes(cols, c) / 32 packs =
# bulk_share(). Warp 0 copies each block's shares of y and dy into its
# shared memory (s_share: y's share, then dy's, `share` packs each); lane r
# of every warp stores the warp's sum of dy * y into block r's slot
# push_slot() = rank x BULK_WARPS + warp; dx is written over dy's share and
# goes out by bulk copies. Shrunk: 4 blocks of 2 warps, one pack a chunk.
# ----------------------------------------------------------------------------

BACK_BULK_STEP = "back/step14_bulk"
BACK_BULK = (4, 2, 1, 49)   # blocks, warps a block, floats from a 16-byte boundary to y_row, cols
BACK_BULK_PACK = 4          # floats in 16 bytes
BACK_BULK_FIGURE = os.path.join(FIGURES_DIR, "back-step14_bulk-bulk.png")
BACK_SHARE_BYTES = 64 * 1024   # SHARE_BYTES: y's and dy's shares of a block at most, 2 to 16 blocks
BACK_MIN_BULK_COLS = 32768     # MIN_BULK_COLS: narrower rows take step 13's path
BACK_MAX_CLUSTER = 16          # MAX_CLUSTER
BACK_BULK_ALT = ("{step}: which of a cluster's {blocks} blocks takes each float of one row "
                 "({cols} floats, shrunk: a head and a tail read by threads, the body's 16-byte "
                 "packs copied into each block's shared memory by cp.async.bulk, a share of y "
                 "and one of dy), the slot rank x {warps} + warp of every block that each warp's "
                 "sum of dy * y is stored into, and dx written over dy's share and sent out by "
                 "bulk copies")


def back_share_bytes(cols, c):
    """share_bytes(cols, c): y's and dy's shares of a row over c blocks, in bytes."""
    return bulk_share(cols, c, BACK_BULK_PACK) * 2 * 16


def back_bulk_cluster(cols, most=BACK_MAX_CLUSTER):
    """bulk_cluster()'s blocks a row, where a cluster of `most` fits: the
    fewest of 2, 4, 8, 16 whose shares are SHARE_BYTES or less, else
    `most`; 0 for a row that takes step 13's path by its width."""
    if cols <= BACK_MIN_BULK_COLS:
        return 0
    c = 2
    while c < most and back_share_bytes(cols, c) > BACK_SHARE_BYTES:
        c *= 2
    return c


def draw_back_bulk(mpl, path):
    blocks, warps, start, cols = BACK_BULK
    pack = BACK_BULK_PACK
    head, body, tail = bulk_split(cols, start, pack)
    share = bulk_share(cols, blocks, pack)
    pushes = bulk_pushes(blocks, warps)
    margin = 3.5   # the left column: what each band is
    width = (cols + margin + 0.3) * 0.3 + 1.2
    fig, ax = new_figure(mpl, width, 12, 0.42, 1.1, 0.2, 0.6, 0.6)
    top, shared, slots, dx_row = 10.8, 8.0, 5.6, 0.2   # each band's bottom

    def row(y):   # the row: which block takes each float
        for e in range(cols):
            block, where = bulk_owner(e, cols, start, blocks, pack)
            add_cell(ax, mpl.Rectangle((e, y), 1, 1, facecolor=ROW_WARP_COLOURS[block],
                                       edgecolor="#ffffff", linewidth=0.6,
                                       hatch="////" if where != "body" else None))
        for k in range(body + 1):   # the packs' 16-byte boundaries
            x = head + k * pack
            ax.plot([x, x], [y - 0.08, y + 1.08], color="#222222", linewidth=1.0)

    def left(y, text):
        ax.text(-0.8, y, text, ha="right", va="center", fontsize=9)

    row(top)
    row(dx_row)
    left(top + 0.5, "y, dy")
    left(dx_row + 0.5, "dx")
    left(shared + 0.5, "s_share")
    left(slots + 0.4, "s_sums")
    cell, slot_cell = 1.5, 1.1
    for b in range(blocks):
        first = min(b * share, body)
        packs = min(first + share, body) - first
        x0, x1 = head + first * pack, head + (first + packs) * pack
        mid = (x0 + x1) / 2
        ax.text(mid, top - 0.25, f"block {b}'s share", ha="center", va="top", fontsize=8)
        # s_share: y's share, then dy's (s_dy = s_share + share), a cell a pack;
        # the same offsets of y and of dy go to each half.
        left_x = mid - share * cell
        for half, label in enumerate(("y", "dy, then dx")):
            ax.annotate("", xy=(left_x + (half + 0.5) * share * cell, shared + 1.05),
                        xytext=(mid, top - 0.75),
                        arrowprops=dict(arrowstyle="->", color="#222222", linewidth=1.2))
            for k in range(share):
                filled = k < packs
                add_cell(ax, mpl.Rectangle((left_x + (half * share + k) * cell, shared), cell, 1.0,
                                           facecolor=ROW_WARP_COLOURS[b] if filled else "#ffffff",
                                           edgecolor="#222222" if filled else "#888888",
                                           linewidth=0.8, linestyle="-" if filled else "--"))
            ax.text(left_x + (half + 0.5) * share * cell, shared - 0.15, label, ha="center",
                    va="top", fontsize=7.5)
        ax.plot([mid, mid], [shared, shared + 1.0], color="#222222", linewidth=2.0)
        # s_sums: slot rank x warps + warp, from lane b of that block's warp.
        received = sorted(pushes[b])
        sx0 = mid - len(received) * slot_cell / 2
        for slot, rank, warp in received:
            sx = sx0 + slot * slot_cell
            add_cell(ax, mpl.Rectangle((sx, slots), slot_cell - 0.1, 0.8,
                                       facecolor=ROW_WARP_COLOURS[rank], edgecolor="#222222",
                                       linewidth=0.6))
            ax.text(sx + (slot_cell - 0.1) / 2, slots + 0.4, f"{rank}.{warp}", ha="center",
                    va="center", fontsize=6.5, color="#ffffff" if rank == 0 else "#111111")
            ax.text(sx + (slot_cell - 0.1) / 2, slots - 0.1, f"{slot}", ha="center", va="top",
                    fontsize=6.5, color="#555555")
        ax.annotate("", xy=(mid, dx_row + 1.05), xytext=(mid, 2.35),
                    arrowprops=dict(arrowstyle="->", color="#222222", linewidth=1.2))
    ax.text(cols / 2, 7.2, "cp.async.bulk: warp 0's lanes copy the block's shares of y and dy "
            "into s_share in chunks (16 KB, shrunk to one pack), counted in bytes on one "
            "mbarrier", ha="center", va="center", fontsize=8.5)
    ax.text(cols / 2, 4.75, f"st.async: lane r of warp w of block k stores the warp's sum of "
            f"dy * y into slot k x {warps} + w (cell k.w) of block r, counted on a second "
            "mbarrier",
            ha="center", va="center", fontsize=8.5)
    add_cell(ax, mpl.Rectangle((0, 2.35), cols, 1.5, facecolor="#ffffff", edgecolor="#222222",
                               linewidth=0.8))
    ax.text(cols / 2, 3.1, f"every block adds its {blocks * warps} slots in one fixed order: "
            "s, the same bits in every block;\ndx = y * (dy - s) is written over dy in s_share "
            "and leaves by cp.async.bulk", ha="center", va="center", fontsize=8.5)
    ax.set_xlim(-margin, cols + 0.3)
    ax.set_ylim(0, 12.0)
    ax.set_xticks([])
    ax.set_yticks([])
    bare(ax)
    handles = [mpl.Patch(facecolor=ROW_WARP_COLOURS[b], label=f"block {b}") for b in range(blocks)]
    handles.append(mpl.Patch(facecolor="#ffffff", edgecolor="#555555", hatch="////",
                             label="head and tail: read and written by threads"))
    handles.append(mpl.Patch(facecolor="#ffffff", edgecolor="#888888", linestyle="--",
                             label="room of a share that no pack fills"))
    split_legend_and_titles(fig, ax, width, handles,
                            f"{BACK_BULK_STEP}: one row of softmax's backward pass over a "
                            f"cluster of {blocks} blocks, by bulk copies",
                            f"a row of {cols} floats, y_row {start} float{'s' if start != 1 else ''} "
                            f"past a 16-byte boundary: head {head}, {body} packs of {pack}, "
                            f"tail {tail}; {share} packs a share (share_bytes / 32); {warps} warps "
                            f"a block (shrunk from 8)")
    return fig


def draw_localized(mpl, path, fig):
    """path and its Chinese twin (tools/chart_zh.py's localize(), tools/
    zh_strings.py's forms); without the pinned font, the twin is left as it
    is and one line says so."""
    import chart_zh
    if write_if_changed(path, png_bytes(mpl, fig)):
        print(f"diagrams.py: wrote {path}")
    props = chart_zh.font_properties()
    if props is None:
        mpl.plt.close(fig)
        chart_zh.note_missing_font()
        return
    left = chart_zh.localize(fig, props)
    if left:
        mpl.plt.close(fig)
        raise DiagramError(f"no Chinese form for {left[0]!r} (tools/zh_strings.py CHART_STRINGS)")
    twin = chart_zh.zh_path(path)
    data = png_bytes(mpl, fig)
    mpl.plt.close(fig)
    if write_if_changed(twin, data):
        print(f"diagrams.py: wrote {twin}")


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"diagrams.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = OneLineParser(prog="diagrams.py", description="Access-pattern "
                           "pictures of every step, from tools/patterns.py.")
    parser.add_argument("--root", default=here, metavar="DIR",
                        help="folder holding stepN_*/ (default: the repository)")
    parser.add_argument("--out-dir", metavar="DIR",
                        help="where the PNGs go (default: ROOT/plots/diagrams)")
    parser.add_argument("--steps", nargs="*", metavar="STEP",
                        help="only these step directories")
    return parser.parse_args(argv)


def run(args):
    root = args.root
    if not os.path.isdir(root):   # else plots/diagrams/ is made under a wrong root
        raise DiagramError(f"--root {root!r} is not a folder")
    out_dir = args.out_dir or os.path.join(root, FIGURES_DIR)
    steps = args.steps or pt.modelled_steps(root)
    if not args.steps:
        # A step without a model (a student's own, for one) is not drawn: say so.
        unmodelled = sorted((os.path.basename(os.path.dirname(src))
                             for src in glob.glob(os.path.join(root, "step*_*", "reduce.cu"))
                             if pt.STEP_RE.match(os.path.basename(os.path.dirname(src)))
                             and os.path.basename(os.path.dirname(src)) not in pt.MODELS),
                            key=pt.step_key)
        if unmodelled:
            print(f"diagrams.py: not drawn: {', '.join(unmodelled)} (no access-pattern model "
                  f"in tools/patterns.py)")
    models = [pt.build(root, step) for step in steps]
    problems = pt.source_problems(root, models)
    if problems:
        raise DiagramError(f"{problems[0]} ({len(problems)} line(s) moved or changed)")
    mpl = load_matplotlib()
    if mpl is None:
        return charts.no_matplotlib("diagrams.py", "diagrams")
    os.makedirs(out_dir, exist_ok=True)
    for built in models:
        for kind in figure_kinds(built):
            DRAW[kind](mpl, built, os.path.join(out_dir, figure_name(built.step, kind)))
    if not args.steps:
        for step in ROW_PICTURES:
            if os.path.isfile(os.path.join(root, step, "rows.cu")):
                draw_row_loads(mpl, step, row_figure_path(step, out_dir))
        for step in ROW_SPLIT:
            if os.path.isfile(os.path.join(root, step, "rows.cu")):
                draw_row_split(mpl, step, row_figure_path(step, out_dir))
        for step in ROW_PARAMS:
            if os.path.isfile(os.path.join(root, step, "rows.cu")):
                draw_row_params(mpl, step, row_figure_path(step, out_dir))
        for step in ROW_CLUSTER:
            if os.path.isfile(os.path.join(root, step, "rows.cu")):
                draw_row_cluster(mpl, step, row_figure_path(step, out_dir))
        if os.path.isfile(os.path.join(root, ROW_BULK_STEP, "rows.cu")):
            draw_localized(mpl, row_figure_path(ROW_BULK_STEP, out_dir), draw_row_bulk(mpl, None))
        if all(os.path.isfile(os.path.join(root, step, "back.cu"))
               for step in (BACK_STEP0, BACK_STEP2)):
            draw_back(mpl, out_dir)
        if os.path.isfile(os.path.join(root, BACK_CLUSTER_STEP, "back.cu")):
            draw_localized(mpl, os.path.join(out_dir, os.path.basename(BACK_CLUSTER_FIGURE)),
                           draw_back_cluster(mpl, None))
        if os.path.isfile(os.path.join(root, BACK_BULK_STEP, "back.cu")):
            draw_localized(mpl, os.path.join(out_dir, os.path.basename(BACK_BULK_FIGURE)),
                           draw_back_bulk(mpl, None))
    return 0


def main(argv=None):
    args = parse_args(argv)
    return cli.guarded("diagrams.py", lambda: run(args), known=(DiagramError, pt.ModelError),
                       code=2, internal=2, debug="DIAGRAMS_DEBUG")


if __name__ == "__main__":
    sys.exit(main())
