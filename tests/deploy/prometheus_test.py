"""Every PromQL expression of the Grafana dashboard (dashboards/), of the chart's alert
rules (the rendered PrometheusRule) and of docs/reference.md's example queries, evaluated by
a real Prometheus that scrapes two eslease-controller replicas during an end-to-end scenario
with contention and takeovers (tests/deploy/scenario.py). Each expression must run and return
data; every metric the dashboard names must exist; `promtool check rules` must pass on the
alert rules, and Prometheus itself must load them.

Every replica, standbys included, exports `eslease_claims` and `eslease_lock_waiters` from its
own cache, so each expression that shows them is held to the Leases read from the API: at the
end of the scenario, and at every step while the leading replica is killed and the other takes
over (no step may be missing, doubled or short).

usage: prometheus_test.py BIN_DIR SOURCE_DIR WORK_DIR [--png FILE]
  --png FILE  also draw every dashboard panel from this Prometheus into one PNG
              (tests/deploy/dashboard_png.py)"""

import calendar
import collections
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chart  # noqa: E402
import scenario  # noqa: E402
from scenario import Environment, wait_for  # noqa: E402

SCRAPE_INTERVAL = "1s"
RATE_INTERVAL = "10s"  # what Grafana's $__rate_interval becomes for a 1s scrape interval here
JOB = "%s-metrics" % chart.RELEASE  # the job and namespace labels a ServiceMonitor would give
PROMETHEUS_NAMESPACE = chart.NAMESPACE


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A real Prometheus on 127.0.0.1 with its storage in a temporary directory."""

    def __init__(self, env, targets, rules_file):
        self.dir = tempfile.mkdtemp(prefix="prometheus-", dir=env.dir)
        config = {
            "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
            "rule_files": [rules_file],
            "scrape_configs": [{
                "job_name": JOB, "scrape_timeout": SCRAPE_INTERVAL,
                "static_configs": [{"targets": [address], "labels": {"namespace": PROMETHEUS_NAMESPACE, "pod": pod}}
                                   for pod, address in targets],
            }],
        }
        config_file = os.path.join(self.dir, "prometheus.yml")
        with open(config_file, "w") as f:
            yaml.safe_dump(config, f)
        for attempt in range(5):
            port = free_port()
            self.url = "http://127.0.0.1:%d" % port
            self.process = env._spawn("prometheus-%d" % attempt, [
                "prometheus", "--config.file=" + config_file, "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                "--web.listen-address=127.0.0.1:%d" % port, "--storage.tsdb.retention.time=1h",
                "--log.level=warn"])
            try:
                wait_for(lambda: self.ready(), 60, "Prometheus to be ready", interval=0.1)
                return
            except AssertionError:
                if self.process.proc.poll() is None:
                    raise
                if "address already in use" not in self.process.text():
                    raise AssertionError("prometheus exited: " + self.process.text()[-2000:])

    def ready(self):
        if self.process.proc.poll() is not None:
            raise AssertionError("prometheus exited: " + self.process.text()[-2000:])
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def api(self, path, **params):
        url = self.url + "/api/v1/" + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as e:
            body = json.loads(e.read() or b"{}")
        if body.get("status") != "success":
            raise AssertionError("%s %s: %s" % (path, params, body.get("error", body)))
        return body["data"]

    def query(self, expr):
        return self.api("query", query=expr)["result"]

    def query_range(self, expr, start, end, step="1s"):
        return self.api("query_range", query=expr, start="%.3f" % start, end="%.3f" % end, step=step)["result"]


def values_of(result):
    return [float(v) for series in result for _, v in series["values"] if not math.isnan(float(v))]


def dashboard_queries(dashboard):
    """[(panel title, expr as Prometheus gets it)]: Grafana's variables substituted."""
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", RATE_INTERVAL)
            expr = expr.replace("$namespace", PROMETHEUS_NAMESPACE)
            if "$" in expr:
                raise AssertionError("panel %r uses a variable the check does not know: %s" % (panel["title"], expr))
            out.append((panel["title"], expr))
    return out


SIGNAL = re.compile(r"^\((.*)\)\s*(<|>|<=|>=|==|!=)\s*[0-9.]+$", re.S)


