#!/bin/bash
# A call that measures only on the H200 (every reference figure is the H200's):
#   bash wip-harness/card_call.sh WREV -- COMMAND...
# runs COMMAND on an H200. On another card (a plain call may get an H100), it
# runs the grader's watch check instead, which is a correctness check and
# gives no figure: watch-all.diff applied here, then watch_all_call.sh at WREV
# (the watch-all branch's revision). Either way, the call's time is used.
set -u
wrev=${1:?the watch-all revision}; shift; [ "${1:-}" = "--" ] && shift
name=$(timeout -k 5 30 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "card: $name"
case "$name" in
  *H200*) "$@" ;;
  *) patch -p1 -s < wip-harness/batch/watch-all.diff || { echo "patch failed"; exit 1; }
     LIMIT=${LIMIT:-545} bash wip-harness/watch_all_call.sh "$wrev" ;;
esac
