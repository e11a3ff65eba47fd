#!/usr/bin/env python3
"""The English and Chinese editions stay in step. No GPU, no matplotlib.

Every page of the course (README.md at the top, in common/, extras/ and in
every shipped step, and ACCURACY.md) has a twin, <name>.zh-CN.md, and the two
must have:
  - the language switch on line 1;
  - the same headings, level by level, in the same order; the section
    headings of docs/glossary.zh-CN.md in their one Chinese form;
  - the same generated blocks, in the same order, with the same numbers in them
    (tools/docs.py fills both from the same files);
  - the same fenced code blocks: byte for byte, except that the comments of
    a shell block and the words of a text diagram may be translated
    (fence_key() says exactly what must stay);
  - the same inline code spans, in the same order (every command of every
    exercise's Check line is one);
  - the same link targets, in the same order (a link to another page goes to
    that page's twin in the Chinese edition, a chart to its Chinese twin
    <name>.zh-CN.png), and where the English link has an anchor, the Chinese
    one points at the corresponding Chinese heading.
Every anchor of every page (#x, page.md#x) must name a heading of its target,
slugged as GitHub slugs headings (github_slug()).
A Chinese page also:
  - has no English sentence in a generated block (english_sentences());
  - uses the glossary's one form of every term (docs/glossary.zh-CN.md, its
    "不要写成" column), outside code and in the words of its code blocks
    (shell comments, text diagrams): among them no ratio written as
    快/慢/上升……N 倍, which a careful reader takes as 1 + N, no 有效数字
    counted in bits, and no 指数 "at most 0" (exp's argument is 自变量);
  - writes the times sign in its prose as ×, not as an ASCII x (code and the
    generated tables keep x);
  - calls a mutant of tests/broken/mutants.txt 变异体, not 错误样例;
  - names the Chinese twin of a page, in links, prose and text diagrams,
    shows the Chinese twin of a chart, and has no English shell comment;
  - carries, after its pictures, the Chinese key of their English labels
    (tools/zh_strings.py figure_key()).
tools/zh_strings.py has a Chinese form for every string the generators write
and for line 1 of every program's source (the results tables quote it).
So an edit to one edition that is not made in the other fails `make test`.
Ends with "editions: N passed, N failed".
"""
import ast
import os
import re
import string
import sys
import tempfile
import unicodedata
import unittest
from urllib.parse import unquote

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import schema  # noqa: E402
import zh_strings  # noqa: E402

ZH = ".zh-CN.md"
GLOSSARY = os.path.join(REPO, "docs", "glossary.zh-CN.md")
SWITCH_EN = "English · [简体中文]({twin})"
SWITCH_ZH = "[English]({page}) · 简体中文"
FENCE = re.compile(r"^(`{3,})([^\n]*)\n(.*?)^\1\s*$", re.M | re.S)
BLOCK = re.compile(r"^<!-- BEGIN (\S+) -->\s*$(.*?)^<!-- END \1 -->\s*$", re.M | re.S)
HEADING = re.compile(r"^(#{1,6}) ", re.M)
HEADING_LINE = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.M)
CODE_SPAN = re.compile(r"(`+)([^`]+?)\1")   # a span may wrap onto the next line
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
COMMENT = re.compile(r"<!--.*?-->", re.S)
SHELL = {"sh", "bash", "shell", "console", "zsh"}
CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")


def pages(root=REPO):
    """[English page path] of every page that must have a Chinese twin."""
    found = [os.path.join(root, "README.md"), os.path.join(root, "ACCURACY.md"),
             os.path.join(root, "docs", "grading.md"), os.path.join(root, "rows", "README.md"),
             os.path.join(root, "multigpu", "README.md"), os.path.join(root, "back", "README.md")]
    for folder in ["common", "extras"] + list(schema.SHIPPED) + list(schema.SHIPPED_ROWS):
        found.append(os.path.join(root, schema.program_dir(folder), "README.md"))
    return [path for path in found if os.path.isfile(path)]


def all_markdown(root=REPO):
    """Every .md file of the repository, in both languages (not build output)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in
                         ("build", "node_modules", "__pycache__", "results"))
        found += [os.path.join(folder, name) for name in sorted(files) if name.endswith(".md")]
    return found


def twin(path):
    return path[:-len(".md")] + ZH


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def without(pattern, text, by=""):
    return pattern.sub(by, text)


def fences(text):
    """The fenced code blocks outside the generated blocks (those are compared by number)."""
    return [m.group(0) for m in FENCE.finditer(without(BLOCK, text))]


def prose(text):
    """The text outside code fences and generated blocks."""
    return without(BLOCK, without(FENCE, text))


def headings(text):
    return [m.group(1) for m in HEADING.finditer(prose(text))]


def blocks(text):
    """[(name, numbers in the body)] of the generated blocks, in order."""
    return [(m.group(1), NUMBER.findall(m.group(2))) for m in BLOCK.finditer(text)]


def code_spans(text):
    body = prose(text).split("\n", 1)[-1]   # line 1 is the language switch
    return [" ".join(m.group(2).split()) for m in CODE_SPAN.finditer(body)]


def link_targets(text):
    body = prose(text).split("\n", 1)[-1]
    return [normalize_link(m.group(1)) for m in LINK.finditer(body)]


CHART_ZH = ".zh-CN.png"


def normalize_link(target):
    """A Chinese page's link to a twin (a page, or a chart's Chinese twin
    drawn by tools/chart_zh.py) counts as the link to the English one."""
    path = target.split("#", 1)[0]
    if path.endswith(CHART_ZH):
        return path[:-len(CHART_ZH)] + ".png"
    return path[:-len(ZH)] + ".md" if path.endswith(ZH) else path


def english_charts(zh_path, text, exists=os.path.isfile):
    """[message] for each picture of a Chinese page that has a Chinese twin
    (<name>.zh-CN.png beside it) and is shown in English."""
    folder = os.path.dirname(zh_path)
    problems = []
    for m in LINK.finditer(prose(text) + "\n".join(m.group(2) for m in BLOCK.finditer(text))):
        target = m.group(1).split("#", 1)[0]
        if m.group(0).startswith("!") and target.endswith(".png") \
                and not target.endswith(CHART_ZH):
            twin_chart = os.path.join(folder, target[:-len(".png")] + CHART_ZH)
            if exists(twin_chart):
                problems.append(f"{target}: the Chinese page should show "
                                f"{os.path.basename(twin_chart)}")
    return problems


# ----------------------------------------------------------------------------
# Fenced blocks: what must stay identical
# ----------------------------------------------------------------------------

def strip_shell_comment(line):
    """The line without its `#` comment: a # at the start of the line or after
    white space, outside quotes. Trailing white space goes too."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1] in " \t"):
            return line[:k].rstrip()
    return line.rstrip()


FULL_WIDTH = str.maketrans({"，": ", ", "：": ": ", "；": "; ", "（": " (", "）": ") ",
                            "。": ". ", "、": ", "})


def diagram_line_key(line):
    """What a line of a text diagram must keep: every token that is not a
    plain word, in order. A plain word (letters only, any script, CJK too)
    is a label and may be translated; numbers, identifiers, operators and
    the drawing characters may not."""
    line = CJK.sub(lambda m: f" {m.group(0)} ", line.translate(FULL_WIDTH))
    kept = []
    for token in line.split():
        # Brackets around a label are punctuation; a Chinese diagram names
        # a page's Chinese twin where the English one names the page.
        token = token.strip(",.:;()").replace(ZH, ".md")
        if token and not all(ch.isalpha() or ch == "'" for ch in token):
            kept.append(token)
    return kept


def fence_key(fence):
    """A fenced block as the twins must share it: a shell block without its
    comments, a text diagram (no language) by diagram_line_key() line by line,
    anything else (c, diff, ...) byte for byte."""
    m = FENCE.match(fence)
    info, body = m.group(2).strip(), m.group(3)
    lines = body.split("\n")
    if info.split(" ")[0] in SHELL:
        return (info, [strip_shell_comment(line) for line in lines])
    if not info:
        return (info, [diagram_line_key(line) for line in lines])
    return (info, fence)


def fence_keys(text):
    return [fence_key(f) for f in fences(text)]


