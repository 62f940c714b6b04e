// eslease: distributed locks from the command line, through Lease objects and the controller
// (Kubernetes mode) or straight in Elasticsearch (direct mode).
#include <unistd.h>

#include <climits>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "common/log.h"

int main(int argc, char** argv) {
  eslease::log::configure(eslease::log::Format::kText, eslease::log::Level::kWarn);
  char hostname[HOST_NAME_MAX + 1] = {};
  if (gethostname(hostname, sizeof(hostname) - 1) != 0) hostname[0] = '\0';
  eslease::cli::Environment env{std::cout,
                                std::cerr,
                                eslease::SystemClock::instance(),
                                eslease::cli::elasticsearch_store_factory(eslease::SystemClock::instance()),
                                hostname[0] != '\0' ? hostname : "localhost",
                                static_cast<int>(getpid()),
                                eslease::cli::kubernetes_connector(),
                                eslease::cli::system_getenv(),
                                eslease::cli::system_read_small_file()};
  return eslease::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), env);
}