def reference_queries(source):
    """[(what, expr)] of docs/reference.md's ```promql block, each line `expr  # what`."""
    with open(os.path.join(source, "docs", "reference.md")) as f:
        block = re.search(r"```promql\n(.*?)```", f.read(), re.S)
    if not block:
        raise AssertionError("docs/reference.md has no promql block of example queries")
    out = []
    for line in block.group(1).splitlines():
        expr, _, what = line.partition("#")
        if expr.strip():
            out.append(("docs/reference.md " + repr(what.strip() or expr.strip()), expr.strip()))
    return out


# The gauges every replica exports from its own cache, and which count of the API
# (scenario.claim_counts) each is held to.
COUNTED = {"eslease_claims": "claims", "eslease_lock_waiters": "waiters"}


def counted_by(expr):
    kinds = {kind for metric, kind in COUNTED.items() if re.search(r"\b%s\b" % metric, expr)}
    return kinds.pop() if len(kinds) == 1 else None


def labels_of(series):
    return {k: v for k, v in series["metric"].items() if k in ("phase", "priority")}


def differences(truth, kind, expr, series):
    """How one instant's series ([(labels, value)]) of `expr` differ from the counts read from
    the API: each series must equal the Leases that its phase/priority labels (and those the
    expression selects) pick, and together they must count each of those Leases once."""
    if not series:
        return ["no value"]
    if kind == "waiters":
        return ["%s is %g, the API says %d" % (labels or "the value", value, truth["waiters"])
                for labels, value in series if value != truth["waiters"]][:1] or \
            ([] if len(series) == 1 else ["%d series instead of one" % len(series)])
    selected = dict(re.findall(r'\b(phase|priority)\s*=\s*"(\w+)"', expr))

    def count(labels):
        wanted = dict(selected, **labels)
        return sum(n for (phase, priority), n in truth["claims"].items()
                   if wanted.get("phase", phase) == phase and wanted.get("priority", priority) == priority)

    problems = ["%s is %g, the API says %d" % (labels or "the value", value, count(labels))
                for labels, value in series if value != count(labels)]
    total = sum(v for _, v in series)
    if not problems and total != count({}):
        problems.append("the series add up to %g, the API counts %d" % (total, count({})))
    return problems


def agrees_with_api(env, prometheus, expr, kind, timeout=30):
    """Waits until the expression's value now equals the counts read from the API (the
    replicas' caches and the scrapes follow the API with a delay); returns the differences
    still seen at the deadline, [] when it agrees."""
    seen = []

    def agrees():
        truth = scenario.claim_counts(env)
        seen[:] = differences(truth, kind, expr,
                              [(labels_of(r), float(r["value"][1])) for r in prometheus.query(expr)])
        return not seen

    try:
        wait_for(agrees, timeout, "%s to agree with the API" % expr, interval=0.5)
    except AssertionError:
        return seen
    return []


FAILOVER_STEP = 0.25  # seconds between the evaluations checked through a failover


def check_through_failover(env, prometheus, replicas, counted):
    """Kills the leading replica (SIGKILL, a crash: it gives nothing up) and checks every
    counted expression at every step from just before the kill until Prometheus has seen the
    other replica lead: the value must stay the API's all along, never missing, never doubled."""
    truth = scenario.claim_counts(env)
    leader = scenario.leader_of(env, replicas)
    standby = [c for c in replicas if c is not leader]
    start = time.time()
    leader.stop(sig_kill=True)
    scenario.leader_of(env, standby)
    wait_for(lambda: prometheus.query('up{job="%s", pod="%s"} == 0' % (JOB, leader.name)) and
             prometheus.query('eslease_leader{job="%s", pod="%s"} == 1' % (JOB, standby[0].name)), 30,
             "Prometheus to see %s gone and %s leading" % (leader.name, standby[0].name), interval=0.2)
    end = time.time()
    if scenario.claim_counts(env) != truth:
        return ["the Leases changed during the failover, so the check means nothing: %s, then %s"
                % (truth, scenario.claim_counts(env))]
    steps = int((end - start) / FAILOVER_STEP) + 1
    failures = []
    for title, expr, kind in counted:
        at = collections.defaultdict(list)
        for series in prometheus.query_range(expr, start, end, step=str(FAILOVER_STEP)):
            for t, v in series["values"]:
                at[round(float(t), 3)].append((labels_of(series), float(v)))
        wrong = [(t, d) for t in sorted(at) for d in [differences(truth, kind, expr, at[t])] if d]
        if len(at) < steps:
            failures.append("%s has no value at %d of %d steps through the failover: %s"
                            % (title, steps - len(at), steps, expr))
        elif wrong:
            t, diff = wrong[0]
            failures.append("%s, %.2fs after the leader was killed (%d of %d steps wrong): %s: %s"
                            % (title, t - start, len(wrong), steps, "; ".join(diff), expr))
        print("%s %-50s %d steps through the failover" % ("FAIL" if len(at) < steps or wrong else "ok  ",
                                                           title[:50], steps))
    return failures


