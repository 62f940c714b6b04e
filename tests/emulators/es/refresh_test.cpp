// The refresh schedule: index.refresh_interval (default 1 s, -1 turns it off), set when the
// index is created or through _settings, on an injected clock.
#include <gtest/gtest.h>

#include "emulators/es/test_client.h"
#include "support/fake_clock.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

class EsRefresh : public ::testing::Test {
 protected:
  long long count(const std::string& index) {
    auto r = es.call("POST", "/" + index + "/_count");
    EXPECT_EQ(r.status, 200) << r.raw.body;
    return r.body["count"].get<long long>();
  }
  eslease::testing::FakeClock clock;
  TestClient es{{}, clock};
};

TEST_F(EsRefresh, AWriteBecomesSearchableWithinTheDefaultSecond) {
  ASSERT_EQ(es.call("PUT", "/locks").status, 200);
  clock.advance(Millis(300));
  es.call("PUT", "/locks/_doc/a", json{{"lock", "ns/a"}});
  EXPECT_EQ(count("locks"), 0) << "no refresh has run since the write";
  EXPECT_EQ(es.call("GET", "/locks/_doc/a?realtime=false").status, 404);
  clock.advance(Millis(700));  // the index's first scheduled refresh, a second after its creation
  EXPECT_EQ(count("locks"), 1);
  EXPECT_EQ(es.call("GET", "/locks/_doc/a?realtime=false").status, 200);
  es.call("DELETE", "/locks/_doc/a");
  EXPECT_EQ(count("locks"), 1) << "the delete waits for the next refresh";
  clock.advance(Millis(1000));
  EXPECT_EQ(count("locks"), 0);
}

TEST_F(EsRefresh, AnAutoCreatedIndexRefreshesOnTheDefaultScheduleToo) {
  es.call("PUT", "/auto/_doc/a", json{{"x", 1}});
  EXPECT_EQ(count("auto"), 0);
  clock.advance(Millis(1000));
  EXPECT_EQ(count("auto"), 1);
}

TEST_F(EsRefresh, MinusOneKeepsWritesHiddenUntilAnExplicitRefresh) {
  ASSERT_EQ(es.call("PUT", "/quiet", json{{"settings", {{"index", {{"refresh_interval", "-1"}}}}}}).status,
            200);
  es.call("PUT", "/quiet/_doc/a", json{{"x", 1}});
  clock.advance(Millis(3'600'000));
  EXPECT_EQ(count("quiet"), 0);
  es.call("POST", "/quiet/_refresh");
  EXPECT_EQ(count("quiet"), 1);
  EXPECT_EQ(es.call("GET", "/quiet").body["quiet"]["settings"]["index"]["refresh_interval"], "-1");
}

TEST_F(EsRefresh, ALongerIntervalIsHonoured) {
  ASSERT_EQ(es.call("PUT", "/slow", json{{"settings", {{"refresh_interval", "5s"}}}}).status, 200);
  es.call("PUT", "/slow/_doc/a", json{{"x", 1}});
  clock.advance(Millis(4999));
  EXPECT_EQ(count("slow"), 0);
  clock.advance(Millis(1));
  EXPECT_EQ(count("slow"), 1);
}

TEST_F(EsRefresh, SettingsChangeTheScheduleOfAnExistingIndex) {
  ASSERT_EQ(es.call("PUT", "/locks").status, 200);
  auto off = es.call("PUT", "/locks/_settings", json{{"index", {{"refresh_interval", "-1"}}}});
  ASSERT_EQ(off.status, 200) << off.raw.body;
  EXPECT_EQ(off.body, (json{{"acknowledged", true}}));
  es.call("PUT", "/locks/_doc/a", json{{"x", 1}});
  clock.advance(Millis(10'000));
  EXPECT_EQ(count("locks"), 0);
  ASSERT_EQ(es.call("PUT", "/locks/_settings", json{{"refresh_interval", "1s"}}).status, 200);
  EXPECT_EQ(count("locks"), 0) << "the new schedule starts from the change";
  clock.advance(Millis(1000));
  EXPECT_EQ(count("locks"), 1);
}

TEST_F(EsRefresh, BadIntervalsAndStaticSettingsAreRefused) {
  auto bad = es.call("PUT", "/bad", json{{"settings", {{"refresh_interval", "soon"}}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.error_type(), "illegal_argument_exception");
  EXPECT_EQ(bad.reason(),
            "failed to parse setting [index.refresh_interval] with value [soon] as a time value: unit is "
            "missing or unrecognized");
  EXPECT_EQ(es.call("HEAD", "/bad").status, 404) << "nothing was created";
  ASSERT_EQ(es.call("PUT", "/locks").status, 200);
  EXPECT_EQ(es.call("PUT", "/locks/_settings", json{{"refresh_interval", "1x"}}).status, 400);
  auto shards = es.call("PUT", "/locks/_settings", json{{"number_of_shards", 2}});
  EXPECT_EQ(shards.status, 400);
  EXPECT_EQ(shards.error_type(), "illegal_argument_exception");
  EXPECT_EQ(es.call("PUT", "/missing/_settings", json{{"refresh_interval", "1s"}}).status, 404);
}

}  // namespace
}  // namespace eslease::esemu
