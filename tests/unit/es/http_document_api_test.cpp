#include "es/http_document_api.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/base64.h"
#include "support/fake_clock.h"
#include "support/fake_transport.h"

namespace eslease::es {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeTransport;

constexpr const char* kCreated =
    R"j({"_index":"locks","_id":"x","_version":1,"result":"created","_seq_no":5,"_primary_term":1})j";

class HttpDocumentApiTest : public ::testing::Test {
 protected:
  std::unique_ptr<DocumentApi> make(ClientOptions options = {}) {
    if (options.hosts.empty()) options.hosts = {"http://es-a:9200"};
    auto api = make_http_document_api(transport_, std::move(options), clock_);
    EXPECT_TRUE(api.ok()) << api.error().describe();
    return std::move(*api);
  }

  FakeTransport transport_;
  FakeClock clock_;
};

TEST_F(HttpDocumentApiTest, CreateUsesCreateEndpointWithEncodedId) {
  auto api = make();
  transport_.push(201, kCreated);
  auto r = api->create("locks", "default/a/b?x=y#z", json{{"k", "v"}});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->version, (Version{5, 1}));
  const auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].url, "http://es-a:9200/locks/_create/default%2Fa%2Fb%3Fx%3Dy%23z");
  EXPECT_EQ(json::parse(requests[0].body), (json{{"k", "v"}}));
  EXPECT_EQ(http::find_header(requests[0].headers, "content-type"), "application/json");
}

TEST_F(HttpDocumentApiTest, DescribeServerTellsOpenSearchFromElasticsearch) {
  auto api = make();
  transport_.push(200, R"j({"name":"n","version":{"distribution":"opensearch","number":"2.19.6"}})j");
  transport_.push(200, R"j({"name":"n","version":{"number":"8.11.1","build_flavor":"default"}})j");
  transport_.push(200, R"j({"version":{"number":7}})j");
  transport_.push(200, "not json");
  auto opensearch = api->describe_server();
  ASSERT_TRUE(opensearch.ok()) << opensearch.error().describe();
  EXPECT_EQ(opensearch->distribution, "opensearch");
  EXPECT_EQ(opensearch->version, "2.19.6");
  auto elasticsearch = api->describe_server();
  ASSERT_TRUE(elasticsearch.ok());
  EXPECT_EQ(elasticsearch->distribution, "elasticsearch");
  EXPECT_EQ(elasticsearch->version, "8.11.1");
  auto odd = api->describe_server();
  ASSERT_TRUE(odd.ok()) << "a field of another type is left unknown, not a failure";
  EXPECT_EQ(odd->version, "");
  EXPECT_FALSE(api->describe_server().ok());
  ASSERT_EQ(transport_.requests().size(), 4u);
  EXPECT_EQ(transport_.requests()[0].method, "GET");
  EXPECT_EQ(transport_.requests()[0].url, "http://es-a:9200/");
}

TEST_F(HttpDocumentApiTest, HostileIdsNeverLeaveTheDocumentPath) {
  auto api = make();
  transport_.set_responder([](const http::Request&) {
    http::Response r;
    r.status = 404;
    r.body = R"j({"_index":"locks","_id":"x","found":false})j";
    return Result<http::Response>(r);
  });
  for (const std::string id : {"../_cluster/settings", "..", "%2e%2e/_bulk", "a b\r\nHost: evil", "/"}) {
    ASSERT_TRUE(api->get("locks", id).ok());
  }
  for (const auto& request : transport_.requests()) {
    const std::string prefix = "http://es-a:9200/locks/_doc/";
    ASSERT_EQ(request.url.rfind(prefix, 0), 0u) << request.url;
    const std::string rest = request.url.substr(prefix.size());
    EXPECT_EQ(rest.find_first_of("/?# \r\n"), std::string::npos) << request.url;
    EXPECT_NE(rest, "..");
  }
}

TEST_F(HttpDocumentApiTest, ConditionalIndexAndDeleteCarryVersionParameters) {
  auto api = make();
  transport_.push(200, R"j({"_version":2,"result":"updated","_seq_no":6,"_primary_term":1})j");
  transport_.push(200, R"j({"_version":3,"result":"deleted","_seq_no":7,"_primary_term":1})j");
  ASSERT_TRUE(api->index("locks", "n/l", json::object(), Version{5, 1}).ok());
  auto removed = api->remove("locks", "n/l", Version{6, 1});
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->result, "deleted");
  const auto requests = transport_.requests();
  EXPECT_EQ(requests[0].url, "http://es-a:9200/locks/_doc/n%2Fl?if_seq_no=5&if_primary_term=1");
  EXPECT_EQ(requests[1].method, "DELETE");
  EXPECT_EQ(requests[1].url, "http://es-a:9200/locks/_doc/n%2Fl?if_seq_no=6&if_primary_term=1");
}

