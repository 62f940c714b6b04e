"""The numbers the guide states for defaults, read back from where they are defined: the
CRD's schema defaults and bounds, `eslease-controller --help`, `eslease --help` and the chart's
values.yaml. docs_test.py runs `problems()`; each claim names the page, the sentence (a
regular expression with one group per number) and the source of the number, so a changed
default or a changed sentence fails with both quoted."""

import glob
import os
import re
import subprocess

import yaml


def crd_spec_properties(source):
    with open(glob.glob(os.path.join(source, "crds", "*.yaml"))[0]) as f:
        crd = yaml.safe_load(f)
    version = crd["spec"]["versions"][0]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]


def help_defaults(path):
    """{"--flag": "default"} from `--help` lines ending in "(default: X)"."""
    text = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30).stdout
    out = {}
    flag = None
    for line in text.splitlines():
        m = re.match(r"^\s{2}(--[a-z][a-z0-9-]*)", line)
        if m:
            flag = m.group(1)
        d = re.search(r"\(default: ([^)]*)\)", line)
        if d and flag:
            out[flag] = d.group(1)
    return out, text


def seconds(value):
    """"15s", "1m30s", "500ms", "0.5" -> seconds as a float."""
    value = str(value).strip()
    if re.fullmatch(r"[0-9.]+", value):
        return float(value)
    total = 0.0
    for number, unit in re.findall(r"([0-9.]+)(ms|s|m|h)", value):
        total += float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def read(source, page):
    with open(os.path.join(source, page)) as f:
        return re.sub(r"\s+", " ", f.read())  # sentences wrap anywhere


def check(problems, source, page, pattern, expected, what):
    """Every match of `pattern` on `page` must state `expected` (a tuple, one per group)."""
    text = read(source, page)
    matches = re.findall(pattern, text)
    if not matches:
        problems.append("%s no longer says %r (%s): update tests/deploy/doc_numbers.py" % (page, pattern, what))
    for found in matches:
        found = found if isinstance(found, tuple) else (found,)
        if tuple(float(x) for x in found) != tuple(float(x) for x in expected):
            problems.append("%s states %s for %s; the source says %s" % (page, "/".join(found), what,
                                                                          "/".join(str(x) for x in expected)))


