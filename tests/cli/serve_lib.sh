# Sourced by the CLI test scripts: start and stop a standalone coordinator.
#   start_serve BIN LOG   starts `BIN serve` on a free loopback port, sets serve_pid and
#                         exports TENSORHUB_HUB=127.0.0.1:PORT and TENSORHUB_TOKEN_FILE (the
#                         token serve created, LOG.token) (exits 1 if it does not start)
#   stop_serve            SIGTERM, then wait (no-op when none runs)
serve_pid=
start_serve() {
  local bin=$1 log=$2 port=
  export TENSORHUB_TOKEN_FILE=$log.token
  "$bin" serve --listen 127.0.0.1:0 --token-file "$TENSORHUB_TOKEN_FILE" >"$log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 100); do
    grep -q "listening on" "$log" && break
    sleep 0.1
  done
  port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$log")
  [[ -n "$port" ]] || { echo "serve did not start:"; cat "$log"; exit 1; }
  export TENSORHUB_HUB=127.0.0.1:$port
}
stop_serve() {
  [[ -n "$serve_pid" ]] || return 0
  kill -TERM "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=
}
