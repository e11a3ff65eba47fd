#!/usr/bin/env python3
"""CPU tests for tools/profile.py (make profile, the profile half of
make profile-all): ncu's raw page read, units, step names, the summary table,
and runs of the fakes of tests/fakes.py under a fake ncu that prints what ncu
prints (its errors included). No GPU, no ncu needed.
Run: python3 tests/test_profile.py
"""
import csv
import io
import os
import sys
from unittest import mock

from fakes import (CUB_KERNEL, FAKE_TOOLCHAIN, NCU_SAMPLE, PROFILE, ROW_KERNELS,
                   ROW_LABELS, ROW_PROGRAMS, STEP_KERNEL, ScriptTest, fake_hash, load, make_ncu,
                   size_of, write_executable)

import schema

profile = load(PROFILE, "reduce_profile")


def ncu_output(kernel=STEP_KERNEL):
    """What ncu --csv --page raw prints for one kernel, with its log lines around it."""
    names = sorted(NCU_SAMPLE)
    out = io.StringIO()
    out.write("==PROF== Connected to process 4242 (/x/step1_b/run)\nstep1_b: n=1024 ok\n")
    out.write('==PROF== Profiling "reduce_kernel" - 0: 0%....50%....100% - 9 passes\n')
    out.write("==PROF== Disconnected from process 4242\n")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["ID", "Process ID", "Process Name", "Host Name", "Kernel Name"] + names)
    writer.writerow([""] * 5 + [NCU_SAMPLE[m][0] for m in names])
    writer.writerow(["0", "4242", "run", "host", kernel] + [NCU_SAMPLE[m][1] for m in names])
    return out.getvalue()