# ----------------------------------------------------------------------------
# Headings and anchors, as GitHub slugs them
# ----------------------------------------------------------------------------

def heading_text(raw):
    """The rendered text of a heading's markdown: links and images by their
    text, code spans by their content, HTML tags dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = CODE_SPAN.sub(lambda m: m.group(2), text)
    return re.sub(r"<[^>]+>", "", text).strip()


def github_slug(text):
    """GitHub's anchor for a heading's text: lower case; every character
    dropped except letters and marks of any script, digits, the connector
    `_`, hyphens and spaces; each space becomes a hyphen."""
    kept = []
    for ch in text.lower():
        category = unicodedata.category(ch)
        if ch in " -" or category[0] in "LM" or category in ("Nd", "Nl", "Pc"):
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def unique_slugs(texts):
    """Slugs of headings in page order: a repeated slug gets -1, -2, ..."""
    seen, out = {}, []
    for text in texts:
        base = result = github_slug(text)
        while result in seen:
            seen[base] += 1
            result = f"{base}-{seen[base]}"
        seen[result] = 0
        out.append(result)
    return out


def page_headings(text):
    """[(level, rendered text)] of every heading outside code fences."""
    return [(len(m.group(1)), heading_text(m.group(2)))
            for m in HEADING_LINE.finditer(without(FENCE, text))]


def anchors(text):
    """The slugs of a page's headings, in order."""
    return unique_slugs([t for _, t in page_headings(text)])


def links(text):
    """Every link target of a page outside code fences and code spans."""
    body = without(CODE_SPAN, without(FENCE, text))
    return [m.group(1) for m in LINK.finditer(body)]


def broken_anchors(path, read_page=read):
    """[message] for every anchor of the page at `path` that names no heading
    of its target, and every linked page that does not exist."""
    problems = []
    text = read_page(path)
    for target in links(text):
        if re.match(r"^[a-z]+:", target):          # http:, https:, mailto:
            continue
        page, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), unquote(page))) \
            if page else path
        if page and not os.path.exists(dest):
            problems.append(f"{target}: {os.path.relpath(dest, REPO)} does not exist")
            continue
        if anchor and not dest.endswith(".md"):
            problems.append(f"{target}: an anchor into a file that is not a page")
        elif anchor and unquote(anchor) not in anchors(read_page(dest)):
            problems.append(f"{target}: no heading of {os.path.basename(dest)} has the "
                            f"anchor #{unquote(anchor)}")
    return problems


def anchor_pairs(en_path, zh_path, read_page=read):
    """[message] for each link whose anchor in the Chinese page is not the
    slug of the Chinese heading that corresponds (same position) to the
    English link's heading."""
    problems = []
    en_links = [t for t in links(prose(read_page(en_path)).split("\n", 1)[-1])
                if not re.match(r"^[a-z]+:", t)]
    zh_links = [t for t in links(prose(read_page(zh_path)).split("\n", 1)[-1])
                if not re.match(r"^[a-z]+:", t)]
    for en, zh in zip(en_links, zh_links):
        en_page, _, en_anchor = en.partition("#")
        zh_page, _, zh_anchor = zh.partition("#")
        if not en_anchor:
            if zh_anchor:
                problems.append(f"{zh}: the English link {en} has no anchor")
            continue
        en_dest = os.path.normpath(os.path.join(os.path.dirname(en_path), en_page)) \
            if en_page else en_path
        zh_dest = os.path.normpath(os.path.join(os.path.dirname(zh_path), zh_page)) \
            if zh_page else zh_path
        if not (os.path.isfile(en_dest) and os.path.isfile(zh_dest)):
            continue    # broken_anchors() reports a missing page
        en_slugs, zh_slugs = anchors(read_page(en_dest)), anchors(read_page(zh_dest))
        if en_anchor not in en_slugs:
            continue    # broken_anchors() reports it
        index = en_slugs.index(en_anchor)
        want = zh_slugs[index] if index < len(zh_slugs) else None
        if unquote(zh_anchor) != want:
            problems.append(f"{zh}: the English link goes to #{en_anchor}, heading {index + 1} "
                            f"of its page; the Chinese one should go to #{want}")
    return problems


def english_shell_comments(text):
    """The comments of a page's shell blocks that are English through and
    through: no Chinese character, and an English sentence in them. (A
    Chinese comment may quote a program's English output.)"""
    found = []
    for m in FENCE.finditer(text):
        if m.group(2).strip().split(" ")[0] not in SHELL:
            continue
        for line in m.group(3).split("\n"):
            comment = line[len(strip_shell_comment(line)):].strip()
            if comment.startswith("#!") or CJK.search(comment):
                continue
            if english_sentences(comment.lstrip("# ")):
                found.append(line.strip())
    return found


def english_page_mentions(zh_path, text, exists=os.path.isfile):
    """[message] for each link, and each page named in the prose or in a text
    diagram, of a Chinese page that goes to an English page whose Chinese
    twin exists. Code spans and code blocks (commands) are not mentions;
    neither is the language switch on line 1."""
    folder = os.path.dirname(zh_path)
    body = without(BLOCK, text).split("\n", 1)[-1]
    found = [m.group(1).split("#", 1)[0] for m in LINK.finditer(prose(body))]
    named = [m.group(3) for m in FENCE.finditer(body) if not m.group(2).strip()]
    named.append(re.sub(r"\]\([^)\s]*\)", "] ", CODE_SPAN.sub(" ", prose(body))))
    for chunk in named:
        found += re.findall(r"[\w./*-]*\.md\b", chunk)
    problems = []
    for target in found:
        if not target.endswith(".md") or target.endswith(ZH) or re.match(r"^[a-z]+:", target):
            continue
        candidates = [os.path.normpath(os.path.join(base, unquote(target)))
                      for base in (folder, REPO)]
        # a map names a page by the end of its path ("grading.md" under docs/)
        candidates += [page for page in pages() if page.endswith(os.sep + target)]
        for page in candidates:
            if exists(page) and exists(twin(page)):
                problems.append(f"{target}: the Chinese page should name "
                                f"{os.path.basename(twin(page))}")
                break
    return problems


# ----------------------------------------------------------------------------
# Chinese text: English left in generated blocks, the glossary, the figure key
# ----------------------------------------------------------------------------

IDENTIFIER = re.compile(r"[A-Za-z0-9_./'%^+\-]+")
UNIT_WORDS = {"us", "ns", "ms", "s", "x"}
CHINESE_BREAK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f“”‘’…·\n]")


def without_one_word_cells(line):
    """A table row without its cells of one word: such a cell names a thing
    (a fill, a program), it does not say something."""
    if not line.lstrip().startswith("|"):
        return line
    cells = line.strip().strip("|").split("|")
    return "| " + " | ".join(c for c in cells if len(c.split()) != 1) + " |"


def english_sentences(text):
    """The English sentences of a text: a stretch of a line between two
    Chinese characters (or a line end) that holds three or more plain English
    words. A plain word is lower case, letters only (an apostrophe allowed),
    two letters or more; so numbers, units (us, ns), file and step names,
    identifiers (gridDim.x, step8_vector), capitalised names (NVIDIA H200,
    CUB, Kahan), one-letter variables (lane i + offset) and a table header
    cell that is an identifier (random, positive, wide) are not words of a
    sentence, nor is a table cell of one word. Code spans, fenced code, link targets and HTML comments are
    not text."""
    text = COMMENT.sub("\n", text)
    text = without(FENCE, text, "\n")
    text = CODE_SPAN.sub(" ", text)
    text = re.sub(r"\]\([^)\s]*\)", "] ", text)
    text = "\n".join(without_one_word_cells(line) for line in text.split("\n"))
    found = []
    for segment in CHINESE_BREAK.split(text):
        words = [t for t in (m.group(0).strip(".,;:") for m in IDENTIFIER.finditer(segment))
                 if re.fullmatch(r"[a-z]{2,}(?:'[a-z]+)?", t) and t not in UNIT_WORDS]
        if len(words) >= 3:
            found.append(" ".join(segment.split()))
    return found


def generated_english(text):
    """[(block name, English sentence)] in the generated blocks of a page."""
    return [(m.group(1), sentence) for m in BLOCK.finditer(text)
            for sentence in english_sentences(m.group(2))]


