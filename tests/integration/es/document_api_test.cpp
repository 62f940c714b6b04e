#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "integration/es/es_fixture.h"
#include "support/wait.h"

namespace eslease::es {
namespace {

using nlohmann::json;
using testing::EsTestServer;
using testing::make_api;

class DocumentApiIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = make_api(server_.url());
    ASSERT_TRUE(api_);
    ASSERT_TRUE(api_->ensure_index(index_, json{{"settings", {{"number_of_shards", 1}}}}).ok());
  }

  EsTestServer server_;
  std::string index_ = EsTestServer::unique_index();
  std::unique_ptr<DocumentApi> api_;
};

TEST_F(DocumentApiIntegration, CreateGetConditionalIndexDeleteRoundTrip) {
  const std::string id = "ns/a b?c#d";
  auto created = api_->create(index_, id, json{{"v", 1}});
  ASSERT_TRUE(created.ok()) << created.error().describe();
  EXPECT_EQ(created->status, WriteStatus::kApplied);
  EXPECT_EQ(created->result, "created");

  auto again = api_->create(index_, id, json{{"v", 2}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, WriteStatus::kConflict);

  auto got = api_->get(index_, id);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->found);
  EXPECT_EQ(got->source["v"], 1);
  EXPECT_EQ(got->version, created->version);

  auto stale = api_->index(index_, id, json{{"v", 3}},
                           Version{created->version.seq_no + 100, created->version.primary_term});
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->status, WriteStatus::kConflict);

  auto updated = api_->index(index_, id, json{{"v", 4}}, created->version);
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ(updated->status, WriteStatus::kApplied);
  EXPECT_GT(updated->version.seq_no, created->version.seq_no);

  auto stale_delete = api_->remove(index_, id, created->version);
  ASSERT_TRUE(stale_delete.ok());
  EXPECT_EQ(stale_delete->status, WriteStatus::kConflict);
  auto removed = api_->remove(index_, id, updated->version);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->status, WriteStatus::kApplied);
  auto gone = api_->get(index_, id);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->found);
  auto missing_delete = api_->remove(index_, id, std::nullopt);
  ASSERT_TRUE(missing_delete.ok());
  EXPECT_EQ(missing_delete->status, WriteStatus::kNotFound);
}

TEST_F(DocumentApiIntegration, DescribeServerNamesTheEngineAndItsVersion) {
  auto server = api_->describe_server();
  ASSERT_TRUE(server.ok()) << server.error().describe();
  if (server_.is_emulator()) {
    EXPECT_EQ(server->distribution, "elasticsearch");
    EXPECT_EQ(server->version, "8.11.1");
  } else if (const char* backend = std::getenv("ESLEASE_TEST_BACKEND");
             backend && std::string(backend) == "opensearch") {
    EXPECT_EQ(server->distribution, "opensearch");
    EXPECT_NE(server->version.find('.'), std::string::npos) << server->version;
  }
}

TEST_F(DocumentApiIntegration, DescribeIndexAndUpdateItsMapping) {
  auto described = api_->describe_index(index_);
  ASSERT_TRUE(described.ok()) << described.error().describe();
  ASSERT_TRUE(described->has_value());
  const std::string uuid = (*described)->uuid;
  EXPECT_FALSE(uuid.empty());

  const json update = {{"_meta", {{"eslease", {{"tokenEpoch", 2}, {"indexUUID", uuid}}}}},
                       {"properties", {{"lock", {{"type", "keyword"}}}}}};
  ASSERT_TRUE(api_->put_mapping(index_, update).ok());
  auto after = api_->describe_index(index_);
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->uuid, uuid);
  EXPECT_EQ((*after)->mappings["_meta"]["eslease"]["tokenEpoch"], 2);
  EXPECT_EQ((*after)->mappings["properties"]["lock"]["type"], "keyword");

  auto conflict = api_->put_mapping(index_, json{{"properties", {{"lock", {{"type", "long"}}}}}});
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(DocumentApiIntegration, AMissingIndexIsDescribedAsNoneAndItsMappingCannotBeUpdated) {
  const std::string missing = EsTestServer::unique_index("never-created");
  auto described = api_->describe_index(missing);
  ASSERT_TRUE(described.ok()) << described.error().describe();
  EXPECT_FALSE(described->has_value());
  auto put = api_->put_mapping(missing, json{{"_meta", {{"a", 1}}}});
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().code, ErrorCode::kNotFound);
}

TEST_F(DocumentApiIntegration, HostileIdsStayDocumentIds) {
  for (const std::string id : {"../_cluster/settings", "..", ".", "a/b?x=y#z", "%2e%2e", "ns/\xe6\x97\xa5"}) {
    auto created = api_->create(index_, id, json{{"v", id}});
    ASSERT_TRUE(created.ok()) << id << ": " << created.error().describe();
    ASSERT_EQ(created->status, WriteStatus::kApplied) << id;
    auto got = api_->get(index_, id);
    ASSERT_TRUE(got.ok() && got->found) << id;
    EXPECT_EQ(got->source["v"], id);
  }
}

