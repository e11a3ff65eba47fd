#!/usr/bin/env python3
"""The English and Chinese editions stay in step. No GPU, no matplotlib.

Every page of the course (README.md at the top, in common/, extras/ and in
every shipped step, and ACCURACY.md) has a twin, <name>.zh-CN.md, and the two
must have:
  - the language switch on line 1;
  - the same headings, level by level, in the same order;
  - the same generated blocks, in the same order, with the same numbers in them
    (tools/docs.py fills both from the same files);
  - the same fenced code blocks, byte for byte;
  - the same inline code spans, in the same order (every command of every
    exercise's Check line is one);
  - the same link targets, in the same order (a link to another page goes to
    that page's twin in the Chinese edition).
So an edit to one edition that is not made in the other fails `make test`.
Ends with "editions: N passed, N failed".
"""
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import schema  # noqa: E402

ZH = ".zh-CN.md"
SWITCH_EN = "English · [简体中文]({twin})"
SWITCH_ZH = "[English]({page}) · 简体中文"
FENCE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1\s*$", re.M | re.S)
BLOCK = re.compile(r"^<!-- BEGIN (\S+) -->\s*$(.*?)^<!-- END \1 -->\s*$", re.M | re.S)
HEADING = re.compile(r"^(#{1,6}) ", re.M)
CODE_SPAN = re.compile(r"(`+)([^`]+?)\1")   # a span may wrap onto the next line
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def pages(root=ROOT):
    """[English page path] of every page that must have a Chinese twin."""
    found = [os.path.join(root, "README.md"), os.path.join(root, "ACCURACY.md")]
    for folder in ["common", "extras"] + list(schema.SHIPPED):
        found.append(os.path.join(root, schema.program_dir(folder), "README.md"))
    return [path for path in found if os.path.isfile(path)]


def twin(path):
    return path[:-len(".md")] + ZH


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def without(pattern, text):
    return pattern.sub("", text)


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


def normalize_link(target):
    """A Chinese page's link to a twin counts as the link to the English page."""
    path = target.split("#", 1)[0]
    return path[:-len(ZH)] + ".md" if path.endswith(ZH) else path


class EditionTests(unittest.TestCase):
    def pair(self, page):
        zh = twin(page)
        self.assertTrue(os.path.isfile(zh), f"{os.path.relpath(page, ROOT)} has no Chinese "
                                            f"edition {os.path.relpath(zh, ROOT)}")
        return read(page), read(zh)

    def each_page(self, check):
        for page in pages():
            with self.subTest(page=os.path.relpath(page, ROOT)):
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

    def test_same_generated_blocks_and_numbers(self):
        self.each_page(lambda page, en, zh: self.assertEqual(blocks(en), blocks(zh)))

    def test_same_code_blocks(self):
        self.each_page(lambda page, en, zh: self.assertEqual(fences(en), fences(zh)))

    def test_same_commands_and_code(self):
        self.each_page(lambda page, en, zh: self.assertEqual(code_spans(en), code_spans(zh)))

    def test_same_links(self):
        self.each_page(lambda page, en, zh: self.assertEqual(link_targets(en), link_targets(zh)))

    def test_links_between_chinese_pages_stay_chinese(self):
        # A Chinese reader following a link to another page lands on its twin.
        def check(page, en, zh):
            body = prose(zh).split("\n", 1)[-1]
            for m in LINK.finditer(body):
                path = m.group(1).split("#", 1)[0]
                if os.path.basename(path) in ("README.md", "ACCURACY.md"):
                    self.fail(f"the Chinese page links to the English {path}")
        self.each_page(check)


class CheckerTests(unittest.TestCase):
    """The comparisons above can fail: a drifted twin is caught."""

    EN = ("English · [简体中文](README.zh-CN.md)\n\n# T\n\n## A\n\nRun `make x` and see "
          "[s1](../step1_divergence/README.md).\n\n<!-- BEGIN measured -->\n\n| 1.5 | 2 |\n\n"
          "<!-- END measured -->\n\n```sh\nmake y\n```\n")
    ZH_OK = ("[English](README.md) · 简体中文\n\n# 标题\n\n## 甲\n\n运行 `make x`，参见 "
             "[s1](../step1_divergence/README.zh-CN.md)。\n\n<!-- BEGIN measured -->\n\n| 1.5 | 2 |\n\n"
             "<!-- END measured -->\n\n```sh\nmake y\n```\n")

    def test_a_faithful_twin_passes(self):
        self.assertEqual(headings(self.EN), headings(self.ZH_OK))
        self.assertEqual(blocks(self.EN), blocks(self.ZH_OK))
        self.assertEqual(fences(self.EN), fences(self.ZH_OK))
        self.assertEqual(code_spans(self.EN), code_spans(self.ZH_OK))
        self.assertEqual(link_targets(self.EN), link_targets(self.ZH_OK))

    def test_each_kind_of_drift_is_seen(self):
        drifts = {
            "a heading": (headings, self.ZH_OK.replace("## 甲", "### 甲")),
            "a number in a block": (blocks, self.ZH_OK.replace("| 1.5 |", "| 1.6 |")),
            "a code block": (fences, self.ZH_OK.replace("make y", "make z")),
            "a command": (code_spans, self.ZH_OK.replace("`make x`", "`make xx`")),
            "a link": (link_targets, self.ZH_OK.replace("step1_divergence", "step2_bankconflict")),
        }
        for what, (extract, zh) in drifts.items():
            with self.subTest(drift=what):
                self.assertNotEqual(extract(self.EN), extract(zh))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from counting import run_module
    sys.exit(run_module("editions", verbosity=1))