def source_summaries(root=REPO):
    """{path: line 1 without '// '} of every program's source: part 1's
    steps, part 2's rows steps, the baselines and extras/. The links that
    `make stepK` makes (step3 -> step3_idle) are not programs of their own."""
    found = {}
    for parent, name in (("", "reduce.cu"), ("rows", "rows.cu"), ("extras", "reduce.cu")):
        top = os.path.join(root, parent)
        if not os.path.isdir(top):
            continue
        for folder in sorted(os.listdir(top)):
            path = os.path.join(top, folder, name)
            program = parent == "extras" or schema.step_number(folder) is not None or \
                folder.startswith("baseline_")
            if program and not os.path.islink(os.path.join(top, folder)) and os.path.isfile(path):
                found[path] = None
    for path in found:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline().strip()
        found[path] = first[2:].strip() if first.startswith("//") else ""
    return found


def shipped_source(path, root=REPO):
    """True for a program this repository ships (tools/schema.py SHIPPED,
    SHIPPED_ROWS, extras/); False for a student's `make new` step."""
    folder = os.path.dirname(os.path.relpath(path, root)).replace(os.sep, "/")
    return folder.startswith("extras/") or schema.step_label(folder) in \
        schema.SHIPPED + schema.SHIPPED_ROWS


def missing_summaries(summaries, table, root=REPO):
    """[path] of the shipped sources whose line-1 summary has no Chinese form
    in table. A student's own step needs none: tools/zh_strings.summary()
    gives its English line on the Chinese pages."""
    return [path for path, text in summaries.items()
            if text and text not in table and shipped_source(path, root)]


def missing_summary_message(paths, summaries, root=REPO):
    """What to do about the shipped sources that missing_summaries() found."""
    lines = [f"{os.path.relpath(p, root)}: line 1 {summaries[p]!r} has no Chinese form in "
             "tools/zh_strings.py SUMMARIES; add one there (a shipped program's results "
             "tables quote line 1 in both editions)" for p in paths]
    return "\n".join(lines)


def parse_glossary(text):
    """(terms, headings): terms is [(chosen forms, [variant])], a variant a
    literal or, written re:..., a regular expression; headings maps an
    English section heading to its Chinese form."""
    terms, headings_map, table = [], {}, None
    for line in text.split("\n"):
        if line.startswith("## "):
            table = line[3:].strip()
            continue
        if not line.startswith("|") or line.startswith("|---"):
            continue
        # A cell may hold a pipe escaped as \| (GitHub renders it as |, even
        # in a code span): a variant's alternation is written that way.
        cells = [c.strip().replace("\\|", "|")
                 for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if table == "术语" and len(cells) >= 3 and cells[0] != "English":
            chosen = [c.strip() for c in re.split(r" / |、", cells[1]) if c.strip()]
            variants = [m.group(2) for m in CODE_SPAN.finditer(cells[2])]
            terms.append((chosen, variants))
        elif table == "步骤页的小节标题" and len(cells) == 2 and cells[0] != "English":
            headings_map[cells[0]] = cells[1]
    return terms, headings_map


def checkable_chinese(text):
    """The text of a Chinese page that the glossary rules: no code fences,
    code spans, link targets, HTML comments, titles in 《...》, nor English
    quoted in “...” (a label of a picture, a tool's message)."""
    text = COMMENT.sub("\n", text)
    text = without(FENCE, text, "\n")
    text = CODE_SPAN.sub(" ", text)
    text = re.sub(r"\]\([^)\s]*\)", "] ", text)
    text = re.sub(r"《[^》]*》", " ", text)          # a title is quoted as it was written
    return re.sub(r"“[^“”\u4e00-\u9fff]*”", " ", text)


def glossary_problems(text, terms):
    """[(variant, excerpt)] for every variant of a glossary term in a page.
    A variant right after the chosen form as its gloss, "warp（线程束）",
    is allowed."""
    body = checkable_chinese(text)
    for chosen, variants in terms:
        for form in chosen:
            for variant in variants:
                if not variant.startswith("re:"):
                    body = body.replace(f"{form}（{variant}）", form)
    problems = []
    for chosen, variants in terms:
        for variant in variants:
            pattern = variant[3:] if variant.startswith("re:") else re.escape(variant)
            for m in re.finditer(pattern, body):
                excerpt = body[max(0, m.start() - 12):m.end() + 12].replace("\n", " ")
                problems.append((variant, excerpt))
    return problems


def code_words(text):
    """The words of a page's code blocks that a translation changed, one
    line each: the comments of its shell blocks and the lines of its text
    diagrams that hold Chinese. The glossary rules them as it rules the
    prose. A line with no Chinese is a program's output or names files, as
    in English (`time median T us` is what the program prints); every other
    block is code, byte for byte the English one."""
    found = []
    for m in FENCE.finditer(text):
        info = m.group(2).strip().split(" ")[0]
        for line in m.group(3).split("\n"):
            if info in SHELL:
                line = line[len(strip_shell_comment(line)):]
            elif info:
                continue
            if CJK.search(line):
                found.append(line)
    return "\n".join(found)


# An ASCII x between two operands: a digit, a name or a bracket on its left,
# one on its right (a Chinese word too: 2 x 显存时钟频率), or a Chinese word
# on its left and a number or a bracket on its right (128 个线程 x 32 个).
# A ratio (1.07x) has no space before its x; a variable x has an operator or
# a Chinese word before it and none of those after it (y = x, 读一遍 x、
# 每个 x 都减去), so a times sign between two Chinese words (带宽 x 延迟)
# is the one form this cannot tell from a variable.
ASCII_TIMES = re.compile(r"(?<=[A-Za-z0-9_)|\]^）])[ \t]+x(?:[ \t]+(?=[A-Za-z0-9_(|\[（\u4e00-\u9fff])|(?=（))"
                         r"|(?<=[\u4e00-\u9fff])[ \t]+x(?:[ \t]+(?=[0-9(\[（])|(?=（))")


def ascii_times(text):
    """[excerpt] for every ASCII x that a Chinese page's prose uses as a times
    sign (32768 x 1024, |gamma_i| x rstd), where a Chinese author writes ×.
    Code, code spans and the generated blocks (whose shapes are the English
    edition's data) keep their x."""
    body = checkable_chinese(without(BLOCK, text))
    return [body[max(0, m.start() - 12):m.end() + 12].replace("\n", " ")
            for m in ASCII_TIMES.finditer(body)]


MUTANTS = os.path.join(REPO, "tests", "broken", "mutants.txt")


def mutant_names(path=MUTANTS):
    """The names of the mutants, column 1 of tests/broken/mutants.txt."""
    with open(path, encoding="utf-8") as handle:
        return [line.split("|", 1)[0].strip() for line in handle
                if "|" in line and not line.startswith("#")]


def mutants_called_fixtures(text, names):
    """[name] of each mutant that a Chinese page names as 错误样例 `name`: a
    mutant is a 变异体 (docs/glossary.zh-CN.md); 错误样例 is every kernel of
    tests/broken/, the hand-written ones too."""
    if not names:
        return []
    pattern = re.compile(r"错误样例\s*`?(" + "|".join(map(re.escape, names)) + r")(?![\w])")
    return [m.group(1) for m in pattern.finditer(without(BLOCK, without(FENCE, text)))]


def heading_problems(en, zh, headings_map):
    """[message] for each heading of the Chinese page that is not the
    glossary's form of the English heading at the same position."""
    problems = []
    for (_, e), (_, z) in zip(page_headings(prose(en)), page_headings(prose(zh))):
        step = re.match(r"Step (\d+): ", e)
        if step and not z.startswith(f"第 {step.group(1)} 步："):
            problems.append(f"'{z}' should start with '第 {step.group(1)} 步：' ('{e}')")
        elif e in headings_map and z != headings_map[e]:
            problems.append(f"'{z}' should be '{headings_map[e]}' ('{e}')")
    return problems


FIGURES_END = "<!-- END figures -->"


ROW_FIGURE_KEY = "**图中英文对照。**"


def figure_key_problem(zh):
    """None, or what is wrong with the Chinese key after a page's pictures."""
    m = BLOCK.search(zh)
    figures = [b for b in BLOCK.finditer(zh) if b.group(1) == "figures"]
    if not figures:
        return None
    m = figures[0]
    if "/rows-step" in m.group(2) and ".zh-CN.png)" not in m.group(2):
        # Part 2's pictures differ per step (their titles name the step's
        # mapping), so each page keys its own picture in a paragraph of its own;
        # a picture drawn in Chinese (step 23's) needs none.
        after = zh[m.end():].lstrip("\n")
        if not after.startswith(ROW_FIGURE_KEY):
            return f"after {FIGURES_END} the page should explain its picture's English in a " \
                   f"paragraph starting {ROW_FIGURE_KEY}"
        return None
    kinds = re.findall(r"-([a-z]+)\.png\)", m.group(2))
    if not kinds:
        return None
    want = zh_strings.figure_key(kinds)
    after = zh[m.end():].lstrip("\n")
    if not after.startswith(want + "\n"):
        return (f"after {FIGURES_END} the page should carry the key of its pictures "
                f"({', '.join(kinds)}), tools/zh_strings.py figure_key():\n\n{want}\n")
    return None


def template_tokens(text):
    """The placeholders and literal numbers of a template, in order."""
    return re.findall(r"\{\w+\}|\d+(?:[.,]\d+)*", text)


def placeholders(text):
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name)


