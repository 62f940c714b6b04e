// Feeds the fuzzers' seed corpus through both parsers, so every CI run exercises the inputs
// the fuzzers start from (malformed, truncated and hostile ones included).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kube/status.h"
#include "kube/watch_decoder.h"

namespace eslease::kube {
namespace {

std::vector<std::string> corpus(const char* folder) {
  std::vector<std::string> inputs;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(ESLEASE_FUZZ_CORPUS_DIR) / folder)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    inputs.push_back(content.str());
  }
  return inputs;
}

TEST(FuzzCorpusTest, WatchDecoderHandlesEverySeed) {
  auto inputs = corpus("watch");
  ASSERT_GE(inputs.size(), 5u);
  int decoded = 0;
  for (const auto& input : inputs) {
    // Whole, and split in the middle: both must agree.
    WatchDecoder whole;
    auto all = whole.feed(input);
    WatchDecoder split;
    auto first = split.feed(std::string_view(input).substr(0, input.size() / 2));
    auto second = first.ok() ? split.feed(std::string_view(input).substr(input.size() / 2)) : first;
    ASSERT_EQ(all.ok(), second.ok());
    if (all.ok()) {
      EXPECT_EQ(all->size(), first->size() + second->size());
      decoded += static_cast<int>(all->size());
    }
  }
  EXPECT_GT(decoded, 0);
}

TEST(FuzzCorpusTest, StatusParserHandlesEverySeed) {
  auto inputs = corpus("status");
  ASSERT_GE(inputs.size(), 5u);
  int statuses = 0;
  for (const auto& input : inputs) {
    if (parse_status(input)) ++statuses;
    http::Response response;
    response.status = 500;
    response.body = input;
    EXPECT_FALSE(error_from_response(response).message.empty());
  }
  EXPECT_GT(statuses, 0);
}

}  // namespace
}  // namespace eslease::kube
