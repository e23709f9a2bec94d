#!/usr/bin/env bash
# Serving across nodes on one machine with 2 GPUs (device side; scripts/multi_gpu_check.sh runs
# it): stories260K in f32, greedy over HTTP, from one process at --tp-size 1, one at --tp-size 2,
# and two processes at --tp-size 2 --nnodes 2 (node 1 on cuda:1, joined by the NCCL id node 0
# serves at --dist-init-addr's port + 1). The three must answer the same ids; SIGTERM on node 0
# must end both processes with 0. ROOT is gpu_check's unpacked folder (ROOT/gpu/sgl-server,
# ROOT/testdata). Logs land in $OUT (default /tmp). Exit 1 on any difference.
set -uo pipefail
root=${1:?usage: gpu_multi_node_check.sh ROOT}
out=${OUT:-/tmp}
server=$root/gpu/sgl-server
common=(--model-path "$root/testdata/models/stories260K" --device cuda --dtype float32)

generate() {  # PORT > ids, one line per prompt
  local t
  for t in "Once upon a time" "The little dog"; do
    curl -s "localhost:$1/generate" \
      -d "{\"text\":\"$t\",\"sampling_params\":{\"max_new_tokens\":48,\"temperature\":0}}" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["output_ids"])'
  done
}
wait_up() {
  local deadline=$((SECONDS + 120))
  while [ "$SECONDS" -lt "$deadline" ]; do
    curl -sf "localhost:$1/health" >/dev/null && return 0
    sleep 0.5
  done
  echo "the server at port $1 never came up"
  return 1
}
# serve NAME PORT ARGS...: one server's answers into $out/NAME.txt, then SIGTERM (exit 0).
serve() {
  local name=$1 port=$2 pid rc
  shift 2
  "$server" "${common[@]}" --port "$port" "$@" >"$out/$name.log" 2>&1 &
  pid=$!
  wait_up "$port" && generate "$port" >"$out/$name.txt"
  kill "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" = 0 ] || echo "$name exited with $rc"
  return "$rc"
}

status=0
serve tp1 31000 || status=1
serve tp2 31001 --tp-size 2 || status=1
"$server" "${common[@]}" --tp-size 2 --nnodes 2 --node-rank 1 --base-gpu-id 1 \
  --dist-init-addr 127.0.0.1:29500 >"$out/node1.log" 2>&1 &
node1=$!
serve nodes 31002 --tp-size 2 --nnodes 2 --node-rank 0 --dist-init-addr 127.0.0.1:29500 ||
  status=1
wait "$node1" || { echo "node 1 exited with $?"; status=1; }
# A node that dies: node 0 must end (exit 1, saying so), not hang in NCCL.
"$server" "${common[@]}" --tp-size 2 --nnodes 2 --node-rank 1 --base-gpu-id 1 \
  --dist-init-addr 127.0.0.1:29502 >"$out/lost_node1.log" 2>&1 &
node1=$!
"$server" "${common[@]}" --tp-size 2 --nnodes 2 --node-rank 0 --dist-init-addr 127.0.0.1:29502 \
  --port 31003 >"$out/lost_node0.log" 2>&1 &
node0=$!
if wait_up 31003 && generate 31003 >/dev/null; then
  kill -9 "$node1"
  wait "$node1" 2>/dev/null
  deadline=$((SECONDS + 30))
  while kill -0 "$node0" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
  if kill -0 "$node0" 2>/dev/null; then
    echo "node 0 still runs 30 s after node 1 was killed"
    kill -9 "$node0"
    status=1
  else
    wait "$node0"
    rc=$?
    if [ "$rc" != 1 ] || ! grep -q "node 1 is gone" "$out/lost_node0.log"; then
      echo "node 0 ended with $rc without saying node 1 is gone"
      status=1
    else
      echo "node 1 killed: node 0 ended with 1 ($(grep -o 'node 1 is gone[^;]*' "$out/lost_node0.log" | head -1))"
    fi
  fi
else
  status=1
  kill -9 "$node0" "$node1" 2>/dev/null
fi
for name in tp2 nodes; do
  if ! cmp -s "$out/tp1.txt" "$out/$name.txt"; then
    echo "$name answered other ids than tp1:"
    diff "$out/tp1.txt" "$out/$name.txt"
    status=1
  fi
done
[ "$status" = 0 ] && echo "two nodes (tp 2 over 2 processes) answer tp 1's ids; both exited 0"
tail -n 1 "$out/node1.log"
exit "$status"
