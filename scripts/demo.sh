#!/usr/bin/env bash
# The README's run command: builds eslease, starts the Elasticsearch and Kubernetes API
# emulators and eslease-controller as separate processes on loopback, then shows what a
# user sees:
#   1. the CRD and the example Leases applied with kubectl; contention: one claim Held,
#      the others Pending with their queue positions;
#   2. the holder pod deleted: it keeps the lock while it terminates, then the waiting claim
#      takes over within milliseconds, with a new fencing token and lastTakeover saying why;
#   3. the eslease.io/holds annotation on the new holder, and the contention and takeover
#      metrics from /metrics.
# Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target eslease-controller es-emulator kube-emulator

bin=build/bin
workdir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$workdir"
}
trap cleanup EXIT

# Waits until FILE contains PATTERN (at most 10 s); prints the file and fails otherwise.
wait_for_line() {
  local file=$1 pattern=$2
  for _ in $(seq 200); do
    grep -q "$pattern" "$file" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "timed out waiting for '$pattern' in $file:"
  cat "$file" "${file%.*}.err" 2>/dev/null
  exit 1
}

"$bin/es-emulator" --listen 127.0.0.1:0 >"$workdir/es.out" 2>"$workdir/es.err" &
pids+=($!)
# The simulated kubelet runs the pods and makes them Ready; a deleted pod's containers take
# at most 1 s to stop.
"$bin/kube-emulator" --listen 127.0.0.1:0 --kubeconfig-out "$workdir/kubeconfig" \
  --simulate-kubelet --kubelet-max-grace 1s >"$workdir/kube.out" 2>"$workdir/kube.err" &
pids+=($!)
wait_for_line "$workdir/es.out" 'listening on'
wait_for_line "$workdir/kube.out" 'listening on'
es_url=$(sed -n 's/^es-emulator listening on //p' "$workdir/es.out")
kubectl=(kubectl --kubeconfig "$workdir/kubeconfig")

"$bin/eslease-controller" --kubeconfig "$workdir/kubeconfig" --es "$es_url" \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
  >"$workdir/controller.out" 2>"$workdir/controller.err" &
pids+=($!)
wait_for_line "$workdir/controller.err" 'endpoint=metrics'
metrics_url="http://$(sed -n 's/.*endpoint=metrics address=\([^ ]*\).*/\1/p' "$workdir/controller.err")/metrics"
echo "== Elasticsearch emulator at $es_url, controller metrics at $metrics_url"

echo
echo "== 1. The CRD and the example Leases (examples/claim-mode.yaml, examples/election-mode.yaml)"
"${kubectl[@]}" apply -f crds/
"${kubectl[@]}" wait --for=condition=Established crd/leases.eslease.io --timeout=30s >/dev/null
"${kubectl[@]}" apply -f examples/
# A third claim on the same lock, from a third pod, to show a queue.
"${kubectl[@]}" apply -f - <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: report-c, namespace: eslease-demo, labels: {app: nightly-report}}
spec: {containers: [{name: worker, image: "busybox:1.36", command: ["sleep", "3600"]}]}
---
apiVersion: eslease.io/v1alpha1
kind: Lease
metadata: {name: nightly-report-c, namespace: eslease-demo}
spec: {lockName: nightly-report, holder: {podName: report-c}, priority: Background}
EOF
"${kubectl[@]}" wait --for=condition=Ready pod --all -n eslease-demo --timeout=30s >/dev/null
"${kubectl[@]}" wait --for=condition=Ready pod --all -n eslease-election --timeout=30s >/dev/null
echo
echo "\$ kubectl get pods -A   # scheduled and run by the emulator's simulated kubelet"
"${kubectl[@]}" get pods -A -o custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,PHASE:.status.phase,READY:'.status.conditions[?(@.type=="Ready")].status',NODE:.spec.nodeName