def problems(bin_dir, source):
    out = []
    spec = crd_spec_properties(source)
    ttl = spec["leaseDurationSeconds"]["default"]
    grace = spec["livenessGraceSeconds"]["default"]
    controller, _ = help_defaults(os.path.join(bin_dir, "eslease-controller"))
    _, tool_help = help_defaults(os.path.join(bin_dir, "eslease"))
    with open(os.path.join(source, "charts", "eslease", "values.yaml")) as f:
        values = yaml.safe_load(f)

    # The Lease's defaults and bounds (the CRD) in the API page's table and in prose.
    api = read(source, "docs/api.md")
    for field, props in spec.items():
        row = re.search(r"\| `%s` \| [a-z ]+ \| ([^|]*) \| ([^|]*) \|" % re.escape(field), api)
        if not row:
            continue
        stated_default = re.findall(r"`([^`]+)`", row.group(1))
        if "default" in props and stated_default != [str(props["default"])]:
            out.append("docs/api.md gives %s the default %s; the CRD says %s" % (field, row.group(1).strip(),
                                                                                  props["default"]))
        if "minimum" in props and "maximum" in props:
            bounds = "%d–%d" % (props["minimum"], props["maximum"])
            if bounds not in row.group(2):
                out.append("docs/api.md gives %s the range %s; the CRD says %s" % (field, row.group(2).strip(),
                                                                                    bounds))
    # Any page that calls a number of seconds "the default" means the lease duration.
    for page in ["README.md"] + ["docs/" + n for n in sorted(os.listdir(os.path.join(source, "docs")))
                                 if n.endswith(".md")]:
        for found in re.findall(r"(\d+) ?s \(the default\)|the default (\d+) ?s\b|default (\d+) ?s TTL",
                                read(source, page)):
            stated = next(x for x in found if x)
            if int(stated) != ttl:
                out.append("%s calls %s s the default; the CRD's leaseDurationSeconds default is %d s" %
                           (page, stated, ttl))
    check(out, source, "docs/alerts.md", r"(\d+) s \(the default\) leaves (\d+) seconds between renewals",
          (ttl, ttl / 4), "the default lease duration and its renewal interval (a quarter)")
    check(out, source, "docs/sizing.md", r"with the default (\d+) s, one every (\d+) s per namespace",
          (ttl, ttl / 4), "the default lease duration and its renewal interval (a quarter)")
    check(out, source, "docs/protocol.md", r"With the defaults \(leaseDurationSeconds (\d+)", (ttl,),
          "the default lease duration")
    check(out, source, "docs/tool.md", r"With the default (\d+) s TTL", (ttl,), "the default lease duration")

    # The tool's defaults, as its --help states them.
    kube_ttl = re.search(r"Kubernetes mode:.*?acquire LOCK.*?\[--ttl (\d+)s\]", tool_help, re.S)
    if not kube_ttl or int(kube_ttl.group(1)) != ttl:
        out.append("eslease --help's Kubernetes-mode --ttl is not the CRD's default %d s" % ttl)
    run_grace = re.search(r"--grace, default\s+min\((\d+)s, ttl/(\d+)\)", tool_help)
    margin = re.search(r"--safety-margin \(default min\((\d+)s, ttl/(\d+)\)\)", tool_help)
    if run_grace:
        for page in ("docs/tool.md",):
            check(out, source, page, r"`--grace` \(default the smaller of (\d+) s and a fifth", (run_grace.group(1),),
                  "run's --grace")
    else:
        out.append("eslease --help no longer states run's --grace default as min(Ns, ttl/N)")
    # In Kubernetes mode the grace is the smaller of its cap and a fifth of the lease duration.
    kube_grace = min(float(run_grace.group(1)), ttl / float(run_grace.group(2))) if run_grace else 0.0
    if margin:
        for page in ("docs/tool.md", "docs/concepts.md", "docs/protocol.md"):
            check(out, source, page, r"--safety-margin`[;,]? (?:\()?(?:by )?default(?: the)? smaller of (\d+) s and a fifth",
                  (margin.group(1),), "run's --safety-margin")
        check(out, source, "README.md", r"within the safety margin \((\d+) s by default", (margin.group(1),),
              "run's --safety-margin")
        check(out, source, "docs/protocol.md", r"margin (\d+) s, grace ([\d.]+) s, a fifth of the lease duration\) the slack is ([\d.]+) s",
              (margin.group(1), kube_grace,
               round(3 * ttl / 4 - float(margin.group(1)) - kube_grace, 1)),
              "the slack at the defaults (3/4 TTL - margin - grace)")
    else:
        out.append("eslease --help no longer states run's --safety-margin default as min(Ns, ttl/N)")

    # The controller's flag defaults: the reference's tables and prose elsewhere.
    reference = read(source, "docs/reference.md")
    for flag, default in controller.items():
        row = re.search(r"\| `%s(?:[ =][^`]*)?` \| ([^|]*) \|" % re.escape(flag), reference)
        if not row:
            continue
        stated = re.findall(r"^\s*`([^`]+)`", row.group(1))
        if stated and re.fullmatch(r"[0-9a-z.:_-]+", default) and stated[0] != default:
            out.append("docs/reference.md gives %s the default %s; --help says %s" % (flag, stated[0], default))
    check(out, source, "docs/sizing.md", r"`--leader-election-retry-period` \(([\d.]+) s\)",
          (seconds(controller["--leader-election-retry-period"]),), "--leader-election-retry-period")
    check(out, source, "docs/sizing.md", r"`--kube-api-burst (\d+)`", (controller["--kube-api-burst"],),
          "--kube-api-burst")
    check(out, source, "docs/sizing.md", r"`--kube-api-qps (\d+)`", (controller["--kube-api-qps"],), "--kube-api-qps")
    check(out, source, "docs/protocol.md", r"`--es-timeout` \((\d+) s\)", (seconds(controller["--es-timeout"]),),
          "--es-timeout")

    # The chart's values.
    check(out, source, "docs/alerts.md", r"`leaderElection.leaseDuration` \((\d+) s\)",
          (seconds(values["leaderElection"]["leaseDuration"]),), "leaderElection.leaseDuration")
    check(out, source, "docs/install.md", r"`leaderElection.leaseDuration`, (\d+) s by default",
          (seconds(values["leaderElection"]["leaseDuration"]),), "leaderElection.leaseDuration")
    check(out, source, "docs/alerts.md", r"`prometheusRule.takeoverLatencyThresholdSeconds` \(([0-9.]+) s\)",
          (values["prometheusRule"]["takeoverLatencyThresholdSeconds"],), "takeoverLatencyThresholdSeconds")
    requests, limits = values["resources"]["requests"]["memory"], values["resources"]["limits"]["memory"]
    check(out, source, "docs/sizing.md", r"request (\d+)Mi, limit (\d+)Mi",
          (requests.rstrip("Mi"), limits.rstrip("Mi")), "the chart's memory request and limit")
    return out
