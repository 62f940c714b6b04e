// CRUD semantics of the kube-emulator handler: Status bodies, resourceVersion, finalizers,
// patches, auth, faults, bad input. Custom resources and CRDs: custom_resources_test.cpp.
#include <gtest/gtest.h>

#include "emulators/kube/tests/api_test_support.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;
using testing::call_raw;
using KubeCrudTest = testing::ApiServerTest;

const std::string kLeases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const std::string kWidgets = "/apis/example.io/v1/namespaces/default/widgets";

TEST_F(KubeCrudTest, CreateThenGetReturnsServerFilledMetadata) {
  auto created = call(api, "POST", kLeases, testing::lease("a"));
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const json& meta = created.body["metadata"];
  EXPECT_EQ(meta["namespace"], "default");
  EXPECT_EQ(meta["uid"].get<std::string>().size(), 36u);
  EXPECT_TRUE(meta["resourceVersion"].is_string());
  EXPECT_TRUE(meta["creationTimestamp"].is_string());
  auto got = call(api, "GET", kLeases + "/a");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, created.body);
}

TEST_F(KubeCrudTest, WhatAChartInstallsIsStoredAsGiven) {
  const json deployment = {{"apiVersion", "apps/v1"},
                           {"kind", "Deployment"},
                           {"metadata", {{"name", "d"}}},
                           {"spec", {{"replicas", 2}}}};
  auto created = call(api, "POST", "/apis/apps/v1/namespaces/default/deployments", deployment);
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["spec"]["replicas"], 2);
  EXPECT_EQ(created.body["metadata"]["generation"], 1);
  const json role = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata", {{"name", "r"}}},
      {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"list"}}}})}};
  created = call(api, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role);
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["rules"], role["rules"]);
  EXPECT_EQ(call(api, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/r").status, 200);
  EXPECT_EQ(call(api, "POST", "/api/v1/namespaces/default/serviceaccounts",
                 {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "sa"}}}})
                .status,
            201);
}

TEST_F(KubeCrudTest, MissingObjectIsNotFoundStatus) {
  auto reply = call(api, "GET", kLeases + "/nope");
  EXPECT_EQ(reply.status, 404);
  EXPECT_EQ(reply.body, json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"leases.coordination.k8s.io \"nope\" not found","reason":"NotFound",
    "details":{"name":"nope","group":"coordination.k8s.io","kind":"leases"},"code":404})"));
}

TEST_F(KubeCrudTest, SecondCreateIsAlreadyExists) {
  ASSERT_EQ(call(api, "POST", kLeases, testing::lease("a")).status, 201);
  auto reply = call(api, "POST", kLeases, testing::lease("a"));
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(reply.body["reason"], "AlreadyExists");
  EXPECT_EQ(reply.body["message"], "leases.coordination.k8s.io \"a\" already exists");
  EXPECT_EQ(reply.body["details"]["kind"], "leases");
}

TEST_F(KubeCrudTest, InvalidNameIsUnprocessableWithCauses) {
  auto reply = call(api, "POST", kLeases, testing::lease("Bad_Name"));
  EXPECT_EQ(reply.status, 422);
  EXPECT_EQ(reply.body["reason"], "Invalid");
  EXPECT_EQ(reply.body["details"]["kind"], "Lease");
  ASSERT_EQ(reply.body["details"]["causes"].size(), 1u);
  EXPECT_EQ(reply.body["details"]["causes"][0]["reason"], "FieldValueInvalid");
  EXPECT_EQ(reply.body["details"]["causes"][0]["field"], "metadata.name");
  EXPECT_EQ(reply.body["message"].get<std::string>().rfind(
                "Lease.coordination.k8s.io \"Bad_Name\" is invalid: metadata.name: Invalid value: "
                "\"Bad_Name\": a lowercase RFC 1123 subdomain",
                0),
            0u)
      << reply.body["message"];
}

TEST_F(KubeCrudTest, MissingNameAndGenerateName) {
  json object = testing::lease("x");
  object["metadata"].erase("name");
  auto reply = call(api, "POST", kLeases, object);
  EXPECT_EQ(reply.status, 422);
  EXPECT_EQ(reply.body["details"]["causes"][0]["reason"], "FieldValueRequired");
  object["metadata"]["generateName"] = "gen-";
  auto generated = call(api, "POST", kLeases, object);
  ASSERT_EQ(generated.status, 201);
  const std::string name = generated.body["metadata"]["name"];
  EXPECT_EQ(name.size(), 9u);
  EXPECT_EQ(name.rfind("gen-", 0), 0u);
}

TEST_F(KubeCrudTest, CreateInMissingNamespaceIsNamespaceNotFound) {
  auto reply = call(api, "POST", "/apis/coordination.k8s.io/v1/namespaces/ghost/leases", testing::lease("a"));
  EXPECT_EQ(reply.status, 404);
  EXPECT_EQ(reply.body["message"], "namespaces \"ghost\" not found");
}

