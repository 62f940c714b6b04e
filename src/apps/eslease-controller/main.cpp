// eslease-controller: Lease resources become Elasticsearch locks with fencing tokens.
#include <malloc.h>

#include <string>
#include <vector>

#include "apps/eslease-controller/app.h"
#include "http/transport.h"

int main(int argc, char** argv) {
  // glibc gives every thread its own malloc arena; the controller's caches are shared by its
  // threads, so a few arenas keep resident memory close to what the caches really hold.
  mallopt(M_ARENA_MAX, 2);
  // A few HTTP threads: with the default 40, the controller spends half its CPU waking them.
  eslease::http::set_cpprest_threads(4);
  return eslease::controller::run_controller_app(std::vector<std::string>(argv + 1, argv + argc));
}
