// eslease-controller: Lease resources become Elasticsearch locks with fencing tokens.
#include <malloc.h>

#include <string>
#include <vector>

#include "apps/eslease-controller/app.h"

int main(int argc, char** argv) {
  // glibc gives every thread its own malloc arena; the controller's caches are shared by its
  // threads, so a few arenas keep resident memory close to what the caches really hold.
  mallopt(M_ARENA_MAX, 2);
  // No fast bins: with them, every allocation past the small sizes (each answer's body) first
  // merges all freed small blocks (5 % of the controller's CPU in a profile of the cold
  // start); the per-thread cache already serves the small sizes.
  mallopt(M_MXFAST, 0);
  return eslease::controller::run_controller_app(std::vector<std::string>(argv + 1, argv + argc));
}
