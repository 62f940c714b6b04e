// DELETE with DeleteOptions and the garbage collector, as the Kubernetes documentation
// describes them (https://kubernetes.io/docs/concepts/architecture/garbage-collection/,
// .../tasks/administer-cluster/use-cascading-deletion/): propagationPolicy Background,
// Foreground and Orphan, blockOwnerDeletion, owners matched by uid, and the protobuf
// DeleteOptions client-go sends.
#include <gtest/gtest.h>

#include "emulators/kube/tests/api_test_support.h"
#include "support/wait.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;
using testing::call_raw;

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";
const std::string kLeases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

class KubeGarbageCollectionTest : public ::testing::Test {
 protected:
  json owner(const std::string& name) {
    auto reply = call(api, "POST", kConfigMaps,
                      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}});
    EXPECT_EQ(reply.status, 201) << reply.body.dump();
    return reply.body;
  }
  static json reference(const json& to, bool block = false) {
    json ref = {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"name", to["metadata"]["name"]},
                {"uid", to["metadata"]["uid"]}};
    if (block) ref["blockOwnerDeletion"] = true;
    return ref;
  }
  json dependent(const std::string& name, json references, json finalizers = nullptr) {
    json lease = testing::lease(name);
    lease["metadata"]["ownerReferences"] = std::move(references);
    if (!finalizers.is_null()) lease["metadata"]["finalizers"] = std::move(finalizers);
    auto reply = call(api, "POST", kLeases, lease);
    EXPECT_EQ(reply.status, 201) << reply.body.dump();
    return reply.body;
  }
  int status_of(const std::string& url) { return call(api, "GET", url).status; }
  // Waits, up to a deadline, for `url` to answer `status`.
  bool becomes(const std::string& url, int status) {
    return eslease::testing::wait_until([&] { return status_of(url) == status; });
  }
  testing::Reply remove(const std::string& url, const json& options = nullptr) {
    return call(api, "DELETE", url, options);
  }
  ApiServer api{ApiServerOptions{}};
};

TEST_F(KubeGarbageCollectionTest, BackgroundDeletesTheOwnerAtOnceAndItsDependentsAfter) {
  json cm = owner("owner");
  dependent("dep", json::array({reference(cm)}));
  json unrelated = owner("other");
  dependent("kept", json::array({reference(unrelated)}));
  auto reply = remove(kConfigMaps + "/owner", {{"propagationPolicy", "Background"}});
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(status_of(kConfigMaps + "/owner"), 404);
  EXPECT_TRUE(becomes(kLeases + "/dep", 404));
  EXPECT_EQ(status_of(kLeases + "/kept"), 200);
}

TEST_F(KubeGarbageCollectionTest, WithoutAPolicyTheDefaultIsBackground) {
  json cm = owner("owner");
  dependent("dep", json::array({reference(cm)}));
  ASSERT_EQ(remove(kConfigMaps + "/owner").status, 200);
  EXPECT_TRUE(becomes(kLeases + "/dep", 404));
}

TEST_F(KubeGarbageCollectionTest, ADependentWithAnotherOwnerLeftOnlyLosesTheReference) {
  json a = owner("a");
  json b = owner("b");
  dependent("dep", json::array({reference(a), reference(b)}));
  ASSERT_EQ(remove(kConfigMaps + "/a").status, 200);
  json refs;
  eslease::testing::wait_until([&] {
    refs = call(api, "GET", kLeases + "/dep").body["metadata"]["ownerReferences"];
    return refs.size() == 1;
  });
  EXPECT_EQ(refs, json::array({reference(b)}));
}

TEST_F(KubeGarbageCollectionTest, AnOwnerRecreatedUnderTheSameNameIsNotTheOwner) {
  json first = owner("owner");
  ASSERT_EQ(remove(kConfigMaps + "/owner").status, 200);
  owner("owner");  // a new uid
  dependent("dep", json::array({reference(first)}));
  EXPECT_TRUE(becomes(kLeases + "/dep", 404));
}

