#include "common/text.h"

#include <gtest/gtest.h>

namespace eslease {
namespace {

TEST(PercentEncode, KeepsUnreservedAndEscapesEverythingElse) {
  EXPECT_EQ(percent_encode("batch/nightly-report"), "batch%2Fnightly-report");
  EXPECT_EQ(percent_encode("../_cluster/settings"), "..%2F_cluster%2Fsettings");
  EXPECT_EQ(percent_encode("a/b?x=y#z"), "a%2Fb%3Fx%3Dy%23z");
  EXPECT_EQ(percent_encode("100%"), "100%25");
  EXPECT_EQ(percent_encode("A-z_0.9~"), "A-z_0.9~");
  EXPECT_EQ(percent_encode("\xc3\xa9"), "%C3%A9");
}

TEST(PercentDecode, RoundTripsAndRejectsMalformedEscapes) {
  const std::string hostile = "../_cluster/settings?x=%zz#\xff";
  EXPECT_EQ(percent_decode(percent_encode(hostile)), hostile);
  EXPECT_EQ(percent_decode("a+b", true), "a b");
  EXPECT_EQ(percent_decode("a+b", false), "a+b");
  EXPECT_EQ(percent_decode("%2"), std::nullopt);
  EXPECT_EQ(percent_decode("%"), std::nullopt);
  EXPECT_EQ(percent_decode("%G1"), std::nullopt);
}

TEST(Utf8, AcceptsValidAndRejectsInvalidSequences) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92"));
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
}

TEST(Printable, ShowsUtf8AsItIsAndEscapesWhatAMessageMustNotCarry) {
  EXPECT_EQ(printable("l\xc3\xbc"
                      "ck"),
            "l\xc3\xbc"
            "ck");  // 'lück', not 'l??ck'
  EXPECT_EQ(printable("\xf0\x9f\x94\x92-lock"), "\xf0\x9f\x94\x92-lock");
  EXPECT_EQ(printable("a\nb\tc\rd\\e"), "a\\nb\\tc\\rd\\\\e");
  EXPECT_EQ(printable(std::string("nul\0\x1b[31m", 9)), "nul\\x00\\x1b[31m");
  EXPECT_EQ(printable("bad\xff\xc3"), "bad\\xff\\xc3");
  EXPECT_EQ(printable("c1\xc2\x85"), "c1\\xc2\\x85");
  EXPECT_EQ(printable("evil\xe2\x80\xaetxt"), "evil\\u202etxt");
  EXPECT_EQ(printable(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
  EXPECT_EQ(printable("\xc3\xbc\xc3\xbc", 1), "\xc3\xbc...") << "never cut inside a character";
}

TEST(Rfc3339, FormatsAndParsesUtcTimes) {
  const auto t = std::chrono::system_clock::from_time_t(1'800'000'000) + std::chrono::milliseconds(123);
  EXPECT_EQ(format_rfc3339_millis(t), "2027-01-15T08:00:00.123Z");
  EXPECT_EQ(format_rfc3339_seconds(t), "2027-01-15T08:00:00Z");
  EXPECT_EQ(format_rfc3339_micros(t + std::chrono::microseconds(45)), "2027-01-15T08:00:00.123045Z");
  EXPECT_EQ(
      format_rfc3339_micros(std::chrono::system_clock::from_time_t(-1) + std::chrono::milliseconds(500)),
      "1969-12-31T23:59:59.500000Z");
  EXPECT_EQ(parse_rfc3339("2027-01-15T08:00:00.123Z"), t);
  EXPECT_EQ(parse_rfc3339("2027-01-15T09:00:00.123+01:00"), t);
  EXPECT_EQ(parse_rfc3339("2027-01-15T08:00:00.123000456Z"), t + std::chrono::nanoseconds(456));
}

TEST(Rfc3339, FormatsEveryDateAsParsedBack) {
  using namespace std::chrono;
  // A leap day, the last instant of a year, the epoch, and a day before it.
  EXPECT_EQ(format_rfc3339_millis(sys_days(2024y / February / 29) + 23h + 59min + 59s + 999ms),
            "2024-02-29T23:59:59.999Z");
  EXPECT_EQ(format_rfc3339_micros(sys_days(2026y / December / 31) + 23h + 59min + 59s + 999'999us),
            "2026-12-31T23:59:59.999999Z");
  EXPECT_EQ(format_rfc3339_millis(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339_millis(system_clock::time_point{} - 1ms), "1969-12-31T23:59:59.999Z");
  // Milliseconds are cut, not rounded, as the documents store them.
  EXPECT_EQ(format_rfc3339_millis(sys_days(2027y / March / 1) + 999'999us), "2027-03-01T00:00:00.999Z");
  // Every day of a few years reads back as the instant formatted.
  for (sys_days day = sys_days(2023y / January / 1); day < sys_days(2029y / January / 1); day += days(1)) {
    const WallTime t = day + 13h + 7min + 5s + 42ms;
    EXPECT_EQ(parse_rfc3339(format_rfc3339_millis(t)), t) << format_rfc3339_millis(t);
  }
}

TEST(Rfc3339, RejectsMalformedInput) {
  for (const char* bad : {"", "2027-01-15", "2027-01-15T08:00:00", "2027-13-15T08:00:00Z",
                          "2027-01-15T08:00:00.Z", "2027-01-15T08:00:00Zjunk", "garbage-garbage-garbage"}) {
    EXPECT_EQ(parse_rfc3339(bad), std::nullopt) << bad;
  }
}

TEST(ParseBool, ReadsTheSpellingsOfGosParseBoolInAnyCase) {
  for (const char* yes : {"true", "True", "TRUE", "tRuE", "t", "T", "1"}) {
    auto b = parse_bool(yes);
    ASSERT_TRUE(b.ok()) << yes << ": " << b.error().message;
    EXPECT_TRUE(*b) << yes;
  }
  for (const char* no : {"false", "False", "FALSE", "f", "F", "0"}) {
    auto b = parse_bool(no);
    ASSERT_TRUE(b.ok()) << no << ": " << b.error().message;
    EXPECT_FALSE(*b) << no;
  }
}

TEST(ParseBool, RefusesEverythingElseQuotingTheValue) {
  const std::vector<std::pair<std::string, std::string>> refused{
      {"yes", R"(must be true or false, not "yes")"},
      {"no", R"(must be true or false, not "no")"},
      {"on", R"(must be true or false, not "on")"},
      {"off", R"(must be true or false, not "off")"},
      {"", R"(must be true or false, not "")"},
      {" true", R"(must be true or false, not " true")"},
      {"true ", R"(must be true or false, not "true ")"},
      {"2", R"(must be true or false, not "2")"},
      {"tru", R"(must be true or false, not "tru")"},
      {"truefalse", R"(must be true or false, not "truefalse")"},
      // A value is quoted as a message may show it: control characters escaped, long ones cut.
      {"t\n", R"(must be true or false, not "t\n")"},
      {std::string(100, 'x'), "must be true or false, not \"" + std::string(64, 'x') + "...\""},
  };
  for (const auto& [value, message] : refused) {
    auto b = parse_bool(value);
    ASSERT_FALSE(b.ok()) << value;
    EXPECT_EQ(b.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(b.error().message, message);
  }
}

TEST(Columns, AlignsEachColumnToItsWidestCell) {
  EXPECT_EQ(format_columns({{"LOCK", "TOKEN"}, {"batch/nightly", "7"}, {"a", "4294967296"}}),
            "LOCK           TOKEN\n"
            "batch/nightly  7\n"
            "a              4294967296\n");
  EXPECT_EQ(format_columns({}), "");
}

TEST(ObjectKey, NamesANamespacedObjectByNamespaceAndName) {
  EXPECT_EQ(object_key("batch", "nightly-report"), "batch/nightly-report");
  EXPECT_EQ(object_key("", "node-1"), "node-1") << "a cluster-scoped object is named alone";
}

TEST(ObjectKey, TellsWhetherAKeyNamesAnObject) {
  EXPECT_TRUE(is_object_key("batch/nightly-report", "batch", "nightly-report"));
  EXPECT_TRUE(is_object_key("node-1", "", "node-1"));
  EXPECT_FALSE(is_object_key("batch/nightly-report", "batch", "nightly"));
  EXPECT_FALSE(is_object_key("batch/nightly-report", "batc", "h/nightly-report")) << "split elsewhere";
  EXPECT_FALSE(is_object_key("batchXnightly-report", "batch", "nightly-report"));
  EXPECT_FALSE(is_object_key("batch/nightly-report", "", "nightly-report"));
  EXPECT_FALSE(is_object_key("other/nightly-report", "batch", "nightly-report"));
}

}  // namespace
}  // namespace eslease