# The generators that register their English strings in a STRINGS table, whose
# Chinese forms live only in tools/zh_strings.py.
STRING_TABLES = ("docs.py", "rows_docs.py")
# The generator whose TEXT table maps a label's key to its English alone; its
# Chinese form, too, lives only in tools/zh_strings.py.
TEXT_TABLES = ("accuracy_docs.py",)


def table_values(source, name, values):
    """Every value a generator's source writes into its table `name`
    (`name = {...}`, `name.update(...)`, `name[key] = ...`, keyword arguments
    too), as AST nodes; values(node) takes a dict literal (or whatever else
    is assigned or passed) apart into the values to look at."""
    def is_table(node):
        return isinstance(node, ast.Name) and node.id == name

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(is_table(t) for t in node.targets):
            found += values(node.value)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Subscript) and is_table(t.value) for t in node.targets):
            found.append(node.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and is_table(node.func.value) and node.func.attr in ("update", "setdefault")):
            found += [v for arg in node.args for v in values(arg)]
            found += [kw.value for kw in node.keywords]
    return found


def strings_table_values(source):
    """The line of every value a generator writes into its STRINGS table that
    is not the empty string: the table only registers the English, and a
    value here would be a second copy of a Chinese form that zh_strings.apply
    overwrites."""
    def other_table(node):      # another generator's table (checked in its own file)
        return isinstance(node, ast.Attribute) and node.attr == "STRINGS"

    def values(node):
        if isinstance(node, ast.Dict):
            return [v for v in node.values if not other_table(v)]   # {**rows_docs.STRINGS}
        if isinstance(node, ast.DictComp):
            return [node.value]
        return [] if other_table(node) else [node]   # a table built some other way: show it

    return sorted(v.lineno for v in table_values(source, "STRINGS", values)
                  if not (isinstance(v, ast.Constant) and v.value == ""))


def text_table_values(source):
    """The line of every value of a generator's TEXT table that is not one
    English string: a {"en": ..., "zh-CN": ...} entry, a table built some
    other way, or a string with Chinese in it would be a second copy of a
    Chinese form that tools/zh_strings.py holds."""
    def values(node):
        return list(node.values) if isinstance(node, ast.Dict) else [node]

    return sorted(v.lineno for v in table_values(source, "TEXT", values)
                  if not (isinstance(v, ast.Constant) and isinstance(v.value, str)
                          and not CJK.search(v.value)))


def chinese_lines(source):
    """The lines of a generator's source with a Chinese character in them."""
    return [number for number, line in enumerate(source.splitlines(), 1) if CJK.search(line)]


# ----------------------------------------------------------------------------
# The pages
# ----------------------------------------------------------------------------

class EditionTests(unittest.TestCase):
    def pair(self, page):
        zh = twin(page)
        self.assertTrue(os.path.isfile(zh), f"{os.path.relpath(page, REPO)} has no Chinese "
                                            f"edition {os.path.relpath(zh, REPO)}")
        return read(page), read(zh)

    def each_page(self, check):
        for page in pages():
            with self.subTest(page=os.path.relpath(page, REPO)):
                en, zh = self.pair(page)
                check(page, en, zh)

    def test_language_switch_on_line_1(self):
        def check(page, en, zh):
            name = os.path.basename(page)
            self.assertEqual(en.split("\n", 1)[0], SWITCH_EN.format(twin=os.path.basename(twin(page))))
            self.assertEqual(zh.split("\n", 1)[0], SWITCH_ZH.format(page=name))
        self.each_page(check)

    def test_same_headings(self):
        self.each_page(lambda page, en, zh: self.assertEqual(headings(en), headings(zh)))

    def test_section_headings_in_the_glossary_form(self):
        _, headings_map = parse_glossary(read(GLOSSARY))
        self.each_page(lambda page, en, zh: self.assertEqual(
            heading_problems(en, zh, headings_map), []))

    def test_same_generated_blocks_and_numbers(self):
        self.each_page(lambda page, en, zh: self.assertEqual(blocks(en), blocks(zh)))

    def test_same_code_blocks(self):
        self.each_page(lambda page, en, zh: self.assertEqual(fence_keys(en), fence_keys(zh)))

    def test_same_commands_and_code(self):
        self.each_page(lambda page, en, zh: self.assertEqual(code_spans(en), code_spans(zh)))

    def test_same_links(self):
        self.each_page(lambda page, en, zh: self.assertEqual(link_targets(en), link_targets(zh)))

    def test_links_between_chinese_pages_stay_chinese(self):
        # A Chinese reader following a link to another page, or reading a
        # page's name in a map, lands on its twin.
        self.each_page(lambda page, en, zh: self.assertEqual(
            english_page_mentions(twin(page), zh), []))

    def test_chinese_pages_show_the_chinese_charts(self):
        self.each_page(lambda page, en, zh: self.assertEqual(english_charts(twin(page), zh), []))

    def test_every_results_chart_has_a_chinese_twin(self):
        # make plot draws <name>.zh-CN.png beside every chart of plots/reference.
        def check(page, en, zh):
            for m in LINK.finditer(without(FENCE, en)):
                target = m.group(1).split("#", 1)[0]
                if m.group(0).startswith("!") and "plots/reference/" in target:
                    chart = os.path.normpath(os.path.join(os.path.dirname(page), target))
                    self.assertTrue(os.path.isfile(chart[:-len(".png")] + CHART_ZH),
                                    f"{target} has no Chinese twin: make plot")
        self.each_page(check)

    def test_shell_comments_are_chinese(self):
        self.each_page(lambda page, en, zh: self.assertEqual(english_shell_comments(zh), []))

    def test_every_anchor_names_a_heading(self):
        for path in all_markdown():
            with self.subTest(page=os.path.relpath(path, REPO)):
                self.assertEqual(broken_anchors(path), [])

    def test_chinese_anchors_follow_the_english_ones(self):
        self.each_page(lambda page, en, zh: self.assertEqual(anchor_pairs(page, twin(page)), []))

    def test_no_english_sentence_in_a_chinese_generated_block(self):
        self.each_page(lambda page, en, zh: self.assertEqual(generated_english(zh), []))

    def test_chinese_pages_keep_the_glossary(self):
        terms, _ = parse_glossary(read(GLOSSARY))
        self.each_page(lambda page, en, zh: self.assertEqual(glossary_problems(zh, terms), []))

    def test_chinese_code_comments_keep_the_glossary(self):
        # Issue 45: 标杆 sat in a text diagram of README.zh-CN.md, unseen.
        terms, _ = parse_glossary(read(GLOSSARY))
        self.each_page(lambda page, en, zh: self.assertEqual(
            glossary_problems(code_words(zh), terms), []))

    def test_chinese_prose_writes_the_times_sign(self):
        self.each_page(lambda page, en, zh: self.assertEqual(ascii_times(zh), []))

    def test_a_mutant_is_a_mutant(self):
        names = mutant_names()
        self.assertIn("sm_no_max", names)
        self.each_page(lambda page, en, zh: self.assertEqual(
            mutants_called_fixtures(zh, names), []))

    def test_chinese_pictures_have_their_key(self):
        self.each_page(lambda page, en, zh: self.assertIsNone(figure_key_problem(zh)))


