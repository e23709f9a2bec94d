# Shell helpers (sourced) to run sgl-server in scripts and end-to-end tests: start it on an
# ephemeral port, read its state from /get_server_info, check it is idle with no leaked KV
# slots, stop it with SIGTERM. Needs curl and python3.
# shellcheck shell=bash

# json_field EXPR: evaluates the Python expression EXPR over `d`, the JSON read from stdin.
json_field() {
  python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1], {"d": d, "json": json}))' "$1"
}

# _sgl_alive PID: the process exists and is not a zombie (an exited child not yet waited for).
_sgl_alive() {
  [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# sgl_server_start BIN MODEL LOG_PREFIX [server flags...]: sets SGL_SERVER_PID, SGL_SERVER_URL.
# The logs go to LOG_PREFIX.out / LOG_PREFIX.err. Waits SGL_SERVER_START_TIMEOUT seconds [120].
sgl_server_start() {
  local bin=$1 model=$2 log=$3 timeout=${SGL_SERVER_START_TIMEOUT:-120}
  shift 3
  "$bin" --model-path "$model" --host 127.0.0.1 --port 0 "$@" >"$log.out" 2>"$log.err" &
  SGL_SERVER_PID=$!
  SGL_SERVER_URL=""
  local _
  for _ in $(seq 1 $((timeout * 10))); do
    SGL_SERVER_URL=$(sed -n 's/^sgl-server listening on //p' "$log.out")
    if [ -n "$SGL_SERVER_URL" ] && curl -sf "$SGL_SERVER_URL/health" >/dev/null; then
      return 0
    fi
    if ! _sgl_alive "$SGL_SERVER_PID"; then
      echo "sgl-server failed to start:" >&2
      cat "$log.err" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "sgl-server did not become healthy in ${timeout} s" >&2
  return 1
}

# sgl_server_state URL: the engine state (internal_states[0] of /get_server_info) as JSON.
sgl_server_state() {
  curl -sf "$1/get_server_info" | json_field 'json.dumps(d["internal_states"][0])'
}

# sgl_server_check_idle URL [TIMEOUT_S=30]: waits until nothing runs or waits and no request
# holds KV slots, then flushes the radix cache and checks that every KV slot is free again.
# Prints the last state; returns 1 (with the state) on a leak or stuck requests.
sgl_server_check_idle() {
  local url=$1 timeout=${2:-30} state="" busy _
  for _ in $(seq 1 $((timeout * 10))); do
    state=$(sgl_server_state "$url") || { echo "GET /get_server_info failed" >&2; return 1; }
    busy=$(echo "$state" | json_field '(d["num_running_reqs"] + d["num_waiting_reqs"] +
        d["kv_in_use_by_requests"] + d["http_requests_in_flight"])')
    [ "$busy" = 0 ] && break
    sleep 0.1
  done
  if [ "$busy" != 0 ]; then
    echo "not idle after ${timeout}s (stuck requests or leaked KV slots): $state" >&2
    return 1
  fi
  curl -sf -X POST "$url/flush_cache" >/dev/null || { echo "POST /flush_cache failed" >&2; return 1; }
  state=$(sgl_server_state "$url")
  if [ "$(echo "$state" | json_field 'd["kv_used"]')" != 0 ]; then
    echo "KV slots still used after /flush_cache: $state" >&2
    return 1
  fi
  echo "$state"
}

# sgl_server_stop [TIMEOUT_S=60]: SIGTERM, wait; returns the server's exit code (124 if it
# did not exit in time, after which it is killed).
sgl_server_stop() {
  local timeout=${1:-60} code=0 _
  kill -TERM "$SGL_SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 $((timeout * 10))); do
    _sgl_alive "$SGL_SERVER_PID" || break
    sleep 0.1
  done
  if _sgl_alive "$SGL_SERVER_PID"; then
    kill -KILL "$SGL_SERVER_PID" 2>/dev/null || true
    wait "$SGL_SERVER_PID" 2>/dev/null || true
    return 124
  fi
  wait "$SGL_SERVER_PID" || code=$?
  return "$code"
}
