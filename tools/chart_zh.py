"""The Chinese twin of a results chart: the same figure, its words in Chinese.

Every chart of plots/reference/ that a page shows (tools/plot.py,
tools/accuracy_chart.py, tools/variance_chart.py, tools/multigpu_chart.py)
is drawn from its CSV once in English, <name>.png, and then, with the same
data, the same axes and the same marks, once more as <name>.zh-CN.png for the
Chinese pages: localize() swaps every text of the figure for its Chinese form
(tools/zh_strings.py CHART_STRINGS and CHART_PATTERNS) and sets it in Noto
Sans SC.

The font comes from PyPI like matplotlib itself: the pinned package
pylopdf-fonts-zh-cn (tools/requirements.txt) ships NotoSansSC-Regular.otf
under the SIL Open Font License 1.1. FONT_SHA256 pins the file's bytes, so a
chart is the same picture wherever `make plot` runs. Without the package (a
Python that has matplotlib but not the font) the Chinese twin is left as it
is and one line says why: an English chart never waits on the font.

A text with an English word and no Chinese form stays English and is
reported: untranslated() lists it, and tests/test_plot.py fails on any in the
committed charts, so a new label cannot slip into a Chinese chart unseen.
"""

import hashlib
import importlib.util
import io
import os
import re
import sys

import zh_strings

FONT_PACKAGE = "pylopdf_fonts_zh_cn"
FONT_FILE = "NotoSansSC-Regular.otf"
FONT_SHA256 = "faa6c9df652116dde789d351359f3d7e5d2285a2b2a1f04a2d7244df706d5ea9"
ZH = ".zh-CN"
SEPARATOR = "  ·  "

# An English word a reader would read: lower case, two letters or more, not
# part of an identifier (step0_naive, rows/copy, h200.csv, --offset).
WORD = re.compile(r"(?<![\w./\-])[a-z]{2,}(?![\w/\-]|\.\w)")
UNITS = {"us", "ns", "ms", "x", "bf", "cc"}


class FontError(Exception):
    pass


def zh_path(path):
    """<name>.png -> <name>.zh-CN.png."""
    root, ext = os.path.splitext(path)
    return root + ZH + ext


def shown(path, lang):
    """The chart a page in `lang` shows: the Chinese twin where it exists."""
    if lang != "en" and os.path.isfile(zh_path(path)):
        return zh_path(path)
    return path


def font_path():
    """The Noto Sans SC file of the pinned package, or None without it."""
    spec = importlib.util.find_spec(FONT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, FONT_FILE)
        if os.path.isfile(path):
            return path
    return None


def check_font(path):
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    if digest != FONT_SHA256:
        raise FontError(f"{path} is not the pinned Noto Sans SC (sha256 {digest}); "
                        f"reinstall tools/requirements.txt")


_FONT = {}
enabled = False     # set by each tool's --chinese (make plot passes it)


def font_properties():
    """matplotlib FontProperties for Noto Sans SC (registered once), or None."""
    if "props" not in _FONT:
        path = font_path()
        if path is None:
            _FONT["props"] = None
        else:
            check_font(path)
            from matplotlib import font_manager
            font_manager.fontManager.addfont(path)
            _FONT["props"] = font_manager.FontProperties(fname=path)
    return _FONT["props"]


def english_words(text):
    """The English words of a text that a Chinese chart must not show."""
    return [w for w in WORD.findall(text) if w not in UNITS]


def translate_line(line):
    """One line in Chinese, or None when it has English words and no form."""
    for table in (zh_strings.CHART_STRINGS, zh_strings.STRINGS):
        if line in table and "{" not in line:
            return table[line]
    for pattern, form in zh_strings.CHART_PATTERNS:
        m = re.fullmatch(pattern, line)
        if m:
            return form.format(*m.groups(), **m.groupdict())
    if SEPARATOR in line:
        parts = [translate_line(part) for part in line.split(SEPARATOR)]
        return None if None in parts else SEPARATOR.join(parts)
    if line.startswith("$") or len(line.split()) <= 1:
        return line     # mathtext (a tick's 2^k) or one token: a name, a number
    return None if english_words(line) else line


