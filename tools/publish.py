#!/usr/bin/env python3
"""make publish: a finished run's results become the committed reference.

`make bench`, `make profile-all`, `make accuracy` and `make determinism` write
into OUT_DIR (plots/results by default), every file named after the GPU:
<gpu>.csv, <gpu>-rows.csv, <gpu>-bench.log, <gpu>-profile.csv, ... This copies
that GPU's CSVs and logs, under the same names, into plots/reference instead
of running the benchmark again with OUT_DIR=plots/reference. Its charts are
not copied: `make publish` redraws the reference's charts, both languages,
from the files it published (`make plot`), so that a chart never disagrees
with the CSV beside it.

What is published: every top-level <gpu>.csv and <gpu>-*.csv / -*.log of
FROM, for the GPU whose results plots/reference holds (or, where it holds
none, the one GPU FROM holds). Other GPUs' files, other files (variance.csv,
nccl/) and hidden scratch files stay where they are.

It refuses, with one line and exit 2, and copies nothing, when
- FROM holds no results file of that GPU (nothing to publish);
- FROM holds only another GPU model's results than plots/reference does
  (one model's results live there: `make plot RESULTS=...` compares others);
- a file would replace a reference file that has programs it lacks (a run
  with ONLY= is merged with `make bench ONLY=... OUT_DIR=plots/reference`,
  not published over a full one);
- FROM is the reference itself.

  publish.py [--from DIR] [--to DIR] [--record-path FILE]
--record-path FILE: where the published <gpu>.csv's path is written (make
publish draws its charts).
"""
import argparse
import csv
import filecmp
import os
import shutil
import sys
import tempfile

import cli  # the exit codes
import schema  # gpu_slug

EXIT_USAGE = cli.EXIT_USAGE
KINDS = (".csv", ".log")   # data and logs; charts are redrawn, not copied


class PublishError(Exception):
    """A reason to publish nothing: one line for the user."""


def gpu_slugs(folder):
    """The GPU slugs named by the `gpu` column of folder's top-level CSVs."""
    slugs = set()
    for name in _files(folder):
        if not name.endswith(".csv"):
            continue
        try:
            with open(os.path.join(folder, name), newline="", encoding="utf-8") as handle:
                for row in csv.DictReader(handle):
                    if row.get("gpu"):
                        slugs.add(schema.gpu_slug(row["gpu"]))
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
    return slugs


