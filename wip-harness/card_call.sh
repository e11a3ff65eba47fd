#!/bin/bash
# A call that measures only on the H200 (every reference figure is the H200's):
#   bash wip-harness/card_call.sh WREV -- COMMAND...
# runs COMMAND on an H200. On another card (a plain call may get an H100), it
# runs the rest of the grader's watch check instead (a correctness check, no
# figure): watch_cheats_call.sh at WREV (the watch-all branch's revision; it
# applies watch-all.diff). Either way, the call's time is used.
set -u
wrev=${1:?the watch-all revision}; shift; [ "${1:-}" = "--" ] && shift
name=$(timeout -k 5 30 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "card: $name"
case "$name" in
  *H200*) "$@" ;;
  *) bash wip-harness/watch_cheats_call.sh "$wrev" ;;
esac
