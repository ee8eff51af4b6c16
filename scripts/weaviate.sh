#!/usr/bin/env bash
# scripts/weaviate.sh — build and run a real Weaviate on loopback: one node, or a cluster of three.
#
# Usage (Make-style targets):
#   scripts/weaviate.sh build    # go install weaviate-server once into the shared cache (slow, cold)
#   scripts/weaviate.sh start    # build if needed, start on 127.0.0.1, wait until ready
#   scripts/weaviate.sh stop     # SIGTERM via pid file, bounded wait, then SIGKILL
#   scripts/weaviate.sh status   # prints "ready"/"not ready" for the configured port (exit 0/1)
#   scripts/weaviate.sh path     # prints the binary path
#   scripts/weaviate.sh cluster-start      # three nodes on loopback, replication-ready (see below)
#   scripts/weaviate.sh cluster-stop       # stop every cluster node (SIGTERM, bounded, SIGKILL)
#   scripts/weaviate.sh cluster-status     # one line per node; exit 1 unless all are ready
#   scripts/weaviate.sh node-kill N        # SIGKILL cluster node N (1..3), as a crash would
#   scripts/weaviate.sh node-start N       # restart cluster node N on its kept data, wait until ready
#
# Environment (all optional):
#   WEAVIATE_VERSION            module version to build            (default v1.39.3)
#   DUALTRACK_WEAVIATE_BIN_DIR  where the binary is installed       (default
#                               ${XDG_CACHE_HOME:-$HOME/.cache}/dualtrack/weaviate/$WEAVIATE_VERSION/bin,
#                               outside the work tree so a fresh clone — e.g. CI's — reuses it)
#   WEAVIATE_PORT               REST port                           (default 8080)
#   WEAVIATE_GRPC_PORT          gRPC port                           (default 50051)
#   WEAVIATE_DATA_DIR           data dir, WIPED at start            (default .cache/weaviate/data-$WEAVIATE_PORT)
#   WEAVIATE_KEEP_DATA          1: keep the data dir (a restart, as in the outage drill)
#   WEAVIATE_RUN_DIR            pid and log files                   (default .cache/weaviate/run)
#   WEAVIATE_READY_TIMEOUT      seconds to wait for readiness       (default 120)
#   WEAVIATE_STOP_TIMEOUT       seconds between SIGTERM and SIGKILL (default 30)
#   WEAVIATE_QUERY_DEFAULTS_LIMIT                                   (default 25)
#   WEAVIATE_OBJECTS_TTL_DELETE_SCHEDULE  cron for the object-TTL sweeper (default "@every 1m";
#                               e.g. "@every 10s" in tests; "" disables it, and then collections
#                               with an object TTL cannot be created)
#   WEAVIATE_LOG_LEVEL                                              (default info)
#   Any other Weaviate variable in the caller's environment (GOMEMLIMIT, LIMIT_RESOURCES, ...)
#   reaches the server unchanged. Auto-schema is off: a missing collection is an error.
#
# Derived ports (so instances side by side don't collide), with P=$WEAVIATE_PORT:
#   gossip P+100, data P+101, raft P+200, raft internal RPC P+201.
#   e.g. 8080 -> 8180/8181/8280/8281 and 8090 -> 8190/8191/8290/8291.
#
# Examples:
#   scripts/weaviate.sh start && pytest -m weaviate; scripts/weaviate.sh stop
#   WEAVIATE_PORT=8090 WEAVIATE_GRPC_PORT=50061 scripts/weaviate.sh start
# As Make targets:
#   weaviate-build: ; scripts/weaviate.sh build
#   weaviate-up:    ; scripts/weaviate.sh start
#   weaviate-down:  ; scripts/weaviate.sh stop
#
# Cluster (cluster-start, node-kill, node-start, cluster-stop), as Weaviate's own
# tools/dev/run_dev_server.sh runs one on a laptop: CLUSTER_IN_LOCALHOST=true (memberlist's local
# profile; each node's raft and RPC ports are read from RAFT_JOIN), node names dualtrack-node1..3,
# RAFT_JOIN=dualtrack-node1:<raft1>,... with RAFT_BOOTSTRAP_EXPECT=3, CLUSTER_JOIN = the other
# nodes' gossip ports (so any node can restart alone), a data dir per node, GOMAXPROCS=1 each.
#   WEAVIATE_CLUSTER_PORTS       REST ports          (default "8110 8120 8130"; derived ports as above:
#                                8110 -> gossip 8210, data 8211, raft 8310, raft RPC 8311 = raft + 1,
#                                which a localhost cluster requires)
#   WEAVIATE_CLUSTER_GRPC_PORTS  gRPC ports          (default "18110 18120 18130": below Linux's
#                                ephemeral range, which a client socket may hold at start)
#   WEAVIATE_CLUSTER_DIR         data-<port>/ and run/ (default .cache/weaviate/cluster); data WIPED by
#                                cluster-start unless WEAVIATE_KEEP_DATA=1; node-start always keeps it
#   WEAVIATE_CLUSTER_GOMAXPROCS  per node            (default 1)
#   ASYNC_REPLICATION_FREQUENCY, ASYNC_REPLICATION_PROPAGATION_DELAY, ... (Weaviate's own) pass through,
#   e.g. ASYNC_REPLICATION_FREQUENCY=5s ASYNC_REPLICATION_PROPAGATION_DELAY=2s for a quick repair.
#   WEAVIATE_READY_TIMEOUT, WEAVIATE_STOP_TIMEOUT and WEAVIATE_LOG_LEVEL apply per node.
#
# Notes:
#   - v1.39.3 is the newest 1.39.x/1.40.x that builds from the Go module proxy here: v1.39.4..v1.39.7
#     need github.com/weaviate/sroar v0.0.17/v0.0.18, which the proxy refuses; v1.40.0 is not served.
#   - The cold build (module download + compile, CGO_ENABLED=0, -trimpath) takes ~5 min on 2 cores
#     and gives a ~180 MiB binary. GOMODCACHE and GOCACHE stay at Go's defaults (outside the
#     repo), so any clone on this machine reuses them and the binary.
#   - REST, gossip and raft listen on 127.0.0.1 only; Weaviate 1.39 has no setting for the host
#     of its gRPC port and its internal data port (P+101): those listen on all interfaces.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WEAVIATE_VERSION="${WEAVIATE_VERSION:-v1.39.3}"
BIN_DIR="${DUALTRACK_WEAVIATE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dualtrack/weaviate/${WEAVIATE_VERSION}/bin}"
BIN="${BIN_DIR}/weaviate-server"
# The gse tokenizer (gse_ch) finds its dictionary through its own source path, which
# -trimpath makes relative ("github.com/go-ego/gse@vX/data/dict/zh/..."): the build copies
# that dictionary under GSE_ROOT and the server runs with GSE_ROOT as its working directory.
GSE_ROOT="${BIN_DIR}/gse-root"
PORT="${WEAVIATE_PORT:-8080}"
GRPC_PORT="${WEAVIATE_GRPC_PORT:-50051}"
DATA_DIR="${WEAVIATE_DATA_DIR:-${REPO_ROOT}/.cache/weaviate/data-${PORT}}"
RUN_DIR="${WEAVIATE_RUN_DIR:-${REPO_ROOT}/.cache/weaviate/run}"
PID_FILE="${RUN_DIR}/weaviate-${PORT}.pid"
LOG_FILE="${RUN_DIR}/weaviate-${PORT}.log"
READY_TIMEOUT="${WEAVIATE_READY_TIMEOUT:-120}"
STOP_TIMEOUT="${WEAVIATE_STOP_TIMEOUT:-30}"
READY_URL="http://127.0.0.1:${PORT}/v1/.well-known/ready"