TIMING_OUT = "EsleaseClaimsTimingOut"


def alert_state(prometheus, name):
    """The states of the alert's instances as (labels, state) pairs, from the rules API."""
    return [(a["labels"], a["state"]) for g in prometheus.api("rules")["groups"] for r in g["rules"]
            if r["name"] == name for a in r.get("alerts", [])]


def quiet_after_evaluations(prometheus, name):
    """Waits until the rule `name` is evaluated twice on samples newer than now, then returns
    its active alerts (none, if it stays quiet)."""
    since = time.time()

    def evaluated_twice():
        rule = [r for g in prometheus.api("rules")["groups"] for r in g["rules"] if r["name"] == name]
        last = rule[0].get("lastEvaluation", "") if rule else ""
        stamp = calendar.timegm(time.strptime(last[:19], "%Y-%m-%dT%H:%M:%S")) if last else 0
        return stamp >= since + 2
    wait_for(evaluated_twice, 30, "Prometheus to evaluate %s twice more" % name, interval=0.2)
    return alert_state(prometheus, name)


def alert_rules(work):
    """The rendered PrometheusRule's groups, written as a Prometheus rules file."""
    _, _, out = chart.render(work, [os.path.join(HERE, "values", "all-on.yaml")])
    rule = chart.find(chart.manifests(out), "PrometheusRule")[0]
    path = os.path.join(work, "eslease-rules.yaml")
    with open(path, "w") as f:
        yaml.safe_dump({"groups": rule["spec"]["groups"]}, f)
    return path, [r for g in rule["spec"]["groups"] for r in g["rules"]]