TEST_F(KubeGarbageCollectionTest, ForegroundKeepsTheOwnerUntilItsBlockingDependentsAreGone) {
  json cm = owner("owner");
  dependent("blocking", json::array({reference(cm, true)}), json::array({"example.io/hold"}));
  dependent("plain", json::array({reference(cm)}));
  auto reply = remove(kConfigMaps + "/owner", {{"propagationPolicy", "Foreground"}});
  ASSERT_EQ(reply.status, 200) << reply.body.dump();
  EXPECT_TRUE(reply.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(reply.body["metadata"]["finalizers"], json({"foregroundDeletion"}));
  // The dependents are deleted; the one with a finalizer stays Terminating, and blocks.
  EXPECT_TRUE(becomes(kLeases + "/plain", 404));
  auto blocking = call(api, "GET", kLeases + "/blocking");
  ASSERT_EQ(blocking.status, 200);
  EXPECT_TRUE(eslease::testing::wait_until([&] {
    blocking = call(api, "GET", kLeases + "/blocking");
    return blocking.body["metadata"].contains("deletionTimestamp");
  }));
  EXPECT_EQ(status_of(kConfigMaps + "/owner"), 200);
  // Its finalizer done, the dependent goes, and then the owner.
  ASSERT_EQ(call(api, "PATCH", kLeases + "/blocking", {{"metadata", {{"finalizers", nullptr}}}},
                 {{"Content-Type", "application/merge-patch+json"}})
                .status,
            200);
  EXPECT_TRUE(becomes(kLeases + "/blocking", 404));
  EXPECT_TRUE(becomes(kConfigMaps + "/owner", 404));
}

TEST_F(KubeGarbageCollectionTest, ForegroundWithoutDependentsDeletesTheOwner) {
  owner("owner");
  ASSERT_EQ(remove(kConfigMaps + "/owner", {{"propagationPolicy", "Foreground"}}).status, 200);
  EXPECT_TRUE(becomes(kConfigMaps + "/owner", 404));
}

TEST_F(KubeGarbageCollectionTest, OrphanLeavesTheDependentsWithoutTheReference) {
  json cm = owner("owner");
  json other = owner("other");
  dependent("dep", json::array({reference(cm), reference(other)}));
  dependent("only", json::array({reference(cm)}));
  auto reply = remove(kConfigMaps + "/owner", {{"propagationPolicy", "Orphan"}});
  ASSERT_EQ(reply.status, 200);
  EXPECT_TRUE(becomes(kConfigMaps + "/owner", 404));
  EXPECT_EQ(call(api, "GET", kLeases + "/dep").body["metadata"]["ownerReferences"],
            json::array({reference(other)}));
  auto only = call(api, "GET", kLeases + "/only");
  ASSERT_EQ(only.status, 200);
  EXPECT_FALSE(only.body["metadata"].contains("ownerReferences"));
}

TEST_F(KubeGarbageCollectionTest, OrphanDependentsTrueIsOrphan) {
  json cm = owner("owner");
  dependent("dep", json::array({reference(cm)}));
  ASSERT_EQ(remove(kConfigMaps + "/owner?orphanDependents=true").status, 200);
  EXPECT_TRUE(becomes(kConfigMaps + "/owner", 404));
  EXPECT_EQ(status_of(kLeases + "/dep"), 200);
}

TEST_F(KubeGarbageCollectionTest, AnUnknownPolicyIsInvalid) {
  owner("owner");
  auto reply = remove(kConfigMaps + "/owner", {{"propagationPolicy", "Sometimes"}});
  EXPECT_EQ(reply.status, 422);
  EXPECT_EQ(reply.body["message"],
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sometimes\": "
            "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"");
  EXPECT_EQ(status_of(kConfigMaps + "/owner"), 200);
}

TEST_F(KubeGarbageCollectionTest, PreconditionsOnUidAndResourceVersion) {
  json cm = owner("owner");
  auto stale = remove(kConfigMaps + "/owner", {{"preconditions", {{"resourceVersion", "1"}}}});
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");
  auto matching =
      remove(kConfigMaps + "/owner",
             {{"preconditions",
               {{"uid", cm["metadata"]["uid"]}, {"resourceVersion", cm["metadata"]["resourceVersion"]}}}});
  EXPECT_EQ(matching.status, 200);
}

TEST_F(KubeGarbageCollectionTest, ProtobufDeleteOptionsAsClientGoSendsThem) {
  owner("owner");
  // k8s\0 + Unknown{typeMeta{apiVersion "v1", kind "DeleteOptions"}, raw{propagationPolicy "Foreground"}}
  std::string raw = std::string("\x22\x0a", 2) + "Foreground";
  std::string type_meta = std::string("\x0a\x02v1\x12\x0d", 6) + "DeleteOptions";
  std::string body = std::string("k8s\0", 4) + "\x0a" + static_cast<char>(type_meta.size()) + type_meta +
                     "\x12" + static_cast<char>(raw.size()) + raw;
  auto reply = call_raw(api, "DELETE", kConfigMaps + "/owner", body,
                        {{"Content-Type", "application/vnd.kubernetes.protobuf"}});
  ASSERT_EQ(reply.status, 200) << reply.body.dump();
  EXPECT_EQ(reply.body["metadata"]["finalizers"], json({"foregroundDeletion"}));
  EXPECT_TRUE(becomes(kConfigMaps + "/owner", 404));
}

}  // namespace
}  // namespace eslease::kubeemu
