// eslease-controller's main(): configuration, clients, endpoints, signals, and the
// controller, with the exit codes the command line promises (0 clean shutdown, 1 cannot
// start, 2 usage error).
#pragma once

#include <string>
#include <vector>

namespace eslease::controller {

int run_controller_app(const std::vector<std::string>& args);

}  // namespace eslease::controller
