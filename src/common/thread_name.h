// Names the calling thread, so that `top -H`, `ps -L`, a debugger and /proc/PID/task/*/comm
// show which part of a process a thread is (a worker, an informer, the session keeper)
// rather than the executable's name for every thread.
#pragma once

#include <string_view>

namespace eslease {

// Linux keeps 15 bytes of a thread's name: a longer one is cut there.
void name_this_thread(std::string_view name);

}  // namespace eslease
