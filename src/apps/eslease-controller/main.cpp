// eslease-controller: Lease resources become Elasticsearch locks with fencing tokens.
#include <string>
#include <vector>

#include "controller/app.h"

int main(int argc, char** argv) {
  return eslease::controller::run_controller_app(std::vector<std::string>(argv + 1, argv + argc));
}