TEST_F(DocumentApiIntegration, BulkAndSearch) {
  std::vector<BulkOperation> ops;
  for (int i = 0; i < 5; ++i)
    ops.push_back({BulkOperation::Type::kCreate, "n/" + std::to_string(i), json{{"i", i}}, {}});
  auto bulk = api_->bulk(index_, ops);
  ASSERT_TRUE(bulk.ok()) << bulk.error().describe();
  ASSERT_EQ(bulk->items.size(), 5u);
  std::vector<BulkOperation> updates;
  for (int i = 0; i < 5; ++i) {
    updates.push_back({BulkOperation::Type::kIndex, "n/" + std::to_string(i), json{{"i", i * 10}},
                       i == 2 ? Version{999, 1} : bulk->items[i].version});
  }
  auto second = api_->bulk(index_, updates);
  ASSERT_TRUE(second.ok());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(second->items[i].status, i == 2 ? WriteStatus::kConflict : WriteStatus::kApplied) << i;
  }
  ASSERT_TRUE(api_->refresh(index_).ok());
  auto hits = api_->search(index_, json{{"match_all", json::object()}}, 100);
  ASSERT_TRUE(hits.ok()) << hits.error().describe();
  EXPECT_EQ(hits->size(), 5u);
}

TEST_F(DocumentApiIntegration, TransientUnavailabilityIsRetried) {
  server_.reset_stats();
  server_.fault({{"op", "get"}, {"status", 503}, {"count", 2}});
  auto got = api_->get(index_, "n/x");
  ASSERT_TRUE(got.ok()) << got.error().describe();
  EXPECT_EQ(server_.count("get"), 3);
}

TEST_F(DocumentApiIntegration, PersistentUnavailabilityIsAClearError) {
  server_.fault({{"op", "create"}, {"status", 503}, {"count", -1}});
  auto r = api_->create(index_, "n/x", json::object());
  server_.clear_faults();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("gave up after"), std::string::npos) << r.error().message;
}

TEST_F(DocumentApiIntegration, DroppedConnectionIsRetried) {
  server_.fault({{"op", "get"}, {"drop", true}, {"count", 1}});
  auto got = api_->get(index_, "n/x");
  ASSERT_TRUE(got.ok()) << got.error().describe();
  EXPECT_FALSE(got->found);
}

TEST_F(DocumentApiIntegration, SlowAnswerIsATimeoutWithUnknownOutcome) {
  ClientOptions options;
  options.request_timeout = Millis(200);
  auto api = make_api(server_.url(), options);
  server_.fault({{"op", "create"}, {"latency_ms", 1000}, {"count", 1}});
  auto r = api->create(index_, "n/slow", json{{"v", 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_NE(r.error().message.find("unknown"), std::string::npos);
  // The delayed write lands afterwards: exactly why the lock layer re-reads.
  EXPECT_TRUE(testing::wait_until([&] {
    auto got = api_->get(index_, "n/slow");
    return got.ok() && got->found;
  }));
}

TEST_F(DocumentApiIntegration, FailoverToTheHealthyHost) {
  ClientOptions options;
  options.hosts = {"http://127.0.0.1:1", server_.url()};
  auto api = make_http_document_api(http::make_transport(), options, SystemClock::instance());
  ASSERT_TRUE(api.ok());
  for (int i = 0; i < 3; ++i) {
    auto got = (*api)->get(index_, "n/x");
    ASSERT_TRUE(got.ok()) << got.error().describe();
  }
}

TEST(DocumentApiAuth, WrongPasswordIsUnauthorizedAndRotationFixesIt) {
  esemu::EsEmulatorOptions emulator_options;
  emulator_options.basic_auth = std::make_pair(std::string("elastic"), std::string("right-password"));
  EsTestServer server(emulator_options);
  ESLEASE_REQUIRE_EMULATOR(server);
  const auto path = std::filesystem::temp_directory_path() / ("eslease-it-pw-" + std::to_string(::getpid()));
  std::ofstream(path) << "wrong-password\n";
  ClientOptions options;
  options.credentials = CredentialOptions{"elastic", path.string(), "", ""};
  auto api = make_api(server.url(), options);
  auto denied = api->get("idx", "n/x");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, ErrorCode::kUnauthorized);
  EXPECT_NE(denied.error().message.find("rejected the credentials"), std::string::npos);
  EXPECT_EQ(denied.error().describe().find("wrong-password"), std::string::npos);

  std::ofstream(path.string() + ".new") << "right-password\n";
  std::filesystem::rename(path.string() + ".new", path);
  auto allowed = api->get("idx", "n/x");
  std::filesystem::remove(path);
  ASSERT_TRUE(allowed.ok()) << allowed.error().describe();
}

TEST(DocumentApiAuth, ApiKeyFromFile) {
  esemu::EsEmulatorOptions emulator_options;
  emulator_options.api_key = "key-id:key-secret";
  EsTestServer server(emulator_options);
  ESLEASE_REQUIRE_EMULATOR(server);
  const auto path = std::filesystem::temp_directory_path() / ("eslease-it-key-" + std::to_string(::getpid()));
  std::ofstream(path) << "key-id:key-secret";
  ClientOptions options;
  options.credentials = CredentialOptions{"", "", path.string(), ""};
  auto api = make_api(server.url(), options);
  auto got = api->get("idx", "n/x");
  std::filesystem::remove(path);
  ASSERT_TRUE(got.ok()) << got.error().describe();
}

}  // namespace
}  // namespace eslease::es
