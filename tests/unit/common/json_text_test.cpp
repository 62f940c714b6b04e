#include "common/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace eslease::json_text {
namespace {

using nlohmann::json;

// The text reads back as the values written, and prints as a JSON value of them prints:
// hostile strings (quotes, backslashes, control characters, non-ASCII) included.
TEST(JsonText, AnObjectPrintsAsTheSameJsonValueWouldPrint) {
  const std::string hostile = std::string("a\"b\\c/d\n\r\t\b\f") + '\x01' + '\x1f' + "\x7f" +
                              "l\xc3\xbc"
                              "ck";
  const std::string text = ObjectWriter()
                               .add("a", hostile)
                               .add("b", std::int64_t{-9007199254740993})
                               .add("c", std::vector<std::string>{"x", "\"y\"", ""})
                               .add("d", std::vector<std::string>{})
                               .add("e", "")
                               .finish();
  const json read = json::parse(text);
  EXPECT_EQ(read["a"], hostile);
  EXPECT_EQ(read["b"], -9007199254740993);
  EXPECT_EQ(read["c"], (json{"x", "\"y\"", ""}));
  EXPECT_EQ(read["d"], json::array());
  EXPECT_EQ(read["e"], "");
  EXPECT_EQ(text, read.dump()) << "members added in name order print exactly as the value does";
}

TEST(JsonText, AnEmptyObjectIsBraces) {
  EXPECT_EQ(ObjectWriter().finish(), "{}");
}

}  // namespace
}  // namespace eslease::json_text
