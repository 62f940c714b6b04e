#include "kube/watch_decoder.h"

#include <gtest/gtest.h>

namespace eslease::kube {
namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"},"note":"multi\nline? no: escaped"}})"
    "\n"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"3"}}})"
    "\r\n"
    R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"4"}}})"
    "\n"
    R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
    "\n";

std::vector<WatchEvent::Type> types(const std::vector<WatchEvent>& events) {
  std::vector<WatchEvent::Type> out;
  for (const auto& e : events) out.push_back(e.type);
  return out;
}

const std::vector<WatchEvent::Type> kExpected = {WatchEvent::Type::kAdded, WatchEvent::Type::kModified,
                                                 WatchEvent::Type::kBookmark, WatchEvent::Type::kDeleted,
                                                 WatchEvent::Type::kError};

TEST(WatchDecoderTest, WholeStream) {
  WatchDecoder decoder;
  auto events = decoder.feed(kStream);
  ASSERT_TRUE(events.ok()) << events.error().describe();
  EXPECT_EQ(types(*events), kExpected);
  EXPECT_EQ((*events)[1].object["metadata"]["resourceVersion"], "2");
  EXPECT_TRUE(decoder.finish().ok());
}

TEST(WatchDecoderTest, SplitAtEveryPosition) {
  for (std::size_t cut = 0; cut <= kStream.size(); ++cut) {
    WatchDecoder decoder;
    std::vector<WatchEvent> all;
    for (auto piece : {std::string_view(kStream).substr(0, cut), std::string_view(kStream).substr(cut)}) {
      auto events = decoder.feed(piece);
      ASSERT_TRUE(events.ok()) << cut;
      for (auto& e : *events) all.push_back(std::move(e));
    }
    EXPECT_EQ(types(all), kExpected) << "cut at " << cut;
    EXPECT_TRUE(decoder.finish().ok());
  }
}

TEST(WatchDecoderTest, ByteByByte) {
  WatchDecoder decoder;
  std::vector<WatchEvent> all;
  for (char c : kStream) {
    auto events = decoder.feed(std::string_view(&c, 1));
    ASSERT_TRUE(events.ok());
    for (auto& e : *events) all.push_back(std::move(e));
  }
  EXPECT_EQ(types(all), kExpected);
}

TEST(WatchDecoderTest, GarbageIsAClearErrorAndSticks) {
  WatchDecoder decoder;
  auto events = decoder.feed("{\"type\":\"ADDED\",\"object\":{}}\nnot json\n");
  ASSERT_FALSE(events.ok());
  EXPECT_EQ(events.error().code, ErrorCode::kProtocol);
  EXPECT_NE(events.error().message.find("not valid JSON"), std::string::npos);
  EXPECT_FALSE(decoder.feed("{\"type\":\"ADDED\",\"object\":{}}\n").ok());
  EXPECT_FALSE(decoder.finish().ok());
}

TEST(WatchDecoderTest, RejectsWrongShapes) {
  for (std::string line :
       {R"([1])", R"({"object":{}})", R"({"type":"EXPLODED","object":{}})", R"({"type":"ADDED"})",
        R"({"type":"ADDED","object":"x"})", R"({"type":7,"object":{}})"}) {
    WatchDecoder decoder;
    auto events = decoder.feed(line + "\n");
    EXPECT_FALSE(events.ok()) << line;
  }
}

TEST(WatchDecoderTest, TruncatedStream) {
  WatchDecoder decoder;
  ASSERT_TRUE(decoder.feed(R"({"type":"ADDED","obj)").ok());
  Status end = decoder.finish();
  ASSERT_FALSE(end.ok());
  EXPECT_NE(end.error().message.find("ended inside an event"), std::string::npos);
}

TEST(WatchDecoderTest, LineLimit) {
  WatchDecoder decoder(64);
  EXPECT_FALSE(decoder.feed(std::string(65, ' ')).ok());
}

}  // namespace
}  // namespace eslease::kube