STALE_MARK = " †"   # tools/stale.py's mark after a label: kept, not translated


def translate(text):
    """A text of a figure in Chinese: whole, else line by line. None when a
    part has no Chinese form."""
    if text.endswith(STALE_MARK):
        inner = translate(text[:-len(STALE_MARK)])
        return None if inner is None else inner + STALE_MARK
    whole = translate_line(text)
    if whole is not None or "\n" not in text:
        return whole
    lines = [translate_line(line) for line in text.split("\n")]
    return None if None in lines else "\n".join(lines)


def figure_texts(fig):
    """Every text artist of the figure that holds something."""
    from matplotlib.text import Text
    return [t for t in fig.findobj(Text) if t.get_text().strip()]


def localize(fig, props):
    """Put the figure's words in Chinese, in place; [English text left]."""
    from matplotlib.ticker import FixedFormatter, FixedLocator
    left = []
    # Labels set with the ticks are redrawn from their formatter on every
    # draw: a FixedFormatter, or (matplotlib 3.9, set_xticks(ticks, labels))
    # a FuncFormatter over a FixedLocator. Either is given Chinese labels.
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for minor in (False, True):
                formatter = axis.get_minor_formatter() if minor else axis.get_major_formatter()
                locator = axis.get_minor_locator() if minor else axis.get_major_locator()
                if isinstance(formatter, FixedFormatter):
                    chinese = [translate(label) for label in formatter.seq]
                    left += [label for label, zh in zip(formatter.seq, chinese) if zh is None]
                    formatter.seq = [zh if zh is not None else label
                                     for label, zh in zip(formatter.seq, chinese)]
                elif isinstance(locator, FixedLocator) and len(locator.locs):
                    labels = [formatter(loc, k) for k, loc in enumerate(locator.locs)]
                    chinese = [translate(label) for label in labels]
                    left += [label for label, zh in zip(labels, chinese) if zh is None]
                    chinese = [zh if zh is not None else label
                               for label, zh in zip(labels, chinese)]
                    if chinese != labels:
                        axis.set_ticklabels(chinese, minor=minor)
    import warnings
    with warnings.catch_warnings():
        # This draw only makes the tick labels and legends; the Chinese font
        # is set on them below, so the default font's missing glyphs for
        # labels made Chinese above are no news.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        fig.canvas.draw()   # tick labels and legends exist once drawn
    for artist in figure_texts(fig):
        text = artist.get_text()
        chinese = translate(text)
        if chinese is None:
            left.append(text)
        elif chinese != text:
            artist.set_text(chinese)
        if props is not None:
            size, weight, style = artist.get_fontsize(), artist.get_fontweight(), \
                artist.get_fontstyle()
            artist.set_fontproperties(props)
            artist.set_fontsize(size)
            artist.set_fontweight(weight)
            artist.set_fontstyle(style)
    return left


def untranslated(fig):
    """The texts of an English figure that would stay English in Chinese."""
    return [t.get_text() for t in figure_texts(fig) if translate(t.get_text()) is None]


def chinese_png(fig, relayout=False, **savefig):
    """The figure's Chinese twin as PNG bytes; None unless `enabled` (the
    tools' --chinese), or without the font (one line says so).
    relayout: run tight_layout again (a figure laid out once by it)."""
    if not enabled:
        return None
    props = font_properties()
    if props is None:
        note_missing_font()
        return None
    left = localize(fig, props)
    for text in left:
        print(f"chart_zh: no Chinese form for {text!r} (tools/zh_strings.py CHART_STRINGS)",
              file=sys.stderr)
    if relayout:
        fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **savefig)
    return buffer.getvalue()


_NOTED = []


def note_missing_font():
    """One line, once per run, when the Chinese twins cannot be drawn."""
    if not _NOTED:
        _NOTED.append(True)
        print(f"chart_zh: {FONT_PACKAGE} is not installed, so the Chinese charts "
              f"(*.zh-CN.png) were left as they are; pip install -r tools/requirements.txt",
              file=sys.stderr)
