#!/bin/bash
# A call that measures only on the H200 (every reference figure is the H200's):
#   bash wip-harness/card_call.sh REV -- COMMAND...
# runs COMMAND on an H200. On another card (a plain call may get an H100) it runs nothing and
# exits 3: the H100's gradings are done (sessions 30-32, plots/reference/h100-watch-suite.log).
set -u
rev=${1:?the revision of the tree sent}; shift; [ "${1:-}" = "--" ] && shift
name=$(timeout -k 5 30 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "card: $name"
case "$name" in
  *H200*) "$@" ;;
  *) # Every grading an H100 could do is done (sessions 30-32): on another card, run nothing
     # and say so, so that the call costs only its start.
     echo "not an H200: nothing run (give the machine back and call again)"; exit 3 ;;
esac
