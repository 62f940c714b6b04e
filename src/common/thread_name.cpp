#include "common/thread_name.h"

#include <pthread.h>

#include <string>

namespace eslease {

void name_this_thread(std::string_view name) {
  constexpr std::size_t kLongest = 15;  // the kernel's TASK_COMM_LEN less the terminating NUL
  const std::string cut(name.substr(0, kLongest));
  // Only a name too long fails, and it is cut to fit: the result carries nothing to act on.
  (void)pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace eslease
