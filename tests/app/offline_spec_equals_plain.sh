#!/bin/sh
# sgl-bench offline's output digest under greedy speculation equals plain decoding's, and the
# drafts stood (an accept length above 1), so the equality says something about verification.
# usage: offline_spec_equals_plain.sh SGL_BENCH WORKLOAD_FLAGS -- SPECULATIVE_FLAGS
set -eu
bench=$1
shift
workload=""
while [ "$1" != -- ]; do workload="$workload $1"; shift; done
shift
# shellcheck disable=SC2086  # the flags word-split
plain=$("$bench" offline $workload | sed -n 's/^Output digest: *//p')
# shellcheck disable=SC2086
spec_out=$("$bench" offline $workload "$@")
spec=$(printf '%s\n' "$spec_out" | sed -n 's/^Output digest: *//p')
accept=$(printf '%s\n' "$spec_out" | sed -n 's/^Accept length: *//p')
echo "plain $plain, speculative $spec, accept length $accept"
[ -n "$plain" ] && [ "$plain" = "$spec" ] || { echo "FAIL: the outputs differ"; exit 1; }
awk -v a="$accept" 'BEGIN { exit !(a > 1.05) }' || { echo "FAIL: no draft stood"; exit 1; }