class ProfileUnitTest(ScriptTest):
    def test_parse_raw_page(self):
        [(kernel, metrics)] = profile.parse_ncu_raw(ncu_output())
        self.assertEqual(kernel, "reduce_kernel<256>")
        values = {m: (v, u) for m, v, u in metrics}
        self.assertEqual([m for m, _, _ in metrics], list(profile.METRICS))
        self.assertAlmostEqual(values["gpu__time_duration.sum"][0], 176420.0)
        self.assertEqual(values["gpu__time_duration.sum"][1], "ns")
        self.assertEqual(values["smsp__inst_executed.sum"], (1234567.0, "inst"))
        self.assertAlmostEqual(values["dram__bytes_read.sum"][0], 134.22e6)
        self.assertEqual(values["launch__shared_mem_per_block_static"][1], "byte/block")
        self.assertEqual(values["launch__grid_size"], (131072.0, ""))

    def test_parse_without_csv_is_empty(self):
        self.assertEqual(profile.parse_ncu_raw("==WARNING== No kernels were profiled.\n"), [])

    def test_short_kernel_names(self):
        self.assertEqual(profile.short_kernel(STEP_KERNEL), "reduce_kernel<256>")
        self.assertEqual(profile.short_kernel("reduce_kernel"), "reduce_kernel")
        self.assertTrue(profile.short_kernel(CUB_KERNEL).endswith("float>"))

    def test_units(self):
        self.assertEqual(profile.to_base_unit(2.0, "msecond"), (2e6, "ns"))
        self.assertEqual(profile.to_base_unit(3.0, "Gbyte"), (3e9, "byte"))
        self.assertEqual(profile.to_base_unit(1.0, "Kibyte"), (1024.0, "byte"))
        self.assertEqual(profile.to_base_unit(50.0, "%"), (50.0, "%"))

    def test_rejected_metric_picks_the_whole_name(self):
        line = r"==ERROR== Failed to find metric regex:^smsp__inst_executed_op_shared_ld\.(sum)$"
        self.assertEqual(profile.rejected_metric(line), "smsp__inst_executed_op_shared_ld.sum")

    def test_select_step(self):
        self.assertEqual(profile.select_programs(self.root, "1"), ["step1_b"])
        self.assertEqual(profile.select_programs(self.root, "10"), ["step10_c"])
        self.assertEqual(profile.select_programs(self.root, "cub"), ["baseline_cub"])
        self.assertEqual(profile.select_programs(self.root, "step0_a"), ["step0_a"])
        with self.assertRaises(profile.ProfileError) as caught:
            profile.select_programs(self.root, "7")
        self.assertEqual(caught.exception.code, 2)

    def test_select_row_program(self):
        self.add_rows_programs()
        self.assertEqual(profile.select_programs(self.root, "0", rows=True), ["rows/step0_thread"])
        self.assertEqual(profile.select_programs(self.root, "rows/5", rows=True),
                         ["rows/step5_layernorm"])
        self.assertEqual(profile.select_programs(self.root, "cub", rows=True),
                         ["rows/baseline_cub"])
        self.assertEqual(profile.select_programs(self.root, "rows/copy", rows=True),
                         ["rows/baseline_copy"])
        self.assertEqual(profile.select_programs(self.root, None, rows=True), list(ROW_PROGRAMS))
        self.assertEqual([profile.profile_label(n) for n in ROW_PROGRAMS], list(ROW_LABELS))
        self.assertEqual({profile.kernel_regex(n) for n in ROW_PROGRAMS}, {profile.ROW_KERNEL_RE})
        for kernel in ROW_KERNELS.values():
            self.assertRegex(kernel.split("(")[0], profile.ROW_KERNEL_RE)
        self.assertNotRegex(STEP_KERNEL, profile.ROW_KERNEL_RE)

    def test_version_line_with_and_without_the_build_tail(self):
        for line in (f"step3_idle code_hash=0123456789ab git_rev=abc1234 arch=sm_75 sm_80 sm_90 "
                     f"toolchain={FAKE_TOOLCHAIN}",
                     "rows/cub code_hash=0123456789ab git_rev=abc1234-dirty arch=sm_90 "
                     "toolchain=nvcc 12.4.131 CCCL 2.3.2",
                     "step3_idle code_hash=0123456789ab git_rev=abc1234"):
            match = profile.VERSION_RE.match(line)
            self.assertTrue(match, line)
            self.assertEqual(match.group(2), "0123456789ab")
            self.assertIn(match.group(3), ("abc1234", "abc1234-dirty"))
        self.assertIsNone(profile.VERSION_RE.match("step3_idle code_hash=0123 git_rev=abc"))

    def test_ncu_fallback_picks_newest(self):
        for version in ("2023.1.0", "2025.3.1", "2024.10.0"):
            write_executable(os.path.join(self.top, "opt", version, "ncu"), "#!/bin/sh\n")
        pattern = os.path.join(self.top, "opt", "*", "ncu")
        with mock.patch.dict(os.environ, {"PATH": self.top}):
            found = profile.find_ncu([os.path.join(self.top, "nowhere"), pattern])
        self.assertEqual(found, os.path.join(self.top, "opt", "2025.3.1", "ncu"))

    def test_summary_table_fits_100_columns(self):
        [(kernel, metrics)] = profile.parse_ncu_raw(ncu_output())
        labels = ["step0_naive", "step10_a_long_student_name", "cub"]
        table = profile.summary_table([(label, kernel, metrics) for label in labels])
        self.assertTrue(all(len(line) <= 100 for line in table.splitlines()), table)
        cells = table.splitlines()[1].split()
        # time_us, warp_inst, thr/inst, on/inst (24,691,340 / 1,234,567 lanes), bank_ld
        self.assertEqual(cells[1:6], ["176", "1.23M", "31.9", "20", "12.3k"])
        self.assertEqual(cells[-1], "1020")  # static + dynamic shared memory

    def test_compact_numbers(self):
        cases = {None: "-", 0.0: "0", 9999.0: "9999", 12345.0: "12.3k", 45.25: "45.2",
                 1234.5: "1234", 2.5e9: "2.5G"}
        for value, text in cases.items():
            self.assertEqual(profile.compact(value), text, value)


