"""Draws every panel of a Grafana dashboard into one PNG from a Prometheus, with
matplotlib: what an operator would see in Grafana, for review without Grafana."""

import datetime
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


def legend(template, labels):
    out = template or "{{__name__}}"
    for key, value in labels.items():
        out = out.replace("{{%s}}" % key, value)
    return out.replace("{{", "").replace("}}", "")


def draw(dashboard, query_range, dashboard_queries, path):
    """query_range(expr) -> Prometheus matrix; dashboard_queries(dashboard) -> [(title, expr)]
    in panel order, with Grafana's variables already substituted."""
    panels = [p for p in dashboard["panels"] if p.get("targets")]
    exprs = iter(dashboard_queries(dashboard))
    columns = 3
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 3.2 * rows), squeeze=False)
    fig.suptitle("%s (uid %s)" % (dashboard["title"], dashboard["uid"]), fontsize=14)
    for ax, panel in zip([a for row in axes for a in row], panels):
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
        ax.set_title(panel["title"], fontsize=10)
        drawn = 0
        for target in panel["targets"]:
            _, expr = next(exprs)
            for series in query_range(expr):
                points = [(datetime.datetime.fromtimestamp(float(t)), float(v)) for t, v in series["values"]
                          if not math.isnan(float(v))]
                if not points:
                    continue
                xs, ys = zip(*points)
                label = legend(target.get("legendFormat"), series["metric"])
                if panel["type"] == "stat":
                    ax.plot(xs, ys, drawstyle="steps-post", label="%s: %g" % (label, ys[-1]))
                else:
                    ax.plot(xs, ys, label=label, linewidth=1.2)
                drawn += 1
        if not drawn:
            ax.text(0.5, 0.5, "No data", ha="center", va="center", transform=ax.transAxes)
        ax.set_ylabel({"s": "seconds", "ops": "per second", "reqps": "requests/s"}.get(unit, ""), fontsize=8)
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
        ax.tick_params(labelsize=7)
        if drawn:
            ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    for ax in [a for row in axes for a in row][len(panels):]:
        ax.axis("off")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=80)
    plt.close(fig)