log() { printf '[weaviate] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

find_go() {
  if command -v go >/dev/null 2>&1; then
    command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then
    printf '%s\n' /usr/local/go/bin/go
  else
    die "go toolchain not found (need Go >= 1.26 on PATH or at /usr/local/go/bin/go)"
  fi
}

is_ready() {
  local code
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$READY_URL" 2>/dev/null || true)"
  [[ "$code" == "200" ]]
}

running_pid() {
  # Prints the pid from the pid file when that process is alive.
  local pid
  [[ -f "$PID_FILE" ]] || return 1
  pid="$(<"$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  printf '%s\n' "$pid"
}

cmd_build() {
  if [[ -x "$BIN" ]]; then
    log "binary present: $BIN (${WEAVIATE_VERSION})"
    ensure_gse_dict
    return 0
  fi
  local go start end
  go="$(find_go)"
  mkdir -p "$BIN_DIR"
  log "building weaviate-server ${WEAVIATE_VERSION} into ${BIN_DIR} (cold: downloads modules and compiles, many minutes)"
  log "GOMODCACHE=$("$go" env GOMODCACHE) GOCACHE=$("$go" env GOCACHE)"
  start="$(date +%s)"
  # Build into a temp GOBIN, then rename: an interrupted build never leaves a half binary.
  # The full go output goes to a log; progress lines are printed every 50 packages.
  local tmp_bin build_log
  tmp_bin="$(mktemp -d "${BIN_DIR}/.build.XXXXXX")"
  build_log="${BIN_DIR}/build.log"
  if ! CGO_ENABLED=0 GOBIN="$tmp_bin" \
      "$go" install -v -trimpath "github.com/weaviate/weaviate/cmd/weaviate-server@${WEAVIATE_VERSION}" 2>&1 \
      | tee "$build_log" \
      | awk '{ n++; if (n % 50 == 0) { printf "[weaviate] ... %d lines of go output (last: %s)\n", n, $0; fflush() } }'; then
    rm -rf "$tmp_bin"
    log "go install failed; tail of ${build_log}:"
    grep -v '^go: downloading' "$build_log" | tail -n 20 >&2 || true
    exit 1
  fi
  [[ -x "${tmp_bin}/weaviate-server" ]] || { rm -rf "$tmp_bin"; die "go install produced no binary"; }
  mv -f "${tmp_bin}/weaviate-server" "$BIN"
  rm -rf "$tmp_bin"
  end="$(date +%s)"
  log "built $BIN in $((end - start)) s ($(du -h "$BIN" | cut -f1))"
  ensure_gse_dict
}

ensure_gse_dict() {
  local go gse_ver src dst
  go="$(find_go)"
  gse_ver="$("$go" version -m "$BIN" | awk '$1 == "dep" && $2 == "github.com/go-ego/gse" { print $3 }')"
  [[ -n "$gse_ver" ]] || die "cannot read the gse version from $BIN"
  dst="${GSE_ROOT}/github.com/go-ego/gse@${gse_ver}/data/dict/zh"
  [[ -s "${dst}/s_1.txt" && -s "${dst}/t_1.txt" ]] && return 0
  src="$("$go" env GOMODCACHE)/github.com/go-ego/gse@${gse_ver}/data/dict/zh"
  if [[ ! -s "${src}/s_1.txt" ]]; then
    log "downloading github.com/go-ego/gse@${gse_ver} for its zh dictionary"
    (cd "$BIN_DIR" && GOFLAGS=-mod=mod "$go" mod download "github.com/go-ego/gse@${gse_ver}")
  fi
  [[ -s "${src}/s_1.txt" ]] || die "gse zh dictionary not found at $src"
  log "copying the gse zh dictionary to $dst"
  rm -rf "${dst}.tmp"
  mkdir -p "$(dirname "$dst")"
  cp -R "$src" "${dst}.tmp"
  chmod -R u+w "${dst}.tmp"
  rm -rf "$dst"
  mv "${dst}.tmp" "$dst"
}

cmd_start() {
  local pid
  if pid="$(running_pid)"; then
    if is_ready; then
      log "already running (pid $pid) on port $PORT"
      return 0
    fi
    die "pid $pid from $PID_FILE is alive but not ready on port $PORT; run '$0 stop' first"
  fi
  if is_ready; then
    die "something else already answers on port $PORT"
  fi
  cmd_build

  mkdir -p "$RUN_DIR"
  if [[ "${WEAVIATE_KEEP_DATA:-0}" != "1" ]]; then
    rm -rf "$DATA_DIR"
  fi
  mkdir -p "$DATA_DIR"
  DATA_DIR="$(cd "$DATA_DIR" && pwd)"
  RUN_DIR="$(cd "$RUN_DIR" && pwd)"
  LOG_FILE="${RUN_DIR}/weaviate-${PORT}.log"
  PID_FILE="${RUN_DIR}/weaviate-${PORT}.pid"
  : >"$LOG_FILE"

  log "starting on 127.0.0.1:${PORT} (grpc ${GRPC_PORT}, gossip $((PORT + 100)), data $((PORT + 101)), raft $((PORT + 200))/$((PORT + 201))), data ${DATA_DIR}, log ${LOG_FILE}"
  # setsid: own session and process group, so stopping it never signals the caller.
  # The working directory is GSE_ROOT (see above).
  (cd "$GSE_ROOT" && exec env \
    AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true \
    AUTOSCHEMA_ENABLED=false \
    DEFAULT_VECTORIZER_MODULE=none \
    ENABLE_MODULES= \
    API_BASED_MODULES_DISABLED=true \
    DISABLE_TELEMETRY=true \
    GO_PROFILING_DISABLE=true \
    PERSISTENCE_DATA_PATH="$DATA_DIR" \
    QUERY_DEFAULTS_LIMIT="${WEAVIATE_QUERY_DEFAULTS_LIMIT:-25}" \
    ENABLE_TOKENIZER_GSE_CH=true \
    OBJECTS_TTL_DELETE_SCHEDULE="${WEAVIATE_OBJECTS_TTL_DELETE_SCHEDULE:-@every 1m}" \
    GRPC_PORT="$GRPC_PORT" \
    CLUSTER_HOSTNAME=dualtrack-node1 \
    CLUSTER_ADVERTISE_ADDR=127.0.0.1 \
    CLUSTER_BIND_ADDR=127.0.0.1 \
    CLUSTER_GOSSIP_BIND_PORT="$((PORT + 100))" \
    CLUSTER_DATA_BIND_PORT="$((PORT + 101))" \
    RAFT_PORT="$((PORT + 200))" \
    RAFT_INTERNAL_RPC_PORT="$((PORT + 201))" \
    RAFT_JOIN=dualtrack-node1 \
    RAFT_BOOTSTRAP_EXPECT=1 \
    LOG_LEVEL="${WEAVIATE_LOG_LEVEL:-info}" \
    LOG_FORMAT=text \
    setsid "$BIN" --scheme http --host 127.0.0.1 --port "$PORT" \
      </dev/null >>"$LOG_FILE" 2>&1) &
  pid=$!
  printf '%s\n' "$pid" >"$PID_FILE"

  local waited=0
  while ((waited < READY_TIMEOUT)); do
    if is_ready; then
      log "ready on port $PORT after ~${waited} s (pid $pid)"
      if grep -q 'tokenizer=gse_ch' "$LOG_FILE"; then
        log "warning: the gse_ch tokenizer failed to load:"
        grep 'tokenizer=gse_ch' "$LOG_FILE" >&2 || true
      fi
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "process $pid exited before becoming ready; log tail:"
      tail -n 25 "$LOG_FILE" >&2 || true
      rm -f "$PID_FILE"
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  log "not ready after ${READY_TIMEOUT} s; log tail:"
  tail -n 25 "$LOG_FILE" >&2 || true
  cmd_stop || true
  exit 1
}

cmd_stop() {
  local pid
  if ! pid="$(running_pid)"; then
    log "not running on port $PORT (no live pid in $PID_FILE)"
    rm -f "$PID_FILE"
    return 0
  fi
  log "stopping pid $pid (SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  local waited=0
  while kill -0 "$pid" 2>/dev/null && ((waited < STOP_TIMEOUT * 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still alive after ${STOP_TIMEOUT} s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$PID_FILE"
  log "stopped"
}

cmd_status() {
  if is_ready; then
    printf 'ready: %s (pid %s)\n' "$READY_URL" "$(running_pid || echo '?')"
  else
    printf 'not ready: %s\n' "$READY_URL"
    return 1
  fi
}

# -- cluster ------------------------------------------------------------------------------

read -r -a CLUSTER_PORTS <<<"${WEAVIATE_CLUSTER_PORTS:-8110 8120 8130}"
read -r -a CLUSTER_GRPC_PORTS <<<"${WEAVIATE_CLUSTER_GRPC_PORTS:-18110 18120 18130}"
CLUSTER_DIR="${WEAVIATE_CLUSTER_DIR:-${REPO_ROOT}/.cache/weaviate/cluster}"

node_port() {
  local n="$1"
  [[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= ${#CLUSTER_PORTS[@]})) \
    || die "node number must be 1..${#CLUSTER_PORTS[@]}, got '${n}'"
  printf '%s\n' "${CLUSTER_PORTS[n - 1]}"
}

node_ready() {
  local code
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
    "http://127.0.0.1:$1/v1/.well-known/ready" 2>/dev/null || true)"
  [[ "$code" == "200" ]]
}

alive() {
  # Whether pid $1 runs (a zombie, left unreaped by a foreign parent, counts as dead).
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state="$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || true)"
  [[ "$state" != "Z" ]]
}

node_pid() {
  # Prints the live pid of the cluster node on REST port $1.
  local file="${CLUSTER_DIR}/run/weaviate-$1.pid" pid
  [[ -f "$file" ]] || return 1
  pid="$(<"$file")"
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  printf '%s\n' "$pid"
}

node_launch() {
  # Starts node $1 (1-based) in the background on its data dir; does not wait.
  local n="$1" port grpc name data log raft_join="" gossip_join="" i p
  port="$(node_port "$n")"
  grpc="${CLUSTER_GRPC_PORTS[n - 1]:?no gRPC port for node ${n} in WEAVIATE_CLUSTER_GRPC_PORTS}"
  name="dualtrack-node${n}"
  if node_pid "$port" >/dev/null; then
    die "node ${n} (port ${port}) is already running"
  fi
  node_ready "$port" && die "something else already answers on port ${port}"
  for i in "${!CLUSTER_PORTS[@]}"; do
    p="${CLUSTER_PORTS[i]}"
    raft_join+="${raft_join:+,}dualtrack-node$((i + 1)):$((p + 200))"
    if ((i + 1 != n)); then
      gossip_join+="${gossip_join:+,}127.0.0.1:$((p + 100))"
    fi
  done
  data="${CLUSTER_DIR}/data-${port}"
  log="${CLUSTER_DIR}/run/weaviate-${port}.log"
  mkdir -p "$data" "${CLUSTER_DIR}/run"
  log "node ${n} (${name}): rest ${port}, grpc ${grpc}, gossip $((port + 100)), data $((port + 101)), raft $((port + 200))/$((port + 201)), data dir ${data}, log ${log}"
  (cd "$GSE_ROOT" && exec env \
    AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true \
    AUTOSCHEMA_ENABLED=false \
    DEFAULT_VECTORIZER_MODULE=none \
    ENABLE_MODULES= \
    API_BASED_MODULES_DISABLED=true \
    DISABLE_TELEMETRY=true \
    GO_PROFILING_DISABLE=true \
    GOMAXPROCS="${WEAVIATE_CLUSTER_GOMAXPROCS:-1}" \
    PERSISTENCE_DATA_PATH="$data" \
    QUERY_DEFAULTS_LIMIT="${WEAVIATE_QUERY_DEFAULTS_LIMIT:-25}" \
    ENABLE_TOKENIZER_GSE_CH=true \
    OBJECTS_TTL_DELETE_SCHEDULE="${WEAVIATE_OBJECTS_TTL_DELETE_SCHEDULE:-@every 1m}" \
    GRPC_PORT="$grpc" \
    CLUSTER_IN_LOCALHOST=true \
    CLUSTER_HOSTNAME="$name" \
    CLUSTER_ADVERTISE_ADDR=127.0.0.1 \
    CLUSTER_BIND_ADDR=127.0.0.1 \
    CLUSTER_GOSSIP_BIND_PORT="$((port + 100))" \
    CLUSTER_DATA_BIND_PORT="$((port + 101))" \
    CLUSTER_JOIN="$gossip_join" \
    RAFT_PORT="$((port + 200))" \
    RAFT_INTERNAL_RPC_PORT="$((port + 201))" \
    RAFT_JOIN="$raft_join" \
    RAFT_BOOTSTRAP_EXPECT="${#CLUSTER_PORTS[@]}" \
    LOG_LEVEL="${WEAVIATE_LOG_LEVEL:-info}" \
    LOG_FORMAT=text \
    setsid "$BIN" --scheme http --host 127.0.0.1 --port "$port" \
      </dev/null >>"$log" 2>&1) &
  printf '%s\n' "$!" >"${CLUSTER_DIR}/run/weaviate-${port}.pid"
}

nodes_wait_ready() {
  # Waits until every node numbered in "$@" is ready; on timeout or a dead node, exits 1.
  local waited=0 n port pending
  while ((waited < READY_TIMEOUT)); do
    pending=0
    for n in "$@"; do
      port="$(node_port "$n")"
      node_ready "$port" && continue
      pending=1
      if ! node_pid "$port" >/dev/null; then
        log "node ${n} (port ${port}) exited before becoming ready; log tail:"
        tail -n 25 "${CLUSTER_DIR}/run/weaviate-${port}.log" >&2 || true
        return 1
      fi
    done
    if ((pending == 0)); then
      log "node(s) $* ready after ~${waited} s"
      return 0
    fi
    sleep 1
    waited=$((waited + 1))
  done
  log "node(s) $* not ready after ${READY_TIMEOUT} s"
  return 1
}

node_stop() {
  local port="$1" pid waited=0
  pid="$(node_pid "$port")" || { rm -f "${CLUSTER_DIR}/run/weaviate-${port}.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  while alive "$pid" && ((waited < STOP_TIMEOUT * 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if alive "$pid"; then
    log "port ${port}: still alive after ${STOP_TIMEOUT} s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "${CLUSTER_DIR}/run/weaviate-${port}.pid"
  log "port ${port}: stopped (pid ${pid})"
}

cmd_cluster_start() {
  cmd_build
  local n nodes=()
  for n in $(seq 1 "${#CLUSTER_PORTS[@]}"); do
    nodes+=("$n")
    node_pid "$(node_port "$n")" >/dev/null && die "node ${n} is already running; run '$0 cluster-stop' first"
  done
  if [[ "${WEAVIATE_KEEP_DATA:-0}" != "1" ]]; then
    for n in "${nodes[@]}"; do rm -rf "${CLUSTER_DIR}/data-$(node_port "$n")"; done
  fi
  mkdir -p "${CLUSTER_DIR}/run"
  CLUSTER_DIR="$(cd "$CLUSTER_DIR" && pwd)"
  for n in "${nodes[@]}"; do
    : >"${CLUSTER_DIR}/run/weaviate-$(node_port "$n").log"
    node_launch "$n"
  done
  # RAFT_BOOTSTRAP_EXPECT: no node is ready before all of them have joined.
  if ! nodes_wait_ready "${nodes[@]}"; then
    cmd_cluster_stop || true
    exit 1
  fi
}

cmd_cluster_stop() {
  local port
  for port in "${CLUSTER_PORTS[@]}"; do node_stop "$port"; done
}

cmd_cluster_status() {
  local n port state ok=0
  for n in $(seq 1 "${#CLUSTER_PORTS[@]}"); do
    port="$(node_port "$n")"
    state="not ready"
    node_ready "$port" && state="ready"
    [[ "$state" == "ready" ]] || ok=1
    printf 'node %s dualtrack-node%s rest %s: %s (pid %s)\n' \
      "$n" "$n" "$port" "$state" "$(node_pid "$port" || echo '-')"
  done
  return "$ok"
}

cmd_node_kill() {
  local port pid waited=0
  port="$(node_port "${1:-}")"
  pid="$(node_pid "$port")" || die "node ${1} (port ${port}) is not running"
  kill -KILL "$pid"
  while alive "$pid" && ((waited < 100)); do
    sleep 0.05
    waited=$((waited + 1))
  done
  rm -f "${CLUSTER_DIR}/run/weaviate-${port}.pid"
  log "node ${1} (port ${port}, pid ${pid}) killed with SIGKILL"
}

cmd_node_start() {
  local port
  port="$(node_port "${1:-}")"
  [[ -x "$BIN" ]] || die "no binary at $BIN; run '$0 build' or '$0 cluster-start' first"
  mkdir -p "${CLUSTER_DIR}/run"
  CLUSTER_DIR="$(cd "$CLUSTER_DIR" && pwd)"
  node_launch "$1"
  nodes_wait_ready "$1"
}

main() {
  case "${1:-}" in
    build) cmd_build ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    path) printf '%s\n' "$BIN" ;;
    cluster-start) cmd_cluster_start ;;
    cluster-stop) cmd_cluster_stop ;;
    cluster-status) cmd_cluster_status ;;
    node-kill) cmd_node_kill "${2:-}" ;;
    node-start) cmd_node_start "${2:-}" ;;
    *)
      sed -n '2,/^set -euo pipefail$/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
}

main "$@"
