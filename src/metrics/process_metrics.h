// The process_* metrics every Prometheus client exports for its own process (resident and
// virtual memory, CPU time, open files, start time), named and typed as the Go client names
// them so that the usual dashboards and alerts work; read from /proc/self at each scrape.
// Internal to the metrics module.
#pragma once

#include <prometheus/metric_family.h>

#include <vector>

namespace eslease::metrics {

// The families that could be read now; one that /proc does not give is left out.
std::vector<prometheus::MetricFamily> process_metric_families();

}  // namespace eslease::metrics