TEST_F(HttpDocumentApiTest, BulkSendsNdjsonWithPerItemConditions) {
  auto api = make();
  transport_.push(200, R"j({"errors":true,"items":[
      {"index":{"_id":"n/a","result":"updated","_seq_no":8,"_primary_term":1,"status":200}},
      {"index":{"_id":"n/b","status":409,"error":{"type":"version_conflict_engine_exception","reason":"x"}}}]})j");
  std::vector<BulkOperation> ops{{BulkOperation::Type::kIndex, "n/a", json{{"v", 1}}, Version{3, 1}},
                                 {BulkOperation::Type::kIndex, "n/b", json{{"v", 2}}, Version{4, 1}}};
  auto r = api->bulk("locks", ops);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->items[0].status, WriteStatus::kApplied);
  EXPECT_EQ(r->items[1].status, WriteStatus::kConflict);
  const auto request = transport_.requests().at(0);
  EXPECT_EQ(request.url, "http://es-a:9200/locks/_bulk");
  EXPECT_EQ(http::find_header(request.headers, "content-type"), "application/x-ndjson");
  std::vector<json> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = request.body.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(json::parse(request.body.substr(start, nl - start)));
  }
  EXPECT_EQ(start, request.body.size()) << "NDJSON must end with a newline";
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], (json{{"index", {{"_id", "n/a"}, {"if_seq_no", 3}, {"if_primary_term", 1}}}}));
  EXPECT_EQ(lines[1], (json{{"v", 1}}));
  EXPECT_EQ(lines[2]["index"]["if_seq_no"], 4);
}

TEST_F(HttpDocumentApiTest, RetriesRetryableStatusesThenSucceeds) {
  auto api = make();
  transport_.push(
      503,
      R"j({"error":{"type":"unavailable_shards_exception","reason":"primary shard is not active"},"status":503})j");
  transport_.push(
      429, R"j({"error":{"type":"es_rejected_execution_exception","reason":"rejected"},"status":429})j");
  transport_.push(201, kCreated);
  auto r = api->create("locks", "n/l", json::object());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(transport_.request_count(), 3u);
  EXPECT_EQ(clock_.sleeps(), 2);
  // 503 and 429 are refusals: the write was not applied by the failed attempts.
  EXPECT_FALSE(r->earlier_attempt_may_have_applied);
}

TEST_F(HttpDocumentApiTest, PersistentUnavailabilityGivesUpWithClearError) {
  ClientOptions options;
  options.max_attempts = 3;
  auto api = make(options);
  transport_.set_responder([](const http::Request&) {
    http::Response r;
    r.status = 503;
    r.body =
        R"j({"error":{"type":"cluster_block_exception","reason":"blocked by: [SERVICE_UNAVAILABLE/1/state not recovered]"},"status":503})j";
    return Result<http::Response>(r);
  });
  auto r = api->get("locks", "n/l");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("state not recovered"), std::string::npos);
  EXPECT_NE(r.error().message.find("3 attempts"), std::string::npos);
  EXPECT_EQ(transport_.request_count(), 3u);
}

TEST_F(HttpDocumentApiTest, TotalRetryTimeIsBounded) {
  ClientOptions options;
  options.max_attempts = 1000;
  options.max_retry_time = Millis(5000);
  auto api = make(options);
  transport_.set_responder([](const http::Request&) {
    return Result<http::Response>(make_error(ErrorCode::kUnavailable, "refused"));
  });
  const MonoTime start = clock_.monotonic();
  EXPECT_FALSE(api->get("locks", "n/l").ok());
  EXPECT_LE(clock_.monotonic() - start, Millis(5000));
  EXPECT_LT(transport_.request_count(), 1000u);
}

TEST_F(HttpDocumentApiTest, NonRetryableStatusesAreNotRetried) {
  auto api = make();
  for (int status : {400, 401, 403, 404, 409, 500}) {
    transport_.push(status,
                    R"j({"error":{"type":"x","reason":"y"},"status":)j" + std::to_string(status) + "}");
  }
  (void)api->index("locks", "a", json::object(), std::nullopt);  // 400
  (void)api->index("locks", "a", json::object(), std::nullopt);  // 401 (+ no re-read: no credentials)
  (void)api->index("locks", "a", json::object(), std::nullopt);  // 403
  (void)api->get("locks", "a");                                  // 404
  (void)api->index("locks", "a", json::object(), std::nullopt);  // 409
  (void)api->get("locks", "a");                                  // 500
  EXPECT_EQ(transport_.request_count(), 6u);
  EXPECT_EQ(clock_.sleeps(), 0);
}

TEST_F(HttpDocumentApiTest, TimeoutIsNotRetriedAndSaysOutcomeUnknown) {
  auto api = make();
  transport_.push_error(ErrorCode::kTimeout, "deadline exceeded");
  auto r = api->create("locks", "n/l", json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_NE(r.error().message.find("unknown"), std::string::npos);
  EXPECT_EQ(transport_.request_count(), 1u);
}

TEST_F(HttpDocumentApiTest, LostConnectionOnWriteFlagsPossibleEarlierApply) {
  auto api = make();
  transport_.push_error(ErrorCode::kUnavailable, "connection reset");
  transport_.push(
      409,
      R"j({"error":{"type":"version_conflict_engine_exception","reason":"document already exists"},"status":409})j");
  auto r = api->create("locks", "n/l", json::object());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, WriteStatus::kConflict);
  EXPECT_TRUE(r->earlier_attempt_may_have_applied);
}

