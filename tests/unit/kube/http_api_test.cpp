#include "kube/http_api.h"

#include <gtest/gtest.h>

#include "support/fake_transport.h"

namespace eslease::kube {
namespace {

using eslease::testing::FakeTransport;

RestConfig config_with_token() {
  RestConfig config;
  config.server = "https://api.example:6443";
  config.token = "tok";
  return config;
}

std::string header(const http::Request& r, const char* name) {
  return http::find_header(r.headers, name).value_or("");
}

TEST(HttpApiTest, PathsHeadersAndEncoding) {
  FakeTransport transport;
  HttpApi api(config_with_token(), transport);
  transport.push(200, R"({"metadata":{"name":"p"}})");
  auto pod = api.get(resources::pods(), "ns 1", "p/../x");
  ASSERT_TRUE(pod.ok());
  transport.push(200, R"({"metadata":{"name":"l"}})");
  ASSERT_TRUE(api.get(resources::eslease_leases(), "batch", "l").ok());
  transport.push(200, R"({"metadata":{"name":"n"}})");
  ASSERT_TRUE(api.get(resources::nodes(), "ignored", "n").ok());
  auto requests = transport.requests();
  EXPECT_EQ(requests[0].url, "https://api.example:6443/api/v1/namespaces/ns%201/pods/p%2F..%2Fx");
  EXPECT_EQ(requests[1].url, "https://api.example:6443/apis/eslease.io/v1alpha1/namespaces/batch/leases/l");
  EXPECT_EQ(requests[2].url, "https://api.example:6443/api/v1/nodes/n");
  EXPECT_EQ(header(requests[0], "Authorization"), "Bearer tok");
  EXPECT_EQ(header(requests[0], "Accept"), "application/json");
  EXPECT_EQ(header(requests[0], "User-Agent").rfind("eslease/", 0), 0u);
}

TEST(HttpApiTest, BasicAuth) {
  FakeTransport transport;
  RestConfig config;
  config.server = "http://h";
  config.username = "admin";
  config.password = "pw";
  HttpApi api(config, transport);
  transport.push(200, "{}");
  ASSERT_TRUE(api.get(resources::pods(), "d", "x").ok());
  EXPECT_EQ(header(transport.requests()[0], "Authorization"), "Basic YWRtaW46cHc=");
}

TEST(HttpApiTest, ListPagesAndListAll) {
  FakeTransport transport;
  HttpApi api(config_with_token(), transport);
  transport.push(
      200, R"({"metadata":{"resourceVersion":"10","continue":"c1"},"items":[{"metadata":{"name":"a"}}]})");
  transport.push(200, R"({"metadata":{"resourceVersion":"11"},"items":[{"metadata":{"name":"b"}}]})");
  ListOptions options;
  options.limit = 1;
  options.label_selector = "app=x,tier in (a,b)";
  auto all = list_all(api, resources::pods(), "", options);
  ASSERT_TRUE(all.ok()) << all.error().describe();
  ASSERT_EQ(all->items.size(), 2u);
  EXPECT_EQ(all->resource_version, "11");
  auto requests = transport.requests();
  EXPECT_EQ(requests[0].url,
            "https://api.example:6443/api/v1/pods?labelSelector=app%3Dx%2Ctier%20in%20%28a%2Cb%29&limit=1");
  EXPECT_NE(requests[1].url.find("continue=c1"), std::string::npos);
}

TEST(HttpApiTest, WritesUseRightVerbsAndContentTypes) {
  FakeTransport transport;
  HttpApi api(config_with_token(), transport);
  for (int i = 0; i < 6; ++i) transport.push(200, R"({"metadata":{"name":"x"}})");
  nlohmann::json object = {{"metadata", {{"name", "x"}, {"namespace", "d"}, {"resourceVersion", "5"}}}};
  ASSERT_TRUE(api.create(resources::pods(), "d", object).ok());
  ASSERT_TRUE(api.update(resources::pods(), object).ok());
  ASSERT_TRUE(api.update_status(resources::pods(), object).ok());
  ASSERT_TRUE(api.patch(resources::pods(), "d", "x", PatchType::kMerge, {{"a", 1}}).ok());
  ASSERT_TRUE(api.patch(resources::pods(), "d", "x", PatchType::kJson, nlohmann::json::array(), true).ok());
  DeleteOptions del;
  del.precondition_uid = "u1";
  ASSERT_TRUE(api.remove(resources::pods(), "d", "x", del).ok());
  auto r = transport.requests();
  EXPECT_EQ(r[0].method, "POST");
  EXPECT_EQ(r[0].url, "https://api.example:6443/api/v1/namespaces/d/pods");
  EXPECT_EQ(r[1].method, "PUT");
  EXPECT_EQ(nlohmann::json::parse(r[1].body)["metadata"]["resourceVersion"], "5");
  EXPECT_EQ(r[2].url, "https://api.example:6443/api/v1/namespaces/d/pods/x/status");
  EXPECT_EQ(header(r[3], "Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(header(r[4], "Content-Type"), "application/json-patch+json");
  EXPECT_EQ(r[4].url, "https://api.example:6443/api/v1/namespaces/d/pods/x/status");
  EXPECT_EQ(r[5].method, "DELETE");
  EXPECT_EQ(nlohmann::json::parse(r[5].body)["preconditions"]["uid"], "u1");
}

// A writer that reads only the resourceVersion its write produced gets the metadata alone;
// an answer that is not an object is refused as any other.
TEST(HttpApiTest, AWriteReadForItsVersionGetsTheMetadataOnly) {
  FakeTransport transport;
  HttpApi api(config_with_token(), transport);
  transport.push(200, R"({"metadata":{"name":"x","resourceVersion":"8"},"status":{"phase":"Held"}})");
  transport.push(200, R"({"metadata":{"name":"x"},"status":)");
  CallOptions call;
  call.metadata_only = true;
  auto patched = api.patch(resources::pods(), "d", "x", PatchType::kMerge, {{"a", 1}}, true, call);
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(*patched, (nlohmann::json{{"metadata", {{"name", "x"}, {"resourceVersion", "8"}}}}));
  EXPECT_EQ(api.patch(resources::pods(), "d", "x", PatchType::kMerge, {{"a", 1}}, true, call).error().code,
            ErrorCode::kProtocol);
}

TEST(HttpApiTest, TypedErrorsAndBadBodies) {
  FakeTransport transport;
  HttpApi api(config_with_token(), transport);
  transport.push(
      409, R"({"kind":"Status","status":"Failure","reason":"AlreadyExists","message":"exists","code":409})");
  transport.push(
      409, R"({"kind":"Status","status":"Failure","reason":"Conflict","message":"modified","code":409})");
  transport.push(200, "not json");
  transport.push_error(ErrorCode::kUnavailable, "refused");
  EXPECT_EQ(api.create(resources::pods(), "d", {{"metadata", {{"name", "x"}}}}).error().code,
            ErrorCode::kAlreadyExists);
  EXPECT_EQ(api.update(resources::pods(), {{"metadata", {{"name", "x"}}}}).error().code,
            ErrorCode::kConflict);
  EXPECT_EQ(api.get(resources::pods(), "d", "x").error().code, ErrorCode::kProtocol);
  EXPECT_EQ(api.get(resources::pods(), "d", "x").error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(api.get(resources::pods(), "d", "").error().code, ErrorCode::kInvalidArgument);
}

TEST(HttpApiTest, WatchDecodesEventsAndMapsErrors) {
  FakeTransport transport;
  HttpApi api(config_with_token(), transport);
  transport.push(200,
                 "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
                 "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n");
  std::vector<WatchEvent::Type> seen;
  WatchOptions options;
  options.resource_version = "5";
  options.timeout_seconds = 300;
  options.idle_timeout = std::chrono::seconds(3);
  Status ended = api.watch(resources::pods(), "d", options,
                           [&](const WatchEvent& e) {
                             seen.push_back(e.type);
                             return true;
                           },
                           {});
  EXPECT_TRUE(ended.ok());
  EXPECT_EQ(seen, (std::vector{WatchEvent::Type::kAdded, WatchEvent::Type::kBookmark}));
  auto request = transport.requests()[0];
  EXPECT_EQ(request.url,
            "https://api.example:6443/api/v1/namespaces/d/pods?watch=true&resourceVersion=5"
            "&allowWatchBookmarks=true&timeoutSeconds=300");
  EXPECT_EQ(request.timeout, std::chrono::seconds(3));

  transport.push(410, R"({"kind":"Status","reason":"Expired","code":410,"message":"too old"})");
  EXPECT_EQ(
      api.watch(resources::pods(), "d", options, [](const WatchEvent&) { return true; }, {}).error().code,
      ErrorCode::kGone);
  transport.push(200, "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"ADD");
  EXPECT_EQ(
      api.watch(resources::pods(), "d", options, [](const WatchEvent&) { return true; }, {}).error().code,
      ErrorCode::kProtocol);
}

}  // namespace
}  // namespace eslease::kube