def main():
    args = sys.argv[1:]
    png = None
    if "--png" in args:
        at = args.index("--png")
        png = os.path.abspath(args[at + 1])
        del args[at:at + 2]
    if len(args) < 3:
        raise SystemExit(__doc__)
    bin_dir, source, work_root = args[0], args[1], args[2]
    os.makedirs(work_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="prometheus-test-", dir=work_root)
    chart.configure(bin_dir, work)
    chart.skip_without_helm()
    failures = []
    try:
        rules_file, rules = alert_rules(work)
        check = subprocess.run(["promtool", "check", "rules", rules_file], capture_output=True, text=True, timeout=60)
        print(check.stdout.strip())
        if check.returncode != 0:
            failures.append("promtool check rules: " + check.stdout + check.stderr)
        with open(os.path.join(source, "dashboards", "eslease.json")) as f:
            dashboard = json.load(f)

        with Environment(bin_dir, source) as env:
            replicas = scenario.start_controllers(env)
            targets = [(c.name, c.metrics_url.split("/")[2]) for c in replicas]
            prometheus = Prometheus(env, targets, rules_file)
            wait_for(lambda: len(prometheus.query('up{job="%s"} == 1' % JOB)) == len(replicas), 30,
                     "Prometheus to scrape both replicas", interval=0.2)
            start = time.time()
            quiet = []
            scenario.run(env, bin_dir, log=lambda m: print("scenario:", m),
                         before_timeouts=lambda: quiet.extend(quiet_after_evaluations(prometheus, TIMING_OUT)))
            if quiet:
                failures.append("%s is active before any claim timed out: %s" % (TIMING_OUT, quiet))
            else:
                print("ok   alert %s stays quiet while no claim times out" % TIMING_OUT)
            firing = wait_for(lambda: [a for a in alert_state(prometheus, TIMING_OUT) if a[1] == "firing"], 30,
                              "%s to fire after a claim timed out" % TIMING_OUT, interval=0.2)
            if [labels.get("priority") for labels, _ in firing] != ["Background"]:
                failures.append("%s fired for %s, not for the one Background claim that timed out"
                                % (TIMING_OUT, firing))
            else:
                print("ok   alert %s fires for the Background claim that timed out" % TIMING_OUT)
            # Everything the scenario caused, as the replicas export it, must reach Prometheus.
            expected = {"eslease_takeovers_total": 'sum(eslease_takeovers_total{reason="PodDeleted"}) >= 1',
                        "eslease_backend_conflicts_total": "sum(eslease_backend_conflicts_total) >= 1",
                        "eslease_watch_restarts_total": "sum(eslease_watch_restarts_total) >= 1",
                        "eslease_grants_total": "sum(eslease_grants_total) >= 5"}
            for what, expr in expected.items():
                wait_for(lambda: prometheus.query(expr), 30, "Prometheus to see %s (%s)" % (what, expr), interval=0.2)
            # Two more scrapes after the last change, so rates over the end have two samples.
            last = float(prometheus.query('max(timestamp(up{job="%s"}))' % JOB)[0]["value"][1])
            wait_for(lambda: float(prometheus.query('min(timestamp(up{job="%s"}))' % JOB)[0]["value"][1]) >= last + 2,
                     30, "two more scrapes", interval=0.2)
            end = time.time()

            names = set(prometheus.api("label/__name__/values"))
            for metric in sorted(set(re.findall(r"\beslease_[a-z_]+", json.dumps(dashboard)))):
                base = re.sub(r"_(bucket|sum|count)$", "", metric)
                if metric not in names and base + "_bucket" not in names:
                    failures.append("the dashboard names %s, which the controller does not export" % metric)

            for title, expr in dashboard_queries(dashboard):
                try:
                    data = values_of(prometheus.query_range(expr, start, end))
                except AssertionError as e:
                    failures.append("panel %r: %s" % (title, e))
                    continue
                status = "ok  " if data else "FAIL"
                print("%s panel %-45s %4d points  %s" % (status, title[:45], len(data), expr))
                if not data:
                    failures.append("panel %r returns no data: %s" % (title, expr))

            for what, expr in reference_queries(source):
                data = prometheus.query(expr)
                print("%s %-51s %4d series  %s" % ("ok  " if data else "FAIL", what[:51], len(data), expr))
                if not data:
                    failures.append("%s returns no data: %s" % (what, expr))

            # Each expression showing a gauge that every replica exports, held to the API's counts.
            panels = [("panel %r" % title, expr, counted_by(expr)) for title, expr in dashboard_queries(dashboard)]
            signals = [("alert " + r["alert"], SIGNAL.match(r["expr"].strip()).group(1), counted_by(r["expr"]))
                       for r in rules if SIGNAL.match(r["expr"].strip())]
            examples = [(what, expr, counted_by(expr)) for what, expr in reference_queries(source)]
            counted = [c for c in panels + signals + examples if c[2]]
            failures += ["no dashboard panel shows %s, so nothing holds it to the API" % kind
                         for kind in sorted(set(COUNTED.values()) - {c[2] for c in panels})]
            for title, expr, kind in counted:
                wrong = agrees_with_api(env, prometheus, expr, kind)
                print("%s %-50s against the API's Leases" % ("FAIL" if wrong else "ok  ", title[:50]))
                if wrong:
                    failures.append("%s disagrees with the Leases in the API: %s: %s" % (title, "; ".join(wrong), expr))

            for rule in rules:
                expr = rule["expr"]
                match = SIGNAL.match(expr.strip())
                if not match:
                    failures.append("alert %s: expression is not '(signal) <op> threshold': %s" % (rule["alert"], expr))
                    continue
                try:
                    prometheus.query(expr)  # the whole rule runs
                    data = values_of(prometheus.query_range(match.group(1), start, end))
                except AssertionError as e:
                    failures.append("alert %s: %s" % (rule["alert"], e))
                    continue
                status = "ok  " if data else "FAIL"
                print("%s alert %-45s %4d points  %s" % (status, rule["alert"], len(data), match.group(1)))
                if not data:
                    failures.append("alert %s: its signal returns no data: %s" % (rule["alert"], match.group(1)))

            loaded = prometheus.api("rules")["groups"]
            health = {r["name"]: r.get("health") for g in loaded for r in g["rules"]}
            wait_for(lambda: all(v == "ok" for v in {r["name"]: r.get("health") for g in prometheus.api("rules")["groups"]
                                                   for r in g["rules"]}.values()), 10,
                     "Prometheus to evaluate every alert rule without error (%s)" % health, interval=0.2)
            if sorted(health) != sorted(r["alert"] for r in rules):
                failures.append("Prometheus loaded rules %s" % sorted(health))

            failures += check_through_failover(env, prometheus, replicas, counted)

            if png:
                import dashboard_png
                dashboard_png.draw(dashboard, lambda expr: prometheus.query_range(expr, start, end),
                                   dashboard_queries, png)
                print("wrote", png)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print("every dashboard and alert expression returned data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
