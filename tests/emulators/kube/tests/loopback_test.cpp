// kube-emulator over real HTTP on loopback, through the production client transport.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "emulators/kube/kube_emulator.h"
#include "http/transport.h"
#include "support/wait.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;

TEST(KubeEmulatorLoopbackTest, ServesRequestsAndWritesKubeconfig) {
  KubeEmulatorOptions options;
  options.bearer_token = "t0ken";
  KubeEmulator emulator(options);
  ASSERT_TRUE(emulator.start().ok());
  const std::string path = ::testing::TempDir() + "/kubeemu-loopback.kubeconfig";
  ASSERT_TRUE(emulator.write_kubeconfig(path).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  json config = json::parse(text.str());
  EXPECT_EQ(config["clusters"][0]["cluster"]["server"], emulator.url());
  EXPECT_EQ(config["users"][0]["user"]["token"], "t0ken");
  EXPECT_EQ(config["current-context"], "kube-emulator");
  std::remove(path.c_str());

  auto transport = http::make_transport();
  http::Request request;
  request.url = emulator.url() + "/api/v1/namespaces/default";
  auto anonymous = transport->send(request);
  ASSERT_TRUE(anonymous.ok()) << anonymous.error().describe();
  EXPECT_EQ(anonymous->status, 401);
  request.headers = {{"Authorization", "Bearer t0ken"}};
  auto reply = transport->send(request);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(json::parse(reply->body)["metadata"]["name"], "default");
  emulator.stop();
}

TEST(KubeEmulatorLoopbackTest, WatchStreamsEventsAndEndsOnStop) {
  KubeEmulator emulator;
  ASSERT_TRUE(emulator.start().ok());
  auto transport = http::make_transport();
  std::mutex mutex;
  std::string received;
  std::atomic<bool> done{false};
  std::stop_source stop;
  std::thread watcher([&] {
    http::Request request;
    request.url = emulator.url() + "/apis/coordination.k8s.io/v1/namespaces/default/leases?watch=true";
    request.timeout = std::chrono::seconds(30);
    (void)transport->stream(
        request,
        [&](std::string_view chunk) {
          std::lock_guard lock(mutex);
          received.append(chunk);
          return true;
        },
        stop.get_token());
    done = true;
  });
  auto writer = http::make_transport();
  http::Request create;
  create.method = "POST";
  create.url = emulator.url() + "/apis/coordination.k8s.io/v1/namespaces/default/leases";
  create.headers = {{"Content-Type", "application/json"}};
  create.body = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"a"}})";
  // The watch may open after the create: a resourceVersion-less watch replays current state.
  auto created = writer->send(create);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->status, 201);
  EXPECT_TRUE(eslease::testing::wait_until([&] {
    std::lock_guard lock(mutex);
    return received.find("\"ADDED\"") != std::string::npos;
  }));
  emulator.stop();
  EXPECT_TRUE(eslease::testing::wait_until([&] { return done.load(); }));
  stop.request_stop();
  watcher.join();
}

}  // namespace
}  // namespace eslease::kubeemu