class ProfileRunTest(ScriptTest):
    def setUp(self):
        super().setUp()
        self.bindir = make_ncu(self.top)
        self.ncu_log = os.path.join(self.top, "ncu.log")

    def profile(self, *args, **env):
        env.setdefault("PATH", self.bindir + os.pathsep + os.environ.get("PATH", ""))
        return self.run_script(PROFILE, ["--root", self.root] + list(args),
                               FAKE_NCU_LOG=self.ncu_log, **env)

    def test_step_prints_metric_table(self):
        proc = self.profile("--step", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("step1_b: reduce_kernel<256>", proc.stdout)
        self.assertRegex(proc.stdout, r"smsp__inst_executed\.sum\s+1,234,567  inst")
        with open(self.ncu_log) as f:
            argv = f.read().split()
        self.assertEqual(argv[:9], ["--clock-control", "none", "--target-processes", "all",
                                    "--kernel-name", "regex:reduce_kernel", "--launch-count", "1",
                                    "--csv"])
        self.assertEqual(argv[-3:], ["--check", "-n", "33554432"])
        self.assertEqual(argv[argv.index("--metrics") + 1].split(","), list(profile.METRICS))

    def test_all_writes_long_csv(self):
        out = os.path.join(self.top, "prof", "{gpu}.csv")
        proc = self.profile("--all", "--csv", out, "-n", "1048576")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        path = os.path.join(self.top, "prof", "h200.csv")
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        with open(path) as f:
            self.assertEqual(f.readline().strip(),
                             "step,kernel,metric,value,unit,gpu,git_rev,code_hash")
        self.assertEqual(len(rows), 4 * len(profile.METRICS))
        self.assertEqual([r["step"] for r in rows[::len(profile.METRICS)]],
                         ["step0_a", "step1_b", "step10_c", "cub"])
        first = rows[0]
        self.assertEqual((first["kernel"], first["metric"], first["value"], first["unit"]),
                         ("reduce_kernel<256>", "gpu__time_duration.sum", "176420", "ns"))
        # The GPU from the program's CSV row; revision and hash from its --version.
        self.assertEqual((first["gpu"], first["git_rev"], first["code_hash"]),
                         ("NVIDIA H200", "vstep0", fake_hash("step0_a")))
        self.assertEqual({r["code_hash"] for r in rows if r["step"] == "cub"}, {fake_hash("cub")})
        self.assertEqual({r["step"]: r["code_hash"] for r in rows},
                         {s: fake_hash(s) for s in ("step0_a", "step1_b", "step10_c", "cub")})
        cub = [r for r in rows if r["step"] == "cub"]
        self.assertTrue(cub[0]["kernel"].endswith("DeviceReduceKernel<cub::detail::reduce::"
                                                  "Policy900, const float *, int, "
                                                  "cuda::std::plus<void>, float>"))
        with open(self.ncu_log) as f:
            calls = f.read().splitlines()
        self.assertIn("regex:DeviceReduceKernel", calls[-1])
        self.assertTrue(all("-n 1048576" in call for call in calls))
        table = proc.stdout.splitlines()
        self.assertTrue(table[0].startswith("step ") and "time_us" in table[0])
        self.assertEqual([line.split()[0] for line in table[1:5]],
                         ["step0_a", "step1_b", "step10_c", "cub"])

    def test_out_dir_names_file_after_gpu(self):
        out = os.path.join(self.top, "results")
        proc = self.profile("--step", "cub", "--out-dir", out, FAKE_GPU="NVIDIA H200")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(out), ["h200-profile.csv"])
        with open(os.path.join(out, "h200-profile.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({r["step"] for r in rows}, {"cub"})
        self.assertEqual(len(rows), len(profile.METRICS))

    def test_paths_it_cannot_write_are_said_before_ncu(self):
        a_file = os.path.join(self.top, "a-file")
        open(a_file, "w").close()
        for args, said in ((["--csv", self.top], "--csv"), (["--out-dir", a_file], "--out-dir"),
                           (["--merge-into", a_file], "--merge-into")):
            proc = self.profile("--all", *args)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn(f"profile.py: error: {said} ", proc.stderr)
        self.assertFalse(os.path.exists(self.ncu_log))  # stopped before running ncu
        proc = self.profile("--rows", "--step", "0", "--shape", "0x5")
        self.assertEqual(proc.returncode, 2)

    def test_old_build_without_version(self):
        proc = self.profile("--all", "--csv", os.path.join(self.top, "p.csv"), FAKE_NO_VERSION="1")
        self.assertEqual(proc.returncode, 2)
        line = self.assert_one_line(proc.stderr, "profile: ")
        self.assertIn("step0_a/run --version did not print", line)
        self.assertIn("rebuild it with make", line)
        self.assertFalse(os.path.exists(self.ncu_log))  # stopped before running ncu
        # Without --csv no hash is needed: one step still profiles.
        self.assertEqual(self.profile("--step", "1", FAKE_NO_VERSION="1").returncode, 0)

    def test_counters_not_permitted(self):
        proc = self.profile("--step", "0", FAKE_NCU_MODE="perm")
        self.assertEqual(proc.returncode, 5)
        line = self.assert_one_line(proc.stderr, "profile: ")
        self.assertIn("ERR_NVGPUCTRPERM", line)
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", line)

    def test_unknown_metric(self):
        proc = self.profile("--step", "0", FAKE_NCU_MODE="badmetric")
        self.assertEqual(proc.returncode, 4)
        line = self.assert_one_line(proc.stderr, "profile: ncu rejected metric ")
        self.assertIn("smsp__inst_executed_op_shared_ld.sum", line)

    def test_silently_dropped_metric(self):
        proc = self.profile("--step", "0", FAKE_NCU_MODE="dropmetric")
        self.assertEqual(proc.returncode, 4)
        line = self.assert_one_line(proc.stderr, "profile: ncu did not report metric ")
        self.assertIn("launch__grid_size", line)

    def test_no_kernel_profiled(self):
        proc = self.profile("--step", "cub", FAKE_NCU_MODE="nokernel")
        self.assertEqual(proc.returncode, 4)
        self.assert_one_line(proc.stderr, "profile: baseline_cub: No kernels were profiled.")

    def test_no_device_under_ncu(self):
        proc = self.profile("--step", "10", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "profile: no CUDA device: ")
        self.assertEqual(line, "profile: no CUDA device: no CUDA-capable device is detected")

    def test_no_device_in_gpu_probe(self):
        proc = self.profile("--all", "--csv", os.path.join(self.top, "p.csv"), FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "profile: no CUDA device: ")
        self.assertEqual(line, "profile: no CUDA device: no CUDA-capable device is detected")
        self.assertFalse(os.path.exists(self.ncu_log))  # stopped before running ncu

    def test_ncu_not_found(self):
        empty = os.path.join(self.top, "empty")
        os.makedirs(empty)
        proc = self.profile("--step", "0", PATH=empty, REDUCE_NCU_PATHS="")
        self.assertEqual(proc.returncode, 4)   # 3 is no device, in every tool
        line = self.assert_one_line(proc.stderr, "profile: ")
        self.assertEqual(line, "profile: ncu (Nsight Compute) not found; "
                               "install it or add it to PATH")

    def test_no_device_and_no_ncu_says_no_device(self):
        # a laptop with neither: ncu would not help, the missing GPU is the answer
        empty = os.path.join(self.top, "empty")
        os.makedirs(empty)
        proc = self.profile("--step", "0", PATH=empty, REDUCE_NCU_PATHS="", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        self.assert_one_line(proc.stderr, "profile: no CUDA device: ")

    def test_rows_profile_of_every_part_2_program(self):
        self.add_rows_programs()
        out = os.path.join(self.top, "results")
        proc = self.profile("--all", "--rows", "--out-dir", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(out), ["h200-rows-profile.csv"])
        rows = schema.load_profile(os.path.join(out, "h200-rows-profile.csv"))
        self.assertEqual(len(rows), len(ROW_PROGRAMS) * len(profile.METRICS))
        self.assertEqual([r.step for r in rows[::len(profile.METRICS)]], list(ROW_LABELS))
        self.assertEqual({r.step: (r.code_hash, r.git_rev) for r in rows},
                         {label: (fake_hash(label), "v" + os.path.basename(name)[:5])
                          for name, label in zip(ROW_PROGRAMS, ROW_LABELS)})
        self.assertEqual([r.kernel for r in rows[::len(profile.METRICS)]],
                         ["row_sum_kernel<256>", "layernorm_kernel<256>", "copy_kernel",
                          ROW_KERNELS["cub"].split("(")[0][len("void "):]])
        self.assertEqual({r.gpu for r in rows}, {"NVIDIA H200"})
        with open(self.ncu_log) as f:
            calls = [line.split() for line in f]
        self.assertEqual(len(calls), len(ROW_PROGRAMS))
        for call in calls:
            self.assertEqual(call[call.index("--kernel-name") + 1],
                             "regex:" + profile.ROW_KERNEL_RE)
            self.assertEqual(call[-5:], ["--check", "--rows", "32768", "--cols", "1024"])
        table = proc.stdout.splitlines()
        self.assertEqual([line.split()[0] for line in table[1:5]], list(ROW_LABELS))
        # The probe for the GPU's name ran a tiny shape without checks.
        [(_, step, argv, _, _)] = [p for p in self.processes() if "--no-verify" in p[2]]
        self.assertEqual((step, size_of(argv)), ("rows/step0_thread", "4x256"))

    def test_only_profiles_the_named_and_the_step_before_and_merges(self):
        self.add_rows_programs()
        full, mine = os.path.join(self.top, "full"), os.path.join(self.top, "mine")
        self.assertEqual(self.profile("--all", "--rows", "--out-dir", full).returncode, 0)
        before = schema.load_profile(os.path.join(full, "h200-rows-profile.csv"))
        os.remove(self.ncu_log)
        proc = self.profile("--only", "rows/step5_layernorm", "--rows", "--shape", "8192x4097",
                            "--out-dir", mine, "--merge-into", full)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # This profile alone under --out-dir, at its shape's own file name.
        self.assertEqual(os.listdir(mine), ["h200-rows-profile-8192x4097.csv"])
        alone = schema.load_profile(os.path.join(mine, "h200-rows-profile-8192x4097.csv"))
        self.assertEqual(sorted({r.step for r in alone}),
                         ["rows/step0_thread", "rows/step5_layernorm"])
        self.assertEqual(sorted(os.listdir(full)), ["h200-rows-profile-8192x4097.csv",
                                                    "h200-rows-profile.csv"])
        # Merged into the default shape's file too? No: each shape its file.
        self.assertEqual(schema.load_profile(os.path.join(full, "h200-rows-profile.csv")), before)
        proc = self.profile("--only", "rows/step5_layernorm", "--rows", "--out-dir", mine,
                            "--merge-into", full)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        merged = schema.load_profile(os.path.join(full, "h200-rows-profile.csv"))
        self.assertEqual(sorted({r.step for r in merged}), sorted(ROW_LABELS))
        self.assertEqual(len(merged), len(before))
        # A part 1 profile of part 2's names: nothing to do, said in one line.
        proc = self.profile("--only", "rows/step5_layernorm", "--out-dir", mine)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("names no part 1 program", proc.stdout)

    def test_rows_step_and_shape(self):
        self.add_rows_programs()
        proc = self.profile("--step", "rows/cub", "--shape", "256x4096")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("rows/cub: cub::CUB_300000_SM_900::detail::reduce::"
                      "DeviceSegmentedReduceKernel<", proc.stdout)
        with open(self.ncu_log) as f:
            argv = f.read().split()
        self.assertEqual(argv[-5:], ["--check", "--rows", "256", "--cols", "4096"])
        self.assertEqual(argv[-6], os.path.join(self.root, "rows", "baseline_cub", "run"))
        # Part 1's step of the same number is another program.
        self.assertEqual(self.profile("--step", "0").returncode, 0)
        with open(self.ncu_log) as f:
            self.assertEqual(f.read().splitlines()[-1].split()[-3:], ["--check", "-n", "33554432"])

    def test_unbuilt_step(self):
        os.remove(os.path.join(self.root, "step10_c", "run"))
        open(os.path.join(self.root, "step10_c", "reduce.cu"), "w").close()
        proc = self.profile("--step", "10")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "profile: not built: step10_c/run")
        self.assertEqual(self.profile("--step", "1").returncode, 0)  # others still profile


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("profile", verbosity=1))
