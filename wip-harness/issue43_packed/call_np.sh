#!/usr/bin/env bash
# Session 23: how much of bfloat16 LayerNorm's time at the vocabulary widths
# goes to gamma and beta. noparams.py's s25np and lb48np (step 25 and lb48
# with gamma and beta never read; --no-verify, their y is wrong) timed A B A B
# beside step 25, lb48 and the bfloat16 copy, then L1 and L2 counters of step
# 25 and s25np at 2670 x 50257 and of step 25 at 1024 x 32768.
#   bash wip-harness/issue43_packed/call_np.sh GIT_REV   (log: $OUT/np.log)
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
make -s -j16 rows/step25_bf16_packed/run rows/baseline_copy16/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
{ python3 wip-harness/issue43_packed/lnbulk.py; python3 wip-harness/issue43_packed/noparams.py; } > build/np.txt || exit 1
declare -A P
while read -r name base src; do
    P[$name]=$(bash tools/grade_source.sh --build-only "$src") || { echo "no build: $name"; exit 1; }
done < build/np.txt
echo "== built in $((SECONDS - T0)) s"
for shape in "--rows 1024 --cols 32768" "--rows 1024 --cols 40000" "--rows 2670 --cols 50257" "--rows 2048 --cols 65536" \
             "--rows 512 --cols 128256" "--rows 883 --cols 151936"; do
    for k in 1 2; do
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step25_bf16_packed/run "${P[s25np]}" "${P[lb48]}" "${P[lb48np]}"; do
            flags=$([ $k = 1 ] && case $p in *np/run) echo "--no-verify";; esac || echo "--no-verify")
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active
for run in "rows/step25_bf16_packed/run --rows 2670 --cols 50257" "${P[s25np]} --rows 2670 --cols 50257" \
           "rows/step25_bf16_packed/run --rows 1024 --cols 32768" "${P[lb48]} --rows 2670 --cols 50257"; do
    echo "  ncu $run:"
    timeout 90 ncu --clock-control none -k regex:layernorm --metrics $M $run --reps 1 --warmup 0 --no-verify 2>&1 \
        | grep -E "^\s+(gpu__|dram__|lts__|l1tex__|sm__)" | sed 's/^/    /'
done
echo "== done at $((SECONDS - T0)) s"
} > $OUT/np.log 2>&1
tail -n 70 $OUT/np.log | cut -c1-220