TEST_F(HttpDocumentApiTest, FailsOverToNextHostAndSkipsFailedHost) {
  ClientOptions options;
  options.hosts = {"http://es-a:9200", "http://es-b:9200/"};
  auto api = make(options);
  transport_.set_responder([](const http::Request& request) -> Result<http::Response> {
    if (request.url.rfind("http://es-a:9200", 0) == 0) return make_error(ErrorCode::kUnavailable, "refused");
    http::Response r;
    r.status = 404;
    r.body = R"j({"found":false})j";
    return r;
  });
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(api->get("locks", "n/l").ok());
  const auto requests = transport_.requests();
  int to_a = 0;
  for (const auto& r : requests) to_a += r.url.rfind("http://es-a:9200", 0) == 0 ? 1 : 0;
  EXPECT_EQ(to_a, 1) << "a failed host is skipped while it cools down";
  EXPECT_EQ(requests.back().url, "http://es-b:9200/locks/_doc/n%2Fl");
  // After the cool-down the host is tried again.
  clock_.advance(Millis(6000));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(api->get("locks", "n/l").ok());
  int to_a_after = 0;
  for (const auto& r : transport_.requests()) to_a_after += r.url.rfind("http://es-a:9200", 0) == 0 ? 1 : 0;
  EXPECT_EQ(to_a_after, 2);
}

TEST_F(HttpDocumentApiTest, CredentialsComeFromFileAndRotate) {
  const auto path = std::filesystem::temp_directory_path() / ("eslease-pw-" + std::to_string(::getpid()));
  std::ofstream(path) << "first-secret\n";
  ClientOptions options;
  options.credentials = CredentialOptions{"elastic", path.string(), "", ""};
  auto api = make(options);
  transport_.push(404, R"j({"found":false})j");
  ASSERT_TRUE(api->get("locks", "a").ok());
  std::ofstream(path.string() + ".new") << "second-secret-rotated\n";
  std::filesystem::rename(path.string() + ".new", path);
  transport_.push(404, R"j({"found":false})j");
  ASSERT_TRUE(api->get("locks", "a").ok());
  std::filesystem::remove(path);
  const auto requests = transport_.requests();
  EXPECT_EQ(http::find_header(requests[0].headers, "authorization"),
            "Basic " + base64_encode("elastic:first-secret"));
  EXPECT_EQ(http::find_header(requests[1].headers, "authorization"),
            "Basic " + base64_encode("elastic:second-secret-rotated"));
}

TEST_F(HttpDocumentApiTest, UnauthorizedIsClearAndSecretFree) {
  const auto path = std::filesystem::temp_directory_path() / ("eslease-tok-" + std::to_string(::getpid()));
  std::ofstream(path) << "super-secret-token";
  ClientOptions options;
  options.credentials = CredentialOptions{"", "", "", path.string()};
  auto api = make(options);
  transport_.push(
      401,
      R"j({"error":{"type":"security_exception","reason":"unable to authenticate with provided credentials"},"status":401})j");
  auto r = api->get("locks", "a");
  std::filesystem::remove(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnauthorized);
  EXPECT_NE(r.error().describe().find("rejected the credentials"), std::string::npos);
  EXPECT_EQ(r.error().describe().find("super-secret-token"), std::string::npos);
}

TEST_F(HttpDocumentApiTest, EnsureIndexAcceptsExistingIndex) {
  auto api = make();
  transport_.push(200, R"j({"acknowledged":true,"shards_acknowledged":true,"index":"locks"})j");
  transport_.push(
      400,
      R"j({"error":{"type":"resource_already_exists_exception","reason":"index [locks/abc] already exists"},"status":400})j");
  transport_.push(400, R"j({"error":{"type":"invalid_index_name_exception","reason":"bad"},"status":400})j");
  EXPECT_TRUE(*api->ensure_index("locks", json::object()));
  EXPECT_FALSE(*api->ensure_index("locks", json::object()));
  EXPECT_FALSE(api->ensure_index("locks", json::object()).ok());
}

TEST(HttpDocumentApiOptions, RejectsBadHostsWithoutEchoingSecrets) {
  FakeTransport transport;
  FakeClock clock;
  auto with_hosts = [&](std::vector<std::string> hosts) {
    ClientOptions options;
    options.hosts = std::move(hosts);
    return make_http_document_api(transport, options, clock);
  };
  EXPECT_FALSE(with_hosts({}).ok());
  EXPECT_FALSE(with_hosts({"es:9200"}).ok());
  EXPECT_FALSE(with_hosts({"ftp://es:9200"}).ok());
  EXPECT_FALSE(with_hosts({"http://es:9200/?q=1"}).ok());
  auto secret = with_hosts({"https://elastic:hunter2@es:9200"});
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.error().message.find("hunter2"), std::string::npos);
  EXPECT_TRUE(with_hosts({"https://es:9200", "http://127.0.0.1:9201/prefix"}).ok());
}

}  // namespace
}  // namespace eslease::es