TEST_F(KubeCrudTest, TypeMetaChecks) {
  json object = testing::lease("a");
  object["apiVersion"] = "v1";
  EXPECT_EQ(call(api, "POST", kLeases, object).status, 400);
  object = testing::lease("a");
  object.erase("kind");
  object.erase("apiVersion");
  EXPECT_EQ(call(api, "POST", kLeases, object).status, 201)
      << "built-in types default to the endpoint's kind";
  install_widgets();
  json custom = testing::widget("w");
  custom.erase("kind");
  auto reply = call(api, "POST", kWidgets, custom);
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body["message"].get<std::string>().rfind("Object 'Kind' is missing in", 0), 0u);
}

TEST_F(KubeCrudTest, StaleResourceVersionConflicts) {
  auto created = call(api, "POST", kLeases, testing::lease("x"));
  json first = created.body;
  first["spec"]["holderIdentity"] = "b";
  ASSERT_EQ(call(api, "PUT", kLeases + "/x", first).status, 200);
  json stale = created.body;
  stale["spec"]["holderIdentity"] = "c";
  auto reply = call(api, "PUT", kLeases + "/x", stale);
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(reply.body["reason"], "Conflict");
  EXPECT_EQ(reply.body["message"],
            "Operation cannot be fulfilled on leases.coordination.k8s.io \"x\": the object has been "
            "modified; please "
            "apply your changes to the latest version and try again");
}

TEST_F(KubeCrudTest, PutWithoutResourceVersionIsUnconditional) {
  auto created = call(api, "POST", kLeases, testing::lease("x"));
  json update = testing::lease("x");
  update["spec"]["holderIdentity"] = "z";
  auto reply = call(api, "PUT", kLeases + "/x", update);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body["spec"]["holderIdentity"], "z");
  EXPECT_EQ(reply.body["metadata"]["uid"], created.body["metadata"]["uid"]);
  EXPECT_NE(reply.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);
}

TEST_F(KubeCrudTest, UpdateThatChangesNothingKeepsResourceVersion) {
  auto created = call(api, "POST", kLeases, testing::lease("x"));
  auto reply = call(api, "PUT", kLeases + "/x", created.body);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);
}

TEST_F(KubeCrudTest, ResourceVersionIsOneCounterAcrossResources) {
  auto lease = call(api, "POST", kLeases, testing::lease("x"));
  auto pod =
      call(api, "POST", "/api/v1/namespaces/default/pods",
           {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}, {"spec", json::object()}});
  ASSERT_EQ(pod.status, 201);
  EXPECT_EQ(std::stoull(pod.body["metadata"]["resourceVersion"].get<std::string>()),
            std::stoull(lease.body["metadata"]["resourceVersion"].get<std::string>()) + 1);
  EXPECT_EQ(pod.body["status"]["phase"], "Pending");
  auto list = call(api, "GET", kLeases);
  EXPECT_EQ(list.body["metadata"]["resourceVersion"], pod.body["metadata"]["resourceVersion"]);
}

