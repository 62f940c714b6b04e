#include "common/thread_name.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace eslease {
namespace {

// Names a new thread `name` and returns what /proc shows for it: what `ps -L`, `top -H` and
// the benchmarks read.
std::string shown_for_a_thread_named(std::string_view name) {
  std::string shown;
  std::thread([&] {
    name_this_thread(name);
    std::ifstream in("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/comm");
    std::getline(in, shown);
  }).join();
  return shown;
}

TEST(ThreadName, ThreadsShowTheirNamesInProc) {
  EXPECT_EQ(shown_for_a_thread_named("sessions"), "sessions");
}

TEST(ThreadName, ANameLongerThanTheKernelKeepsIsCutToFifteenBytes) {
  EXPECT_EQ(shown_for_a_thread_named("watch:leases.eslease.io"), "watch:leases.es");
}

}  // namespace
}  // namespace eslease
