// The session object and the validity it publishes to holders.
#include "api/session.h"

#include <gtest/gtest.h>

#include "common/text.h"

namespace eslease::api {
namespace {

using nlohmann::json;

const WallTime kRenewed = *parse_rfc3339("2026-11-24T10:00:00.250000Z");

TEST(Session, RevokedGrantsRoundTripAndSkipWhatIsNotAnEntry) {
  const std::set<GrantRef> grants = parse_revoked(" b=4294967300, a=12,junk,=3,c=,a=12 ");
  EXPECT_EQ(grants, (std::set<GrantRef>{{"a", "12"}, {"b", "4294967300"}}));
  EXPECT_EQ(format_revoked(grants), "a=12,b=4294967300");
  EXPECT_TRUE(parse_revoked("").empty());
}

TEST(Session, ObjectRoundTripsAsKubernetesWritesIt) {
  Session s;
  s.ns = "batch";
  s.holder_identity = "eslease-controller-7f9c-abc";
  s.renew_time = kRenewed;
  s.revoked = {{"report-a", "4294967310"}};
  const json object = session_object(s);
  EXPECT_EQ(object["metadata"]["name"], "eslease-session");
  EXPECT_EQ(object["spec"]["renewTime"], "2026-11-24T10:00:00.250000Z");
  EXPECT_EQ(object["metadata"]["annotations"]["eslease.io/revoked"], "report-a=4294967310");
  EXPECT_FALSE(object["metadata"].contains("resourceVersion")) << "a create";
  json stored = object;
  stored["metadata"]["resourceVersion"] = "41";
  const Session back = decode_session(stored);
  EXPECT_EQ(back.resource_version, "41");
  EXPECT_EQ(back.holder_identity, s.holder_identity);
  EXPECT_EQ(back.renew_time, kRenewed);
  EXPECT_EQ(back.revoked, s.revoked);
  EXPECT_FALSE(decode_session(json::parse(R"({"spec": 3, "metadata": []})")).renew_time);
}

TEST(Session, ValidityIsTheRenewalPlusTheLeaseDurationUntilTheGrantIsListed) {
  Session s;
  s.renew_time = kRenewed;
  const GrantRef mine{"report-a", "4294967310"};
  EXPECT_EQ(published_validity(s, mine, Millis(30000)), kRenewed + Millis(30000));
  s.revoked = {{"report-a", "4294967000"}};  // an older grant of the same Lease
  EXPECT_EQ(published_validity(s, mine, Millis(30000)), kRenewed + Millis(30000));
  s.revoked.insert(mine);
  EXPECT_EQ(published_validity(s, mine, Millis(30000)), std::nullopt);
  EXPECT_EQ(published_validity(Session{}, mine, Millis(30000)), std::nullopt) << "never renewed";
}

TEST(Session, AHolderRidesOutThreeQuartersOfItsLeaseLessMarginAndGrace) {
  // At the default 16 s: 12 s of validity just before a tick, less 2 s + 3.2 s.
  EXPECT_EQ(default_holder_grace(Millis(16000)), Millis(3200));
  EXPECT_EQ(default_holder_margin(Millis(16000)), Millis(2000));
  EXPECT_EQ(default_holder_slack(Millis(16000)), Millis(6800));
  EXPECT_GT(default_holder_slack(Millis(16000)), kDefaultRenewalPause) << "a default failover is ridden out";
  // Long leases: 45 s of 60 s, less 2 s + 10 s (the grace stops growing at 10 s).
  EXPECT_EQ(default_holder_grace(Millis(60000)), Millis(10000));
  EXPECT_EQ(holder_slack(Millis(60000), Millis(10000), Millis(2000)), Millis(33000));
  // Short leases scale the defaults down: 3 s gives grace and margin 600 ms each.
  EXPECT_EQ(default_holder_grace(Millis(3000)), Millis(600));
  EXPECT_EQ(default_holder_margin(Millis(3000)), Millis(600));
  EXPECT_EQ(default_holder_slack(Millis(3000)), Millis(1050));
}

TEST(Session, TheLongestRenewalPauseIsAnUncleanFailoverOrOneElasticsearchTimeout) {
  EXPECT_EQ(longest_renewal_pause(Millis(3000), Millis(500), Millis(5000)), kDefaultRenewalPause);
  EXPECT_EQ(longest_renewal_pause(Millis(40000), Millis(5000), Millis(10000)), Millis(47000));
  EXPECT_EQ(longest_renewal_pause(Millis(5000), Millis(1000), Millis(30000)), Millis(30000));
}

}  // namespace
}  // namespace eslease::api