def _files(folder):
    """folder's top-level plain files, hidden ones left out, sorted."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names
                  if not n.startswith(".") and os.path.isfile(os.path.join(folder, n)))


def files_of(folder, slug, slugs):
    """The files of folder that belong to GPU `slug`: <slug>.csv and
    <slug>-*.csv/.log, less those of a longer slug of `slugs` (h200-nvl's
    h200-nvl.csv is not h200's)."""
    longer = [s for s in slugs if s != slug and s.startswith(slug + "-")]
    found = []
    for name in _files(folder):
        if not name.endswith(KINDS):
            continue
        if name != slug + ".csv" and not name.startswith(slug + "-"):
            continue
        if any(name == s + ".csv" or name.startswith(s + "-") for s in longer):
            continue
        found.append(name)
    return found


def steps_in(path):
    """The programs (the `step` column) of a CSV, or None without that column."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if "step" not in (reader.fieldnames or ()):
                return None
            return {row["step"] for row in reader if row.get("step")}
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def reader_of(name):
    """The schema reader of a results file by its name (make plot reads it so)."""
    if "-profile" in name:
        return schema.load_profile
    if name.endswith("-multigpu.csv"):
        return schema.read_multigpu_sum
    if name.endswith("-allreduce.csv"):
        return schema.read_allreduce
    return schema.read_results


def plan(source, dest):
    """(slug, the names to copy) or PublishError; reads only."""
    if os.path.realpath(source) == os.path.realpath(dest):
        raise PublishError(f"{source} is the reference itself: nothing to publish")
    if not os.path.isdir(source):
        raise PublishError(f"nothing to publish: no {source} (make bench or make profile-all "
                           f"writes it)")
    have = gpu_slugs(source)
    if not have:
        raise PublishError(f"nothing to publish: {source} holds no results file "
                           f"(make bench or make profile-all writes them)")
    reference = gpu_slugs(dest)
    if len(reference) == 1:
        slug = next(iter(reference))
        if slug not in have:
            raise PublishError(
                f"{source} holds {', '.join(sorted(have))}'s results and {dest} holds "
                f"{slug}'s: one GPU model's results are published there (make plot "
                f"RESULTS={os.path.join(source, sorted(have)[0] + '.csv')} draws another's)")
    elif reference:
        raise PublishError(f"{dest} holds results of several GPUs ({', '.join(sorted(reference))}): "
                           f"nothing published")
    elif len(have) == 1:
        slug = next(iter(have))
    else:
        raise PublishError(f"{source} holds results of several GPUs ({', '.join(sorted(have))}) "
                           f"and {dest} none: move all but one away first")
    names = files_of(source, slug, have)
    if not any(n.endswith(".csv") for n in names):
        raise PublishError(f"nothing to publish: {source} holds no results file of {slug}")
    for name in names:   # a file make plot could not read never replaces the reference's
        if name.endswith(".csv"):
            try:
                reader_of(name)(os.path.join(source, name))
            except schema.SchemaError as err:
                raise PublishError(f"not published, a file does not read: {err}") from None
    for name in names:
        old = os.path.join(dest, name)
        if not name.endswith(".csv") or not os.path.isfile(old):
            continue
        before, after = steps_in(old), steps_in(os.path.join(source, name))
        lost = sorted(before - after) if before is not None and after is not None else []
        if lost:
            raise PublishError(
                f"{os.path.join(source, name)} lacks {len(lost)} of the programs of "
                f"{old} ({', '.join(lost[:3])}{', ...' if len(lost) > 3 else ''}): a partial run "
                f"(ONLY=) is merged with make bench ONLY=... OUT_DIR={dest}, not published")
    return slug, names


def copy(source, dest, names):
    """Copy each name, each file replaced whole (a temporary file renamed into
    place); returns the names whose bytes changed."""
    os.makedirs(dest, exist_ok=True)
    changed = []
    for name in names:
        src, dst = os.path.join(source, name), os.path.join(dest, name)
        if os.path.isfile(dst) and filecmp.cmp(src, dst, shallow=False):
            continue
        fd, tmp = tempfile.mkstemp(prefix=".publish-", dir=dest)
        os.close(fd)
        try:
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        changed.append(name)
    return changed


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        """argparse's usage errors in one line, exit 2."""
        print(f"publish: {message} (python3 tools/publish.py --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def main(argv=None):
    parser = _Parser(prog="publish.py",
                     description="Copy a finished run's CSVs and logs into the reference.")
    parser.add_argument("--from", dest="source", default=os.path.join("plots", "results"),
                        metavar="DIR", help="the run's folder (make's OUT_DIR; default plots/results)")
    parser.add_argument("--to", dest="dest", default=os.path.join("plots", "reference"),
                        metavar="DIR", help="the reference (default plots/reference)")
    parser.add_argument("--record-path", metavar="FILE",
                        help="write the published <gpu>.csv's path here")
    args = parser.parse_args(argv)
    for flag, path, folder in (("--to", args.dest, True), ("--record-path", args.record_path, False)):
        problem = cli.output_problem(path, folder)
        if problem:
            parser.error(f"{flag} {path}: {problem}")
    try:
        slug, names = plan(args.source, args.dest)
    except PublishError as err:
        print(f"publish: {err}", file=sys.stderr)
        return EXIT_USAGE
    changed = copy(args.source, args.dest, names)
    for name in names:
        print(f"publish: {os.path.join(args.dest, name)}"
              f"{'' if name in changed else ' (unchanged)'}")
    print(f"publish: {len(changed)} of {len(names)} files of {slug} changed")
    if args.record_path:
        with open(args.record_path, "w", encoding="utf-8") as handle:
            handle.write(os.path.join(args.dest, slug + ".csv") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
