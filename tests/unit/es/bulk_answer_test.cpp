// The _bulk answer read as it streams by says exactly what the answer parsed in full says,
// or declines and leaves it to the full parse: for plain answers, for answers with a failed
// item, and for every malformed shape.
#include "es/bulk_answer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "es/responses.h"

namespace eslease::es {
namespace {

struct Case {
  const char* name;
  std::size_t expected_items;
  const char* body;
  bool read_plainly;  // whether the streaming reader answers (or declines)
  // What the full parse makes of it: every item typed, an item carrying its own Error, or a
  // kProtocol Error for the whole answer.
  enum class Full { kTyped, kItemError, kProtocolError } full = Full::kTyped;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"applied", 2,
       R"j({"took":3,"errors":false,"items":[
         {"index":{"_index":"i","_id":"a","_version":2,"result":"updated","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":9,"_primary_term":1,"status":200}},
         {"create":{"_index":"i","_id":"b","_version":1,"result":"created","_shards":{"total":1,"failed":0},"_seq_no":10,"_primary_term":3,"status":201}}]})j",
       true},
      {"as Elasticsearch 8 answers it", 3,
       R"j({"errors":true,"took":0,"items":[{"index":{"_index":"x","_id":"a","_version":1,"result":"created","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1,"status":201}},{"create":{"_index":"x","_id":"b","_version":1,"result":"created","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":1,"_primary_term":1,"status":201}},{"index":{"_index":"x","_id":"a","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[a]: version conflict, required seqNo [99], primary term [1]. current document has seqNo [0] and primary term [1]","index_uuid":"GZO4ScOZs7shIy2s1zYTH5","shard":"0","index":"x"}}}]})j",
       true},
      {"members in any order, items before the rest", 1,
       R"j({"items":[{"index":{"status":200,"_primary_term":2,"_seq_no":0,"_id":"a"}}],"errors":false,"took":1})j",
       true},
      {"conflict and not found", 2,
       R"j({"errors":true,"items":[
         {"index":{"_id":"a","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[a]: version conflict","index":"i","shard":"0"}}},
         {"delete":{"_id":"b","_version":1,"result":"not_found","_seq_no":4,"_primary_term":1,"status":404}}]})j",
       true},
      {"an id that is not a string", 1,
       R"j({"items":[{"index":{"_id":5,"status":200,"_seq_no":1,"_primary_term":1}}]})j", true},
      {"a member seen twice: the last counts", 1,
       R"j({"items":[{"index":{"_id":"a","status":500,"status":200,"_seq_no":1,"_primary_term":1}}]})j",
       true},
      {"a failed item", 2,
       R"j({"errors":true,"items":[
         {"index":{"_id":"a","status":200,"_seq_no":1,"_primary_term":1}},
         {"index":{"_id":"c","status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}}]})j",
       false, Case::Full::kItemError},
      {"a conflict of another kind", 1,
       R"j({"items":[{"index":{"_id":"a","status":409,"error":{"type":"other"}}}]})j", false,
       Case::Full::kItemError},
      {"an error type seen twice, the last not a string", 1,
       R"j({"items":[{"index":{"_id":"a","status":409,"error":{"type":"version_conflict_engine_exception","type":1}}}]})j",
       false, Case::Full::kItemError},
      {"a 404 that found the index missing", 1,
       R"j({"items":[{"index":{"_id":"a","status":404,"error":{"type":"index_not_found_exception"}}}]})j",
       false, Case::Full::kItemError},
      {"a status seen twice, the last not a number", 1,
       R"j({"items":[{"index":{"_id":"a","status":200,"status":"200","_seq_no":1,"_primary_term":1}}]})j",
       false, Case::Full::kProtocolError},
      {"a status that is a fraction", 1,
       R"j({"items":[{"index":{"_id":"a","status":200.0,"_seq_no":1,"_primary_term":1}}]})j", false,
       Case::Full::kProtocolError},
      {"no version", 1, R"j({"items":[{"index":{"_id":"a","status":201}}]})j", false,
       Case::Full::kProtocolError},
      {"a negative sequence number", 1,
       R"j({"items":[{"index":{"_id":"a","status":201,"_seq_no":-1,"_primary_term":1}}]})j", false,
       Case::Full::kProtocolError},
      {"a huge primary term", 1,
       R"j({"items":[{"index":{"_id":"a","status":201,"_seq_no":1,"_primary_term":18446744073709551615}}]})j",
       false, Case::Full::kProtocolError},
      {"fewer items than sent", 2,
       R"j({"items":[{"index":{"_id":"a","status":201,"_seq_no":1,"_primary_term":1}}]})j", false,
       Case::Full::kProtocolError},
      {"no items", 1, R"j({"took":1,"errors":false})j", false, Case::Full::kProtocolError},
      {"items twice", 1,
       R"j({"items":[{"index":{"status":201,"_seq_no":1,"_primary_term":1}}],"items":[{"index":{"status":201,"_seq_no":1,"_primary_term":1}}]})j",
       false},
      {"items not an array", 1, R"j({"items":{"index":{"status":201}}})j", false, Case::Full::kProtocolError},
      {"an item that is not an object", 1, R"j({"items":[7]})j", false, Case::Full::kProtocolError},
      {"a wrapper with two actions", 1,
       R"j({"items":[{"index":{"status":201,"_seq_no":1,"_primary_term":1},"create":{"status":201,"_seq_no":1,"_primary_term":1}}]})j",
       false, Case::Full::kProtocolError},
      {"an empty wrapper", 1, R"j({"items":[{}]})j", false, Case::Full::kProtocolError},
      {"a wrapper holding an array", 1, R"j({"items":[{"index":[]}]})j", false, Case::Full::kProtocolError},
      {"an answer that is an array", 1, R"j([{"items":[]}])j", false, Case::Full::kProtocolError},
      {"truncated", 1, R"j({"items":[{"index":{"_id":"a","status":201,"_seq_no":1,"_pri)j", false,
       Case::Full::kProtocolError},
      {"trailing bytes", 1,
       R"j({"items":[{"index":{"_id":"a","status":201,"_seq_no":1,"_primary_term":1}}]} x)j", false,
       Case::Full::kProtocolError},
      {"not JSON", 1, "<html>bad gateway</html>", false, Case::Full::kProtocolError},
  };
  return all;
}