phase() { "${kubectl[@]}" get esl "$1" -n eslease-demo -o jsonpath='{.status.phase}' 2>/dev/null; }
wait_phase() {
  for _ in $(seq 400); do
    [ "$(phase "$1")" = "$2" ] && return 0
    sleep 0.025
  done
  echo "Lease $1 did not become $2"; "${kubectl[@]}" get esl -A; cat "$workdir/controller.err"; exit 1
}
wait_phase nightly-report-a Held
wait_phase nightly-report-b Pending
wait_phase nightly-report-c Pending
for _ in $(seq 200); do
  [ -n "$("${kubectl[@]}" get esl nightly-report-c -n eslease-demo -o jsonpath='{.status.queuePosition}')" ] && break
  sleep 0.025
done
echo
echo "\$ kubectl get esl -A   # one claim Held, the others Pending"
"${kubectl[@]}" get esl -A
echo
echo "\$ kubectl get esl -n eslease-demo -o custom-columns=...   # queue positions"
"${kubectl[@]}" get esl -n eslease-demo \
  -o custom-columns=LEASE:.metadata.name,PHASE:.status.phase,PRIORITY:.spec.priority,QUEUE:.status.queuePosition,TOKEN:.status.fencingToken

old_token=$("${kubectl[@]}" get esl nightly-report-a -n eslease-demo -o jsonpath='{.status.fencingToken}')
echo
echo "== 2. The holder pod report-a is deleted"
echo "\$ kubectl delete pod report-a -n eslease-demo --wait=false"
"${kubectl[@]}" delete pod report-a -n eslease-demo --wait=false
echo "While it terminates its containers may still work under the lock, so it keeps it:"
"${kubectl[@]}" get pod report-a -n eslease-demo -o custom-columns=POD:.metadata.name,DELETING:.metadata.deletionTimestamp,NODE:.spec.nodeName 2>/dev/null || true
echo "nightly-report-a: $(phase nightly-report-a)"
"${kubectl[@]}" wait --for=delete pod/report-a -n eslease-demo --timeout=30s >/dev/null
start=$(date +%s%N)
wait_phase nightly-report-b Held
end=$(date +%s%N)
new_token=$("${kubectl[@]}" get esl nightly-report-b -n eslease-demo -o jsonpath='{.status.fencingToken}')
echo "The pod is gone; nightly-report-b is Held $(( (end - start) / 1000000 )) ms after kubectl saw it go (that"
echo "includes kubectl round trips; the controller's own takeover latency is in eslease_takeover_latency_seconds below)"
echo "fencing token: $old_token -> $new_token"
echo "lastTakeover: $("${kubectl[@]}" get esl nightly-report-b -n eslease-demo -o jsonpath='{.status.lastTakeover}')"
echo
"${kubectl[@]}" get esl -n eslease-demo \
  -o custom-columns=LEASE:.metadata.name,PHASE:.status.phase,HOLDER:.status.holder.podName,QUEUE:.status.queuePosition,TOKEN:.status.fencingToken

echo
echo "== 3. The new holder is told through its annotation (a downward-API volume turns it into a file)"
for _ in $(seq 200); do
  value=$("${kubectl[@]}" get pod report-b -n eslease-demo -o jsonpath='{.metadata.annotations.eslease\.io/holds}')
  [ -n "$value" ] && break
  sleep 0.025
done
echo "report-b  eslease.io/holds=$value"
echo "reporter  eslease.io/holds=$("${kubectl[@]}" get pods -n eslease-election \
  -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.annotations.eslease\.io/holds} {end}')"

echo
echo "== Contention and takeover metrics"
curl -s "$metrics_url" | grep -E '^eslease_(claims\{phase="(Held|Pending)"|lock_waiters|grants_total|takeovers_total|takeover_latency_seconds_(sum|count)|acquire_wait_seconds_count|backend_conflicts_total)' || true
echo
echo "== Done; stopping the controller and both emulators"