class ChineseStringTests(unittest.TestCase):
    """tools/zh_strings.py covers every string the generators write."""

    def test_every_summary_has_a_chinese_form(self):
        summaries = source_summaries()
        self.assertTrue(any("rows" in path for path in summaries), "part 2's sources not found")
        missing = missing_summaries(summaries, zh_strings.SUMMARIES)
        if missing:
            self.fail(missing_summary_message(missing, summaries))

    def test_no_summary_outlives_its_source(self):
        current = set(source_summaries().values())
        self.assertEqual([s for s in zh_strings.SUMMARIES if s not in current], [])

    def test_every_generator_string_has_a_chinese_form(self):
        import accuracy_docs
        import compare
        import diagrams
        import docs
        english = set(docs.STRINGS) | set(accuracy_docs.TEXT.values())
        english |= set(compare.COUNTER_LABELS.values()) | {compare.LANES_ON}
        english |= set(diagrams.ALT_TEXT.values()) | set(docs.FLUSH_TEXT.values())
        self.assertEqual(sorted(english - set(zh_strings.STRINGS)), [])
        for key, text in accuracy_docs.TEXT.items():   # what the accuracy block will say
            self.assertEqual(accuracy_docs.label(key, "zh-CN"), zh_strings.STRINGS[text], key)

    def test_the_generators_hold_no_chinese_form(self):
        # tools/zh_strings.py is the one home of the Chinese: docs.py and
        # rows_docs.py register their English with "", accuracy_docs.py's TEXT
        # holds its English alone (issue 44).
        for name in STRING_TABLES:
            with self.subTest(name=name):
                self.assertEqual(strings_table_values(read(os.path.join(REPO, "tools", name))),
                                 [], f"tools/{name}: a STRINGS value that is not \"\"; its "
                                 "Chinese form belongs in tools/zh_strings.py")
        for name in TEXT_TABLES:
            with self.subTest(name=name):
                self.assertEqual(text_table_values(read(os.path.join(REPO, "tools", name))),
                                 [], f"tools/{name}: a TEXT value that is not one English "
                                 "string; its Chinese form belongs in tools/zh_strings.py")
        for name in STRING_TABLES + TEXT_TABLES:
            with self.subTest(name=name, check="no Chinese character"):
                self.assertEqual(chinese_lines(read(os.path.join(REPO, "tools", name))), [],
                                 f"tools/{name}: Chinese belongs in tools/zh_strings.py")

    def test_chinese_forms_keep_the_glossary(self):
        terms, _ = parse_glossary(read(GLOSSARY))
        texts = list(zh_strings.STRINGS.values()) + list(zh_strings.SUMMARIES.values())
        texts.append(zh_strings.figure_key(zh_strings.FIGURE_KINDS))
        texts += list(zh_strings.CHART_STRINGS.values())            # the Chinese charts
        texts += [form for _, form in zh_strings.CHART_PATTERNS]
        for text in texts:
            with self.subTest(text=text):
                self.assertEqual(glossary_problems(re.sub(r"\{\w+\}", "", text), terms), [])

    def test_translations_keep_placeholders_and_numbers_in_order(self):
        for table in (zh_strings.STRINGS, zh_strings.SUMMARIES):
            for english, chinese in table.items():
                with self.subTest(english=english):
                    self.assertEqual(placeholders(chinese), placeholders(english))
                    self.assertEqual(template_tokens(chinese), template_tokens(english))


# ----------------------------------------------------------------------------
# The checks themselves: each one fails on a broken input
# ----------------------------------------------------------------------------

