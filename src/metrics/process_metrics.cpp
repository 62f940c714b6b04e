#include "metrics/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

namespace eslease::metrics {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily family(std::string name, std::string help, MetricType type, double value) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  prometheus::ClientMetric metric;
  if (type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  f.metric.push_back(metric);
  return f;
}

// The fields of /proc/self/stat after the command name, so that field N of proc(5) is at
// index N - 3.
std::optional<std::vector<std::string>> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields{std::istream_iterator<std::string>(rest),
                                  std::istream_iterator<std::string>()};
  if (fields.size() < 22) return std::nullopt;
  return fields;
}

std::optional<double> boot_time_seconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::optional<double> open_fds() {
  std::error_code error;
  std::filesystem::directory_iterator it("/proc/self/fd", error);
  if (error) return std::nullopt;
  double count = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(error)) {
    if (error) return std::nullopt;
    ++count;
  }
  return count;
}

double limit(int resource) {
  rlimit value{};
  if (getrlimit(resource, &value) != 0) return -1;
  // As the Go client reports "unlimited": the largest 64-bit value.
  return static_cast<double>(value.rlim_cur);
}

}  // namespace

std::vector<MetricFamily> process_metric_families() {
  std::vector<MetricFamily> out;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (auto stat = stat_fields(); stat && ticks > 0) {
    try {
      const double cpu = (std::stod((*stat)[14 - 3]) + std::stod((*stat)[15 - 3])) / ticks;
      out.push_back(family("process_cpu_seconds_total",
                           "User and system CPU time this process has used, in seconds.", MetricType::Counter,
                           cpu));
      out.push_back(family("process_resident_memory_bytes", "Resident memory of this process, in bytes.",
                           MetricType::Gauge, std::stod((*stat)[24 - 3]) * page));
      out.push_back(family("process_virtual_memory_bytes", "Virtual memory of this process, in bytes.",
                           MetricType::Gauge, std::stod((*stat)[23 - 3])));
      if (auto boot = boot_time_seconds()) {
        out.push_back(family("process_start_time_seconds",
                             "When this process started, in seconds since the epoch.", MetricType::Gauge,
                             *boot + std::stod((*stat)[22 - 3]) / ticks));
      }
    } catch (const std::exception&) {
      // A /proc/self/stat that does not parse: those families are left out.
    }
  }
  if (auto fds = open_fds()) {
    out.push_back(
        family("process_open_fds", "File descriptors this process has open.", MetricType::Gauge, *fds));
  }
  out.push_back(family("process_max_fds", "The most file descriptors this process may open.",
                       MetricType::Gauge, limit(RLIMIT_NOFILE)));
  out.push_back(family("process_virtual_memory_max_bytes",
                       "The most virtual memory this process may use, in bytes.", MetricType::Gauge,
                       limit(RLIMIT_AS)));
  return out;
}

}  // namespace eslease::metrics
