// eslease-controller: Lease resources become Elasticsearch locks with fencing tokens.
#include <string>
#include <vector>

#include "apps/eslease-controller/app.h"

// jemalloc's settings (it allocates for the controller, see the top CMakeLists.txt): two
// arenas, since the caches are shared by every thread and more arenas would only hold more
// memory; freed pages go back to the system at once. A cold start is a row of short bursts
// (the lists' pages, the first grants, a session renewal of every held lock every few
// seconds): pages kept for a second after each added about 5 MiB to the peak at 10,000 Leases,
// and returning them at once cost about 2 % more CPU (docs/sizing.md).
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): jemalloc reads this symbol
extern "C" const char* malloc_conf;
const char* malloc_conf = "narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0";

int main(int argc, char** argv) {
  return eslease::controller::run_controller_app(std::vector<std::string>(argv + 1, argv + argc));
}