class CheckerTests(unittest.TestCase):
    """The comparisons above can fail: a drifted twin is caught."""

    EN = ("English · [简体中文](README.zh-CN.md)\n\n# T\n\n## A\n\nRun `make x` and see "
          "[s1](../step1_divergence/README.md).\n\n<!-- BEGIN measured -->\n\n| 1.5 | 2 |\n\n"
          "<!-- END measured -->\n\n```sh\nmake y   # build it\n```\n\n```\nlane: 0 1 2\n"
          "bank: 0 8 16   -> 4 banks, 8 lanes each\n```\n")
    ZH_OK = ("[English](README.md) · 简体中文\n\n# 标题\n\n## 甲\n\n运行 `make x`，参见 "
             "[s1](../step1_divergence/README.zh-CN.md)。\n\n<!-- BEGIN measured -->\n\n"
             "| 1.5 | 2 |\n\n<!-- END measured -->\n\n```sh\nmake y   # 构建\n```\n\n```\n"
             "lane: 0 1 2\nbank: 0 8 16   -> 4 个 bank，每个 8 个 lane\n```\n")

    def test_a_faithful_twin_passes(self):
        self.assertEqual(headings(self.EN), headings(self.ZH_OK))
        self.assertEqual(blocks(self.EN), blocks(self.ZH_OK))
        self.assertEqual(fence_keys(self.EN), fence_keys(self.ZH_OK))
        self.assertEqual(code_spans(self.EN), code_spans(self.ZH_OK))
        self.assertEqual(link_targets(self.EN), link_targets(self.ZH_OK))

    def test_each_kind_of_drift_is_seen(self):
        drifts = {
            "a heading": (headings, self.ZH_OK.replace("## 甲", "### 甲")),
            "a number in a block": (blocks, self.ZH_OK.replace("| 1.5 |", "| 1.6 |")),
            "a command in a shell block": (fence_keys, self.ZH_OK.replace("make y", "make z")),
            "a # inside quotes": (fence_keys, self.ZH_OK.replace("make y", "make 'y #'")),
            "a number in a diagram": (fence_keys, self.ZH_OK.replace("0 8 16", "0 8 15")),
            "a diagram line": (fence_keys, self.ZH_OK.replace("lane: 0 1 2\n", "")),
            "an identifier in a diagram": (fence_keys, self.ZH_OK.replace("-> 4", "=> 4")),
            "a command": (code_spans, self.ZH_OK.replace("`make x`", "`make xx`")),
            "a link": (link_targets, self.ZH_OK.replace("step1_divergence", "step2_bankconflict")),
        }
        for what, (extract, zh) in drifts.items():
            with self.subTest(drift=what):
                self.assertNotEqual(extract(self.EN), extract(zh))

    def test_a_chinese_page_that_names_an_english_page_is_seen(self):
        zh_path = os.path.join(REPO, "README.zh-CN.md")
        ok = ("[English](README.md) · 简体中文\n\n见 [舍入](ACCURACY.zh-CN.md#确定性) 和 "
              "rows/README.zh-CN.md。\n\n```\nACCURACY.zh-CN.md    舍入\n```\n\n"
              "```sh\nless ACCURACY.md    # 命令照写\n```\n\n运行 `cat ACCURACY.md`。\n")
        self.assertEqual(english_page_mentions(zh_path, ok), [])
        for bad in (ok.replace("(ACCURACY.zh-CN.md#", "(ACCURACY.md#"),
                    ok.replace("rows/README.zh-CN.md", "rows/README.md"),
                    ok.replace("ACCURACY.zh-CN.md    舍入", "ACCURACY.md    舍入"),
                    ok.replace("见 [", "docs/grading.md，见 ["),
                    ok.replace("舍入\n```", "舍入 (grading.md)\n```")):
            with self.subTest(page=bad):
                self.assertEqual(len(english_page_mentions(zh_path, bad)), 1)
        # the diagram may name the twin: the twins' code blocks still match
        self.assertEqual(diagram_line_key("ACCURACY.md    rounding (common/README.md explains)"),
                         diagram_line_key("ACCURACY.zh-CN.md    舍入（common/README.zh-CN.md 讲清）"))

    def test_an_english_chart_on_a_chinese_page_is_seen(self):
        zh_path = os.path.join(REPO, "README.zh-CN.md")
        page = ("[English](README.md) · 简体中文\n\n<!-- BEGIN results -->\n\n"
                "![带宽](plots/reference/h200-progression.zh-CN.png)\n\n<!-- END results -->\n\n"
                "![图](plots/diagrams/step0_naive-lanes.png)\n")
        twins = {os.path.join(REPO, "plots", "reference", "h200-progression.zh-CN.png")}
        self.assertEqual(english_charts(zh_path, page, exists=twins.__contains__), [])
        bad = page.replace("progression.zh-CN.png", "progression.png")
        self.assertEqual(len(english_charts(zh_path, bad, exists=twins.__contains__)), 1)
        self.assertEqual(link_targets(bad), link_targets(page))

    def test_an_english_shell_comment_is_seen(self):
        ok = ("```sh\nmake y   # 构建\n./run -n 1M   # 通常输出 FAIL: timed run k gave ...\n"
              "# 在 GPU 机器上评分\n```\n\n```bash\n#!/usr/bin/env bash\nset -u\n```\n")
        self.assertEqual(english_shell_comments(ok), [])
        bad = ok.replace("# 在 GPU 机器上评分", "# grades it on the GPU machine")
        self.assertEqual(english_shell_comments(bad), ["# grades it on the GPU machine"])

    def test_code_in_other_languages_is_byte_for_byte(self):
        en = "```c\nint x; // sum\n```\n"
        self.assertNotEqual(fence_keys(en), fence_keys(en.replace("// sum", "// 和")))

    def test_shell_comments(self):
        self.assertEqual(strip_shell_comment("make y   # the one idea"), "make y")
        self.assertEqual(strip_shell_comment("# only a comment"), "")
        self.assertEqual(strip_shell_comment("echo \"exit $?\"  # why"), "echo \"exit $?\"")
        self.assertEqual(strip_shell_comment("sed 's/#define/x/' f"), "sed 's/#define/x/' f")
        self.assertEqual(strip_shell_comment("grep -c a#b"), "grep -c a#b")

    def test_diagram_words_are_labels(self):
        self.assertEqual(diagram_line_key("(2^24 + 1) + 1 = 2^24     each 1 is rounded away"),
                         diagram_line_key("(2^24 + 1) + 1 = 2^24     两个 1 各自被舍入掉"))
        self.assertEqual(diagram_line_key("level s = 4, warp 0 reads s_data[8*lane]:"),
                         ["=", "4", "0", "s_data[8*lane]"])

    # -------------------------------------------------------------- slugs and anchors

    def test_github_slugs(self):
        known = {
            "Step 9: Single pass": "step-9-single-pass",
            "第 9 步：单次遍历": "第-9-步单次遍历",
            "Learning path": "learning-path",
            "Why the GPU's tree beats a for loop": "why-the-gpus-tree-beats-a-for-loop",
            "Steps 6-9: a serial chain inside the tree": "steps-6-9-a-serial-chain-inside-the-tree",
            "Determinism: the same bits, when?": "determinism-the-same-bits-when",
            "Compensated accumulation (Kahan)": "compensated-accumulation-kahan",
            "确定性：什么时候结果逐位相同？": "确定性什么时候结果逐位相同",
            "为什么 GPU 的树形归约胜过 for 循环": "为什么-gpu-的树形归约胜过-for-循环",
            "common/: the harness every step shares": "common-the-harness-every-step-shares",
            "The CSV row (--csv FILE)": "the-csv-row---csv-file",
            "step9_singlepass — 单趟": "step9_singlepass--单趟",
        }
        for text, slug in known.items():
            with self.subTest(heading=text):
                self.assertEqual(github_slug(text), slug)
        self.assertEqual(github_slug(heading_text("The CSV row (`--csv FILE`)")),
                         "the-csv-row---csv-file")
        self.assertEqual(github_slug(heading_text("[Sources](x.md) and **more**")),
                         "sources-and-more")

    def test_repeated_headings_are_numbered(self):
        self.assertEqual(unique_slugs(["Check", "Notes", "Check", "Check", "Check-1"]),
                         ["check", "notes", "check-1", "check-2", "check-1-1"])

    def write_pages(self, folder, files):
        for name, text in files.items():
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)

    def test_a_broken_anchor_is_seen(self):
        with tempfile.TemporaryDirectory() as folder:
            self.write_pages(folder, {
                "README.md": "English\n# Top\n\n## Learning path\n\n## Results\n",
                "README.zh-CN.md": "简体中文\n# 顶\n\n## 学习路线\n\n## 结果\n",
                "s/README.md": "English\n[all](../README.md#learning-path) [me](#s) [x](#nope)\n\n# S\n"
                               "[gone](../missing.md)\n```\n# not a heading\n```\n",
                "s/README.zh-CN.md": "简体中文\n[全部](../README.zh-CN.md) [我](#s)\n\n# S\n",
            })
            en, zh = (os.path.join(folder, "s", n) for n in ("README.md", "README.zh-CN.md"))
            problems = broken_anchors(en)
            self.assertEqual(len(problems), 2, problems)
            self.assertIn("#nope", problems[0])
            self.assertIn("does not exist", problems[1])
            self.assertEqual(broken_anchors(zh), [])
            # The Chinese link lost its anchor: it should name the 学习路线 heading.
            pairs = anchor_pairs(en, zh)
            self.assertEqual(len(pairs), 1, pairs)
            self.assertIn("#学习路线", pairs[0])
            self.write_pages(folder, {"s/README.zh-CN.md":
                                      "简体中文\n[全部](../README.zh-CN.md#结果) [我](#s)\n\n# S\n"})
            self.assertIn("#学习路线", anchor_pairs(en, zh)[0])      # the wrong heading
            self.write_pages(folder, {"s/README.zh-CN.md":
                                      "简体中文\n[全部](../README.zh-CN.md#学习路线) [我](#s)\n\n# S\n"})
            self.assertEqual(anchor_pairs(en, zh), [])
            self.assertEqual(broken_anchors(zh), [])

    # -------------------------------------------------------------- English left in Chinese blocks

    def test_english_sentences(self):
        for chinese in ("测量于 NVIDIA H200（驱动 580.159.04，CUDA 13.0），代码版本 2fae644，"
                        "数据来自 plots/reference/h200.csv。",
                        "| step0_naive | 用 % 判断的交错寻址 | 330.7 | 406 |",
                        "| 程序 | random | positive | wide |\n| CPU Kahan float 循环 | 1.6e-12 |",
                        "先运行 `make profile-all then make docs`，再看 [图](a/b/c.png)。",
                        "![step7_shfl：5 层 __shfl_down_sync；lane i 加上 lane i + offset 的值](x.png)",
                        "误差 = |result − reference| / Σ|x|，u = 2^-24 ≈ 5.96e-08。",
                        "| 计数器 | 上一步（step0_naive） | 本步（step1_divergence） | 变化 |",
                        "| kernel 执行时间（ns） `gpu__time_duration.sum` | — | 319,200 | — |",
                        "{step0_naive, step1_divergence, step6_multi} · {cub}",
                        "| n | step8_vector us | step9_singlepass us | CUB us |"):
            with self.subTest(text=chinese):
                self.assertEqual(english_sentences(chinese), [])
        for english in ("| step0_naive | Interleaved addressing with %: the textbook first "
                        "tree, correct and slow. | 330.7 |",
                        "![step0_naive：which warps issue it](x.png)",
                        "Measured on NVIDIA H200 (driver 580.159.04, CUDA 13.0) at revision "
                        "2fae644, from plots/reference/h200.csv.",
                        "| counter | previous (—) | this step (step0_naive) | change |",
                        "| 计数器 | the previous step | this step | change |",
                        "| n | 中位数（微秒） | vs previous step |"):
            with self.subTest(text=english):
                self.assertEqual(len(english_sentences(english)), 1)

    def test_an_untranslated_generated_sentence_is_seen(self):
        english = ("Measured on NVIDIA H200 (driver 580.159.04, CUDA 13.0) at revision 2fae644, "
                   "from plots/reference/h200.csv.")
        page = ("[English](README.md) · 简体中文\n\n# 第 1 步：跨步索引\n\n<!-- BEGIN measured -->\n\n"
                "| n | 中位数（微秒） |\n|---|--:|\n| 2^25 | 209.1 |\n\n" + english + "\n\n"
                "<!-- END measured -->\n\n<!-- BEGIN diff -->\n\n```diff\n"
                "-// Interleaved addressing with %: the textbook first tree, correct and slow.\n"
                "```\n\n<!-- END diff -->\n\nSome English prose outside the blocks is the "
                "author's business.\n")
        self.assertEqual(generated_english(page), [("measured", english)])
        fixed = page.replace(english, "测量于 NVIDIA H200（驱动 580.159.04，CUDA 13.0），"
                                      "代码版本 2fae644，数据来自 plots/reference/h200.csv。")
        self.assertEqual(generated_english(fixed), [])

    def test_a_chinese_form_in_a_generator_is_seen(self):
        ok = ('STRINGS = {"win": "", "a": "", **rows_docs.STRINGS}\n'
              'STRINGS.update(rows_docs.STRINGS)\nSTRINGS.update({w: "" for w in WORDS})\n')
        self.assertEqual(strings_table_values(ok), [])
        self.assertEqual(strings_table_values('STRINGS = {\n    "win": "胜",\n}\n'), [2])
        self.assertEqual(strings_table_values(ok + 'STRINGS.update({"c": "丙"})\n'), [4])
        self.assertEqual(strings_table_values(ok + 'STRINGS.update({w: w for w in W})\n'), [4])
        self.assertEqual(strings_table_values(ok + 'STRINGS["d"] = "丁"\n'), [4])
        self.assertEqual(strings_table_values(ok + 'STRINGS.update(TABLE)\n'), [4])
        self.assertEqual(strings_table_values(ok + 'STRINGS.update({**ZH})\n'), [4])

    def test_a_chinese_form_in_a_text_table_is_seen(self):
        ok = 'TEXT = {\n    "a": "one",\n    "b": "two" " words",\n}\n'
        self.assertEqual(text_table_values(ok), [])
        self.assertEqual(chinese_lines(ok), [])
        both = 'TEXT = {\n    "a": "one",\n    "b": {"en": "two", "zh-CN": "二"},\n}\n'
        self.assertEqual(text_table_values(both), [3])
        self.assertEqual(chinese_lines(both), [3])
        self.assertEqual(text_table_values('TEXT = {"a": "一"}\n'), [1])
        self.assertEqual(text_table_values(ok + 'TEXT["c"] = ZH["c"]\n'), [5])
        self.assertEqual(text_table_values(ok + 'TEXT.update({"d": "丁"})\n'), [5])
        self.assertEqual(text_table_values(ok + 'TEXT.update(TABLE)\n'), [5])
        self.assertEqual(text_table_values('TEXT = dict(ZH)\n'), [1])
        self.assertEqual(chinese_lines(ok + '# 注释\n'), [5])

    def test_a_summary_without_a_chinese_form_is_seen(self):
        summaries = source_summaries()
        table = dict(zh_strings.SUMMARIES)
        step0 = os.path.join(REPO, "step0_naive", "reduce.cu")
        del table[summaries[step0]]
        self.assertEqual(missing_summaries(summaries, table), [step0])
        rows = [p for p in summaries if os.sep + "rows" + os.sep in p][0]
        table = dict(zh_strings.SUMMARIES)
        del table[summaries[rows]]
        self.assertEqual(missing_summaries(summaries, table), [rows])

    def test_a_students_step_falls_back_to_english_and_links_are_no_steps(self):
        """`make step0`, `make new NAME=step10_mine` and rows/step13_mine: the
        links are not counted, the student's lines need no Chinese form (the
        Chinese pages show them in English), a shipped step's still does."""
        with tempfile.TemporaryDirectory() as top:
            def source(rel, line1):
                os.makedirs(os.path.join(top, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(top, rel), "w", encoding="utf-8") as handle:
                    handle.write(f"// {line1}\n#include \"check.h\"\n")
            shipped = read(os.path.join(REPO, "step0_naive", "reduce.cu")).split("\n")[0][3:]
            source("step0_naive/reduce.cu", shipped)
            source("step10_mine/reduce.cu", "step10_mine: eight loads in flight.")
            source("rows/step3_vector/reduce.cu", "not a part 2 source: rows.cu is")
            source("rows/step13_mine/rows.cu", "rows/step13_mine: two rows a warp.")
            os.symlink("step0_naive", os.path.join(top, "step0"))
            os.symlink("step10_mine", os.path.join(top, "step10"))
            os.symlink("step13_mine", os.path.join(top, "rows", "step13"))
            summaries = source_summaries(top)
            self.assertEqual(sorted(os.path.relpath(p, top) for p in summaries),
                             ["rows/step13_mine/rows.cu", "step0_naive/reduce.cu",
                              "step10_mine/reduce.cu"])
            self.assertEqual(missing_summaries(summaries, zh_strings.SUMMARIES, top), [])
            self.assertEqual(zh_strings.summary("step10_mine: eight loads in flight.", "zh-CN"),
                             "step10_mine: eight loads in flight.")
            table = dict(zh_strings.SUMMARIES)
            del table[shipped]
            step0 = os.path.join(top, "step0_naive", "reduce.cu")
            self.assertEqual(missing_summaries(summaries, table, top), [step0])
            message = missing_summary_message([step0], summaries, top)
            self.assertIn("step0_naive/reduce.cu: line 1", message)
            self.assertIn("tools/zh_strings.py SUMMARIES", message)

    # -------------------------------------------------------------- glossary, headings, key

    def test_the_glossary_parses(self):
        terms, headings_map = parse_glossary(read(GLOSSARY))
        self.assertGreater(len(terms), 50)
        forms = {form: variants for chosen, variants in terms for form in chosen}
        self.assertEqual(forms["warp"], ["线程束", "线程卷"])
        self.assertEqual(forms["屏障"], [])           # an empty cell is no variant
        self.assertEqual(forms["谓词为假"], forms["谓词为真"])
        self.assertEqual(headings_map["Why it helps"], "为什么有效")
        table = "## 术语\n\n| English | 统一写法 | 不要写成 | 说明 |\n|---|---|---|---|\n" \
                "| a | 甲 | | `x` |\n| b | 乙 | `丙` `re:丁+` | |\n"
        self.assertEqual(parse_glossary(table)[0], [(["甲"], []), (["乙"], ["丙", "re:丁+"])])

    def test_a_variant_of_a_term_is_seen(self):
        terms, _ = parse_glossary(read(GLOSSARY))
        self.assertTrue(any("warp" in chosen for chosen, _ in terms))
        ok = ("每个 warp（线程束）有 32 个 lane，出现 bank 冲突时请求要分几轮完成。"
              "代码 `线程束` 和 “idle: its warp issues the instruction” 不算；"
              "`blockIdx.x`、step0_naive/、make step0 也不算，中位数 33.1 微秒。"
              "书名《CUDA 核函数优化：线程束发散》照原样引用；测试框架的多趟循环。")
        self.assertEqual(glossary_problems(ok, terms), [])
        for bad, variant in (("线程束分化让每个 warp 都慢", "线程束分化"),
                             ("这里有银行冲突", "银行冲突"),
                             ("这些线程束都在等", "线程束"),
                             ("step 2 的顺序寻址", r"re:(?i)(?<![A-Za-z_])steps? \d"),
                             ("耗时 33.1 us", r"re:(?<![A-Za-z_.])us(?![A-Za-z_])"),
                             ("每个 block 有 256 个线程", r"re:(?<![A-Za-z_./-])block(?![A-Za-z_.-])"),
                             ("一个 warp 发出一条指令", "发出"),
                             ("用成对求和得到参考值", "成对求和"),
                             ("每趟循环发射四条加载", "每趟循环"),
                             ("核函数优化：线程束发散", "核函数")):
            with self.subTest(page=bad):
                self.assertIn(variant, [v for v, _ in glossary_problems(bad, terms)])

    def test_the_settled_terms_and_ratios(self):
        # Issue 27: one word per idea across generated and hand-written text,
        # and no ratio written as "N 倍" after 快/慢/上升/..., which a careful
        # reader takes as 1 + N times.
        terms, _ = parse_glossary(read(GLOSSARY))
        variant_of = {variant: chosen for chosen, variants in terms for variant in variants}
        ratio = [v for v in variant_of if v.startswith("re:") and "倍" in v]
        self.assertEqual(len(ratio), 1, ratio)
        ratio = ratio[0]
        sector = [v for v in variant_of if "sector" in v][0]
        stream = [v for v in variant_of if v.startswith("re:") and "流" in v][0]
        launch = [v for v in variant_of if "启动" in v][0]
        base = [v for v in variant_of if "基准(" in v][0]
        ok = ("第 3 步的速度是第 2 步的 1.07 倍，快 7%；耗时是原来的 1.6 倍，指令数降到 0.41x，"
              "读冲突变为原来的约 67 倍，warp 指令数增加到 7.5 倍，`make -j4` 大约快一倍。每个请求 4 个扇区，"
              "计数器 `lts__t_sector_hit_rate.pct` 照写。每条加载指令、每个加载请求都读 16 字节。"
              "NCCL 在自己的 stream 上运行，流量不变。变异体 `sm_no_max` 由 `make mutants` 构建，"
              "错误样例 `drop_tail` 是手写的。"
              "复制 kernel 是参照。主机启动 kernel，线程块被调度到 SM 上；"
              "最后完成的线程块在同一次启动里把部分和加起来。")
        self.assertEqual(glossary_problems(ok, terms), [])
        planted = [
            ("第 3 步比第 2 步快 1.07 倍", ratio), ("PyTorch 快 9 倍", ratio),
            ("比它慢 3.5 倍", ratio), ("kernel 快了约 1.6 倍", ratio),
            ("DRAM 吞吐量上升约 1.3 倍", ratio), ("读指令下降约 40 倍", ratio),
            ("它提高了 2 倍", ratio), ("写指令下降约四倍", ratio), ("误差扩大一百倍", ratio),
            ("每个请求 4 个 sector", sector), ("32 字节的 sectors", sector),
            ("第一条读取指令", "读取指令"), ("每次全局读取请求", "读取请求"),
            ("两个归约在两个流上同时运行", stream), ("在默认流上启动", stream),
            ("用 CUDA 流", "CUDA 流"),
            ("突变体 `no_ticket_reset`", "突变体"),
            ("第 8 步要追的标杆", "标杆"), ("加速比的基准是", base),
            ("线程块不断启动、退出", launch), ("线程块的启动开销", launch),
        ]
        for bad, variant in planted:
            with self.subTest(page=bad):
                self.assertIn(variant, [v for v, _ in glossary_problems(bad, terms)])

    def test_the_words_of_issue_45(self):
        # Issue 45: significant bits are 有效位 (有效数字 counts decimal
        # digits), exp's argument is not 指数 (exp(x) is never <= 0), one
        # word for the row sum, for verify, for oversubscription and for the
        # lead of the drawn-from-the-code paragraphs.
        terms, _ = parse_glossary(read(GLOSSARY))
        variant_of = {variant: chosen for chosen, variants in terms for variant in variants}
        digits = [v for v in variant_of if "有效数字" in v]
        self.assertEqual(len(digits), 2, digits)
        exponent = [v for v in variant_of if v.startswith("re:指数")]
        self.assertEqual(len(exponent), 1, exponent)
        ok = ("bfloat16 只有 8 个有效位，float 有 24 个；float 大约有 7 位十进制有效数字，"
              "均值 128 也要丢掉几位有效数字。减去最大值之后，exp 的每个自变量都不大于 0，"
              "每个指数都不大于 1，指数之和不超过 cols。bfloat16 的指数位是 8 位。"
              "按行求和逐行使用容差；一次通过验证的运行；线程超订。**从代码画出来。**")
        self.assertEqual(glossary_problems(ok, terms), [])
        planted = [
            ("bfloat16 有 8 位有效数字", digits), ("有效数字却只有 8 位而不是 24 位", digits),
            ("bfloat16 存储 7 位尾数，有效数字却有 8 位", digits),
            ("却能让每个指数都不大于 0", exponent), ("每个指数都 <= 0", exponent),
            ("逐行求和：rows/step4_group 在各个形状上的结果", ["逐行求和"]),
            ("每个点是一次通过校验的运行", ["re:校验(?!和)"]),
            ("线程超额会让检查慢上好几倍", ["线程超额"]),
            ("**由代码画出。** 下面的图", ["由代码画出"]),
        ]
        for bad, variants in planted:
            with self.subTest(page=bad):
                found = [v for v, _ in glossary_problems(bad, terms)]
                self.assertTrue(set(found) & set(variants), (found, variants))

    def test_a_term_in_a_code_comment_is_seen(self):
        terms, _ = parse_glossary(read(GLOSSARY))
        page = ("```\nbaseline_cub/, rows/baseline_*/      各步要比的参照 (CUB，复制 kernel)\n```\n\n"
                "```sh\nmake -j4 step3   # 构建第 3 步\n```\n\n```c\n// 标杆 in C stays C\n```\n"
                "正文。\n")
        self.assertEqual(glossary_problems(code_words(page), terms), [])
        for bad in (page.replace("各步要比的参照", "衡量各步骤的标杆"),
                    page.replace("# 构建第 3 步", "# 构建 step 3")):
            with self.subTest(page=bad):
                self.assertEqual(len(glossary_problems(code_words(bad), terms)), 1)
        self.assertIn("标杆", code_words(page.replace("参照", "标杆")))
        self.assertNotIn("C stays C", code_words(page))

    def test_an_ascii_times_sign_is_seen(self):
        ok = ("在 32768 × 1024 上用时 1.55x，读一遍 x、写一遍 y，y = x，每个 x 都减去 M；"
              "命令 `--rows 32768 --cols 1024`、代码 `G x 32` 照写。\n\n<!-- BEGIN rows-results -->\n\n"
              "| 32768 x 1024 | 128 |\n\n<!-- END rows-results -->\n\n```\n2 x 5\n```\n")
        self.assertEqual(ascii_times(ok), [])
        for bad in ("batch 64 x 序列长度 512", "在 32768 x 1024 上", "|gamma_i| x rstd",
                    "峰值 = 2 x 显存时钟频率", "rows x cols 个 float", "(x - mean) x rstd",
                    "0 x inf 同样是 NaN", "至多 G x 32 个", "log2(n) x 2^-53",
                    "128 个线程 x 32 个 float", "随机符号 x [1, 2)", "rstd x（|x_i - mean|"):
            with self.subTest(page=bad):
                self.assertEqual(len(ascii_times(bad)), 1, ascii_times(bad))

    def test_a_mutant_called_a_fixture_is_seen(self):
        names = ["sm_no_max", "drop_last_block"]
        ok = "变异体 `sm_no_max`、错误样例 `drop_tail`、mutants.txt 里的错误样例；sm_no_max_x。"
        self.assertEqual(mutants_called_fixtures(ok, names), [])
        self.assertEqual(mutants_called_fixtures("错误样例 `sm_no_max` 不减最大值", names),
                         ["sm_no_max"])
        self.assertEqual(mutants_called_fixtures("mutants.txt 中的错误样例 drop_last_block。",
                                                 names), ["drop_last_block"])

    def test_a_heading_off_the_glossary_is_seen(self):
        _, headings_map = parse_glossary(read(GLOSSARY))
        en = "# Step 3: First add\n\n## What changed\n\n## Why it helps\n\n## Measured\n"
        self.assertEqual(heading_problems(en, "# 第 3 步：先加\n\n## 改动\n\n## 为什么有效\n\n"
                                              "## 实测\n", headings_map), [])
        bad = heading_problems(en, "# 第 3 步：先加\n\n## 改了什么\n\n## 为什么更快\n\n## 实测结果\n",
                               headings_map)
        self.assertEqual(len(bad), 3, bad)
        self.assertEqual(len(heading_problems(en, "# Step 3：先加\n\n## 改动\n\n## 为什么有效\n\n"
                                                  "## 实测\n", headings_map)), 1)

    def test_a_missing_figure_key_is_seen(self):
        page = ("<!-- BEGIN figures -->\n\n![a](../plots/diagrams/s-lanes.png)\n\n"
                "![b](../plots/diagrams/s-banks.png)\n\n<!-- END figures -->\n\n")
        self.assertIsNotNone(figure_key_problem(page + "下一段。\n"))
        self.assertIsNotNone(figure_key_problem(
            page + zh_strings.figure_key(["lanes"]) + "\n"))      # the banks part missing
        self.assertIsNone(figure_key_problem(page + zh_strings.figure_key(["lanes", "banks"])
                                             + "\n\n下一段。\n"))


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("editions", verbosity=1))