TEST_F(KubeCrudTest, FinalizersDelayDeletionUntilRemoved) {
  install_widgets();
  json object = testing::widget("w", 1);
  object["metadata"]["finalizers"] = {"example.io/cleanup"};
  ASSERT_EQ(call(api, "POST", kWidgets, object).status, 201);
  auto deleting = call(api, "DELETE", kWidgets + "/w");
  EXPECT_EQ(deleting.status, 200);
  EXPECT_TRUE(deleting.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(deleting.body["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(deleting.body["metadata"]["generation"], 2);
  EXPECT_EQ(call(api, "GET", kWidgets + "/w").status, 200);

  auto adding =
      call(api, "PATCH", kWidgets + "/w", {{"metadata", {{"finalizers", {"example.io/cleanup", "x/y"}}}}},
           {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(adding.status, 422);

  auto released = call(api, "PATCH", kWidgets + "/w", {{"metadata", {{"finalizers", nullptr}}}},
                       {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(released.status, 200);
  EXPECT_EQ(call(api, "GET", kWidgets + "/w").status, 404);
}

TEST_F(KubeCrudTest, DeleteAnswersStatusOrObjectAsTheRealRegistries) {
  auto lease = call(api, "POST", kLeases, testing::lease("x"));
  auto deleted = call(api, "DELETE", kLeases + "/x");
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(deleted.body["kind"], "Status");
  EXPECT_EQ(deleted.body["status"], "Success");
  EXPECT_EQ(deleted.body["details"]["uid"], lease.body["metadata"]["uid"]);
  EXPECT_EQ(call(api, "DELETE", kLeases + "/x").status, 404);

  ASSERT_EQ(call(api, "POST", "/api/v1/namespaces/default/pods",
                 {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}})
                .status,
            201);
  auto pod = call(api, "DELETE", "/api/v1/namespaces/default/pods/p");
  EXPECT_EQ(pod.status, 200);
  EXPECT_EQ(pod.body["kind"], "Pod");
}

TEST_F(KubeCrudTest, DeletePreconditionMismatchConflicts) {
  call(api, "POST", kLeases, testing::lease("x"));
  auto reply = call(api, "DELETE", kLeases + "/x", {{"preconditions", {{"uid", "other"}}}});
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(call(api, "GET", kLeases + "/x").status, 200);
}

TEST_F(KubeCrudTest, MergeAndJsonPatch) {
  auto created = call(api, "POST", kLeases, testing::lease("x"));
  auto merged = call(api, "PATCH", kLeases + "/x", {{"spec", {{"leaseDurationSeconds", 15}}}},
                     {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(merged.status, 200);
  EXPECT_EQ(merged.body["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(merged.body["spec"]["holderIdentity"], "a");

  json ops = json::array({{{"op", "test"}, {"path", "/spec/holderIdentity"}, {"value", "a"}},
                          {{"op", "replace"}, {"path", "/spec/holderIdentity"}, {"value", "b"}},
                          {{"op", "remove"}, {"path", "/spec/leaseDurationSeconds"}}});
  auto patched = call(api, "PATCH", kLeases + "/x", ops, {{"Content-Type", "application/json-patch+json"}});
  EXPECT_EQ(patched.status, 200);
  EXPECT_EQ(patched.body["spec"], json({{"holderIdentity", "b"}}));

  json failing = json::array({{{"op", "test"}, {"path", "/spec/holderIdentity"}, {"value", "a"}}});
  auto failed =
      call(api, "PATCH", kLeases + "/x", failing, {{"Content-Type", "application/json-patch+json"}});
  EXPECT_EQ(failed.status, 422);
  EXPECT_EQ(failed.body["message"], "the server rejected our request due to an error in our request");

  json stale = {{"metadata", {{"resourceVersion", created.body["metadata"]["resourceVersion"]}}}};
  auto conflicted =
      call(api, "PATCH", kLeases + "/x", stale, {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(conflicted.status, 409);

  auto missing = call(api, "PATCH", kLeases + "/nope", json::object(),
                      {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(missing.status, 404);
  auto garbage =
      call_raw(api, "PATCH", kLeases + "/x", "{oops", {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(garbage.status, 400);
}

TEST_F(KubeCrudTest, NamespaceDeletionRemovesItsObjects) {
  auto ns = call(api, "POST", "/api/v1/namespaces",
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}});
  ASSERT_EQ(ns.status, 201);
  EXPECT_EQ(ns.body["status"]["phase"], "Active");
  ASSERT_EQ(
      call(api, "POST", "/apis/coordination.k8s.io/v1/namespaces/team/leases", testing::lease("x")).status,
      201);
  EXPECT_EQ(call(api, "DELETE", "/api/v1/namespaces/team").status, 200);
  EXPECT_EQ(call(api, "GET", "/apis/coordination.k8s.io/v1/namespaces/team/leases/x").status, 404);
  EXPECT_EQ(call(api, "GET", "/api/v1/namespaces/team").status, 404);
  EXPECT_EQ(call(api, "DELETE", "/api/v1/namespaces/default").status, 403);
}

TEST_F(KubeCrudTest, MalformedAndOversizedBodies) {
  auto malformed = call_raw(api, "POST", kLeases, "{\"kind\": ");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_EQ(malformed.body["reason"], "BadRequest");
  auto oversize = call_raw(api, "POST", kLeases, std::string(3 * 1024 * 1024 + 1, ' '));
  EXPECT_EQ(oversize.status, 413);
  EXPECT_EQ(oversize.body["reason"], "RequestEntityTooLarge");
  auto not_object = call_raw(api, "POST", kLeases, "[1,2]");
  EXPECT_EQ(not_object.status, 400);
  json numeric_name = testing::lease("x");
  numeric_name["metadata"]["name"] = 5;
  EXPECT_EQ(call(api, "POST", kLeases, numeric_name).status, 400);
  json bad_labels = testing::lease("x");
  bad_labels["metadata"]["labels"] = {{"a", 1}};
  EXPECT_EQ(call(api, "POST", kLeases, bad_labels).status, 400);
}

TEST_F(KubeCrudTest, UnknownPathsAndMethods) {
  EXPECT_EQ(call(api, "GET", "/apis/nothing.io/v1/things").status, 404);
  auto reply = call(api, "POST", kLeases + "/x", testing::lease("x"));
  EXPECT_EQ(reply.status, 405);
  EXPECT_EQ(reply.body["reason"], "MethodNotAllowed");
}

TEST(KubeAuthTest, BearerTokenRequired) {
  ApiServerOptions options;
  options.bearer_token = "s3cret";
  ApiServer api(options);
  auto anonymous = call(api, "GET", "/api/v1/namespaces");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.body,
            json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"Unauthorized","reason":"Unauthorized","code":401})"));
  EXPECT_EQ(call(api, "GET", "/api/v1/namespaces", nullptr, {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(call(api, "GET", "/api/v1/namespaces", nullptr, {{"Authorization", "Bearer s3cret"}}).status,
            200);
  EXPECT_EQ(call(api, "GET", "/_emulator/stats").status, 200) << "admin endpoints need no token";
}

TEST_F(KubeCrudTest, FaultsAnswerErrorsThenClear) {
  auto set = call(api, "POST", "/_emulator/faults",
                  {{"verb", "get"}, {"resource", "leases"}, {"status", 500}, {"count", 1}});
  ASSERT_EQ(set.status, 200);
  call(api, "POST", kLeases, testing::lease("x"));
  auto faulted = call(api, "GET", kLeases + "/x");
  EXPECT_EQ(faulted.status, 500);
  EXPECT_EQ(faulted.body["reason"], "InternalError");
  EXPECT_EQ(call(api, "GET", kLeases + "/x").status, 200) << "count 1 is used up";

  call(api, "POST", "/_emulator/faults",
       {{"verb", "*"}, {"resource", "leases"}, {"status", 429}, {"retry_after_seconds", 2}});
  auto throttled = call(api, "GET", kLeases);
  EXPECT_EQ(throttled.status, 429);
  EXPECT_EQ(throttled.response->header("Retry-After").value_or(""), "2");
  EXPECT_EQ(throttled.body["details"]["retryAfterSeconds"], 2);
  call(api, "POST", "/_emulator/faults", {{"verb", "list"}, {"resource", "pods"}, {"drop", true}});
  EXPECT_TRUE(call(api, "GET", "/api/v1/pods").response->dropped());
  EXPECT_EQ(call(api, "DELETE", "/_emulator/faults").status, 200);
  EXPECT_EQ(call(api, "GET", kLeases).status, 200);
  EXPECT_EQ(call(api, "POST", "/_emulator/faults", {{"verb", "fly"}, {"status", 500}}).status, 400);

  auto stats = call(api, "GET", "/_emulator/stats");
  EXPECT_EQ(stats.body["requests"]["get leases"], 2);
  EXPECT_EQ(stats.body["requests"]["list leases"], 2);
  EXPECT_EQ(stats.body["requests"]["list leases.coordination.k8s.io"], 2) << "counted by group too";
  EXPECT_FALSE(stats.body["requests"].contains("list leases.eslease.io"));
  EXPECT_EQ(stats.body["watches_open"], 0);
  EXPECT_TRUE(stats.body["subresource_requests"].empty()) << "no subresource was called";
}

TEST_F(KubeCrudTest, StatusWritesAreCountedOnTheirOwnToo) {
  call(api, "PATCH", "/api/v1/namespaces/default/pods/nobody/status", {{"status", {{"phase", "Running"}}}},
       {{"Content-Type", "application/merge-patch+json"}});
  call(api, "GET", "/api/v1/namespaces/default/pods/nobody");
  auto stats = call(api, "GET", "/_emulator/stats");
  EXPECT_EQ(stats.body["requests"]["patch pods"], 1) << "still counted under its resource";
  EXPECT_EQ(stats.body["subresource_requests"]["patch pods/status"], 1);
  EXPECT_EQ(stats.body["subresource_requests"].size(), 1U) << "a call to the object itself is not";
}

TEST_F(KubeCrudTest, DiscoveryDocuments) {
  auto version = call(api, "GET", "/version");
  EXPECT_EQ(version.body["major"], "1");
  auto core = call(api, "GET", "/api/v1");
  ASSERT_EQ(core.status, 200);
  EXPECT_EQ(core.body["kind"], "APIResourceList");
  EXPECT_EQ(core.body["groupVersion"], "v1");
  auto coordination = call(api, "GET", "/apis/coordination.k8s.io");
  EXPECT_EQ(coordination.body["preferredVersion"]["version"], "v1");
  auto index = call(api, "GET", "/openapi/v3");
  ASSERT_TRUE(index.body["paths"].contains("api/v1"));
  const std::string url = index.body["paths"]["api/v1"]["serverRelativeURL"];
  EXPECT_NE(url.find("?hash="), std::string::npos);
  auto doc = call(api, "GET", url);
  EXPECT_EQ(doc.status, 200);
  EXPECT_TRUE(doc.body.contains("openapi"));
}

}  // namespace
}  // namespace eslease::kubeemu
