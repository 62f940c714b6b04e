#!/usr/bin/env bash
# The README's run command. Builds the eslease tool and the Elasticsearch emulator, then
# shows what the lock protocol gives a workload:
#   1. two workers contend for one lock: the second waits, then gets a larger fencing token;
#   2. a holder is killed without releasing: the next claimant takes over once the lock's
#      TTL has run out on its own clock, again with a larger token;
#   3. the lock document as the tool reports it, and the Elasticsearch requests it all cost.
# The controller (Lease resources, takeover in milliseconds on pod death) builds on this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target eslease es-emulator

bin=build/bin
workdir=$(mktemp -d)
emulator_pid=""
cleanup() {
  [ -n "$emulator_pid" ] && kill "$emulator_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$workdir"
}
trap cleanup EXIT

"$bin/es-emulator" --listen 127.0.0.1:0 >"$workdir/emulator.out" 2>"$workdir/emulator.err" &
emulator_pid=$!
for _ in $(seq 100); do
  grep -q 'listening on' "$workdir/emulator.out" 2>/dev/null && break
  sleep 0.05
done
es_url=$(sed -n 's/^es-emulator listening on //p' "$workdir/emulator.out")
[ -n "$es_url" ] || { echo "the Elasticsearch emulator did not start:"; cat "$workdir/emulator.err"; exit 1; }
echo "== Elasticsearch emulator at $es_url"

# An array, not a function: a backgrounded function runs in a subshell, and killing that
# would not kill the tool.
eslease=("$bin/eslease" --es "$es_url")

echo
echo "== 1. Two workers contend for batch/nightly-report"
"${eslease[@]}" run nightly-report --namespace batch --holder worker-a --ttl 3s -- \
  sh -c 'echo "worker-a: holding the lock with fencing token $ESLEASE_FENCING_TOKEN"; sleep 2; echo "worker-a: done"' &
worker_a=$!
# Wait until worker-a holds the lock before worker-b asks for it.
for _ in $(seq 100); do
  "${eslease[@]}" status nightly-report --namespace batch 2>/dev/null | grep -q worker-a && break
  sleep 0.05
done
"${eslease[@]}" run nightly-report --namespace batch --holder worker-b --ttl 3s --wait 30s -- \
  sh -c 'echo "worker-b: holding the lock with fencing token $ESLEASE_FENCING_TOKEN"'
wait "$worker_a"

echo
echo "== 2. A holder dies without releasing"
"${eslease[@]}" run nightly-report --namespace batch --holder worker-c --ttl 2s -- \
  sh -c 'echo "worker-c: holding the lock with fencing token $ESLEASE_FENCING_TOKEN"; sleep 10' &
worker_c=$!
for _ in $(seq 100); do
  "${eslease[@]}" status nightly-report --namespace batch 2>/dev/null | grep -q worker-c && break
  sleep 0.05
done
kill -9 "$worker_c"; wait "$worker_c" 2>/dev/null || true
echo "worker-c: killed (SIGKILL), lock not released"
start_ms=$(( $(date +%s%N) / 1000000 ))
token=$("${eslease[@]}" acquire nightly-report --namespace batch --holder worker-d --ttl 10s --wait 30s)
end_ms=$(( $(date +%s%N) / 1000000 ))
echo "worker-d: took over with fencing token $token after $(( end_ms - start_ms )) ms (the 2s TTL, observed on its own clock)"

echo
echo "== 3. The lock as stored in Elasticsearch"
"${eslease[@]}" status nightly-report --namespace batch
"${eslease[@]}" release nightly-report --namespace batch --holder worker-d
echo
echo "== Elasticsearch requests made, by operation"
curl -s "$es_url/_emulator/stats"; echo
