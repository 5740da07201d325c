"""Nsight Compute for the CUDA GEMM benches: find ``ncu``, run it on a child process of the bench
(``SCRIPT --profile-only TAGS`` launches each kernel once), and summarise its CSV as one line a
metric and the sampled stalls before / after the k-loop. Split out of bench_gemm_cuda_s8i2.py
(session 8's int32 argmax profile), which is its one user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

NCU_METRICS = (
    "gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,"
    "smsp__issue_active.avg.pct_of_peak_sustained_active,"
    "sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,"
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,"
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,"
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,"
    "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,"
    "l1tex__throughput.avg.pct_of_peak_sustained_active,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors_srcunit_tex_op_read.sum,"
    "dram__bytes_read.sum,"
    + ",".join(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in (
        "barrier", "long_scoreboard", "short_scoreboard", "math_pipe_throttle", "wait", "not_selected",
        "selected", "mio_throttle", "lg_throttle", "dispatch_stall", "no_instruction",
        "branch_resolving")))


def find_ncu():
    for c in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu", *sorted(Path("/opt/nvidia").glob(
            "nsight-compute/*/ncu")), *sorted(Path("/usr/local").glob("cuda*/bin/ncu"))):
        if c and Path(c).is_file():
            return str(c)
    return None


def known_metrics(ncu, log):
    """NCU_METRICS less the names this ncu does not know (``--query-metrics``), so one unknown name
    does not void the whole profile."""
    want = NCU_METRICS.split(",")
    try:
        q = subprocess.run([ncu, "--query-metrics", "--chip", "gh100"], capture_output=True, text=True,
                           timeout=20).stdout
        base = {ln.split()[0] for ln in q.splitlines() if ln.strip() and "__" in ln.split()[0]}
        keep = [m for m in want if m.split(".")[0] in base]
        if len(keep) >= len(want) // 2:
            if len(keep) < len(want):
                log(f"ncu: not known here, dropped: {sorted(set(want) - set(keep))}")
            return keep
    except Exception as e:  # noqa: BLE001 - then ask for all of them
        log(f"ncu --query-metrics failed ({e}); asking for every metric")
    return want


def run_ncu(json_path, script, tags, source_tags, log):
    """Nsight Compute on one launch of each kernel (a child process of this script, --profile-only):
    metrics first, then the sampled stalls by SASS line for ``w`` (the library's as of main) and E4."""
    ncu = find_ncu()
    if ncu is None:
        log("ncu: not found on this machine; the profile is skipped")
        return
    txt = Path(json_path).with_suffix(".ncu.txt")
    me = [sys.executable, str(Path(script).resolve()), "--profile-only"]
    env = dict(os.environ)
    base = [ncu, "--target-processes", "application-only", "-k", "regex:sr_gemm", "--csv"]
    sections = ["--section", "Occupancy", "--section", "LaunchStats", "--section", "WarpStateStats",
                "--section", "SchedulerStats"]
    tries = (("metrics", [*sections, "--metrics", ",".join(known_metrics(ncu, log))]),
             ("sections only (the metric list failed)", sections))
    for what, opts in tries:
        t0 = time.perf_counter()
        try:
            r = subprocess.run([*base, *opts, *me, ",".join(tags)], capture_output=True, text=True,
                               timeout=75, env=env)
        except subprocess.TimeoutExpired as e:
            txt.write_text(str(e.stdout or "") + str(e.stderr or ""))
            log(f"ncu {what}: timed out after 75 s (partial output in {txt})")
            break
        txt.write_text(r.stdout + r.stderr)
        log(f"ncu {what}: rc {r.returncode}, {time.perf_counter() - t0:.0f} s, {txt}")
        if summarize_metrics(r.stdout, tags, log):
            break
        log(r.stdout[-2000:] + r.stderr[-2000:])
    src = Path(json_path).with_suffix(".ncu_src.csv")
    cmd = [ncu, "--target-processes", "application-only", "-k", "regex:sr_gemm", "--section",
           "SourceCounters", "--page", "source", "--print-source", "sass", "--csv", *me,
           ",".join(source_tags)]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=45, env=env)
        src.write_text(r.stdout + r.stderr)
        log(f"ncu source page: rc {r.returncode}, {time.perf_counter() - t0:.0f} s, {src}")
        summarize_source(r.stdout, log)
    except subprocess.TimeoutExpired:
        log("ncu source page: timed out after 45 s")


def summarize_metrics(text, tags, log):
    """ncu's CSV (one row a kernel and metric) as one line a metric, a column a kernel (the child
    launches them in ``tags``' order); False when it holds no result."""
    import csv
    import io

    rows = [r for r in csv.reader(io.StringIO(text)) if len(r) >= 4]
    if not rows or "Metric Name" not in rows[0]:
        return False
    h = rows[0]
    ii, ni, vi, ui = h.index("ID"), h.index("Metric Name"), h.index("Metric Value"), h.index("Metric Unit")
    table, ids = {}, []
    for r in rows[1:]:
        if len(r) < len(h):
            continue
        if r[ii] not in ids:
            ids.append(r[ii])
        table.setdefault((r[ni], r[ui]), {})[r[ii]] = r[vi]
    if not table:
        return False
    names = [tags[i] if i < len(tags) else f"#{x}" for i, x in enumerate(ids)]
    log("ncu " + " | ".join(["metric", *names]))
    for (metric, unit), vals in table.items():
        log(f"ncu {metric} [{unit}] | " + " | ".join(vals.get(x, "-") for x in ids))
    return True


def summarize_source(text, log):
    """Best effort: each kernel's sampled warp stalls split at its k-loop's end (the first backward
    branch after the last BAR.SYNC), so the epilogue's share is one number."""
    import csv
    import io
    import re

    rows = list(csv.reader(io.StringIO(text)))
    head = [i for i, r in enumerate(rows) if any("Source" == c.strip() for c in r)]
    for h in head:
        cols = rows[h]
        try:
            si = [c.strip() for c in cols].index("Source")
            ai = next(i for i, c in enumerate(cols) if c.strip() == "Address")
            wi = next(i for i, c in enumerate(cols) if "Sampling (All" in c)
        except (ValueError, StopIteration):
            continue
        body = []
        for r in rows[h + 1:]:
            if len(r) <= max(si, ai, wi) or not r[ai].strip().lower().startswith("0x"):
                break
            try:
                body.append((int(r[ai], 16), r[si], float(r[wi] or 0)))
            except ValueError:
                break
        bars = [i for i, (_, s, _) in enumerate(body) if "BAR.SYNC" in s]
        if not body or not bars:
            continue
        end = len(body) - 1
        for i in range(bars[-1], len(body)):
            m = re.search(r"BRA\s+(?:`\()?\.?\w*?\s*0x([0-9a-f]+)", body[i][1])
            if m and int(m.group(1), 16) < body[i][0]:
                end = i
                break
        total = sum(x for _, _, x in body) or 1.0
        before = sum(x for _, _, x in body[:end + 1])
        log(f"ncu samples: {total:.0f} in all, k-loop and before {before / total:.1%}, after (the "
            f"epilogue) {1 - before / total:.1%}")