TEST(BulkAnswer, ReadAsItStreamsItSaysWhatTheFullParseSaysOrDeclines) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::optional<BulkResult> plain = read_plain_bulk_answer(c.body, c.expected_items);
    EXPECT_EQ(plain.has_value(), c.read_plainly);
    http::Response response;
    response.status = 200;
    response.body = c.body;
    if (!plain) continue;
    const Result<BulkResult> full = parse_bulk(response, c.expected_items);
    const nlohmann::json parsed = nlohmann::json::parse(c.body, nullptr, false);
    ASSERT_TRUE(parsed.is_object());
    const Result<BulkResult> reference = bulk_result_of(parsed, c.expected_items);
    ASSERT_TRUE(reference.ok()) << reference.error().describe();
    ASSERT_TRUE(full.ok());
    ASSERT_EQ(plain->items.size(), reference->items.size());
    for (std::size_t i = 0; i < plain->items.size(); ++i) {
      EXPECT_EQ(plain->items[i].id, reference->items[i].id) << i;
      EXPECT_EQ(plain->items[i].status, reference->items[i].status) << i;
      EXPECT_EQ(plain->items[i].version, reference->items[i].version) << i;
      EXPECT_FALSE(plain->items[i].error.has_value()) << i;
      EXPECT_EQ(full->items[i].status, reference->items[i].status) << i;
    }
  }
}

// What the full parse makes of the answers the reader declines: an item's own Error, a
// malformed answer's kProtocol Error, or (a member seen twice) the last one's items.
TEST(BulkAnswer, AnswersItDeclinesAreParsedInFull) {
  for (const Case& c : cases()) {
    if (c.read_plainly) continue;
    SCOPED_TRACE(c.name);
    http::Response response;
    response.status = 200;
    response.body = c.body;
    const Result<BulkResult> full = parse_bulk(response, c.expected_items);
    if (c.full == Case::Full::kProtocolError) {
      ASSERT_FALSE(full.ok());
      EXPECT_EQ(full.error().code, ErrorCode::kProtocol);
      continue;
    }
    ASSERT_TRUE(full.ok()) << full.error().describe();
    const bool some_item_failed_otherwise =
        std::any_of(full->items.begin(), full->items.end(),
                    [](const BulkItemResult& item) { return item.error.has_value(); });
    EXPECT_EQ(some_item_failed_otherwise, c.full == Case::Full::kItemError);
  }
}

}  // namespace
}  // namespace eslease::es
