#include "lock/expiry.h"

#include <gtest/gtest.h>

namespace eslease::lock {
namespace {

LockState version(std::int64_t seq_no, std::int64_t term = 1, Millis ttl = Millis(1000),
                  const std::string& lease_uid = "uid-a") {
  LockState s;
  s.doc.lock = "n/l";
  s.doc.lease_uid = lease_uid;
  s.doc.acquired_at = WallTime(Millis(5000));
  s.doc.ttl_millis = ttl.count();
  s.version = es::Version{seq_no, term};
  return s;
}

TEST(Expiry, SameVersionMustStayUnchangedForTtlOnLocalClock) {
  const MonoTime t0{};
  std::optional<Sighting> seen = sight(std::nullopt, version(4), t0);
  EXPECT_FALSE(is_expired(*seen, t0));
  seen = sight(seen, version(4), t0 + Millis(999));
  EXPECT_FALSE(is_expired(*seen, t0 + Millis(999)));
  seen = sight(seen, version(4), t0 + Millis(1000));
  EXPECT_TRUE(is_expired(*seen, t0 + Millis(1000)));
}

TEST(Expiry, AnotherGrantRestartsTheCount) {
  const MonoTime t0{};
  std::optional<Sighting> seen = sight(std::nullopt, version(4, 1, Millis(1000), "uid-a"), t0);
  seen = sight(seen, version(5, 1, Millis(1000), "uid-b"), t0 + Millis(900));
  EXPECT_EQ(seen->expires_at, t0 + Millis(1900));
  EXPECT_FALSE(is_expired(*seen, t0 + Millis(1500)));
  // A primary-term change with the same seq_no is a different version too.
  seen = sight(seen, version(5, 2, Millis(1000), "uid-c"), t0 + Millis(1950));
  EXPECT_FALSE(is_expired(*seen, t0 + Millis(1960)));
}

// A renewal with a shorter TTL must not shorten what its holder may have been shown.
TEST(Expiry, ARenewalOfTheSameGrantNeverBringsItsExpiryForward) {
  const MonoTime t0{};
  std::optional<Sighting> seen = sight(std::nullopt, version(1, 1, Millis(10000)), t0);
  seen = sight(seen, version(2, 1, Millis(2000)), t0 + Millis(1000));
  EXPECT_EQ(seen->expires_at, t0 + Millis(10000)) << "the holder may still believe the first expiry";
  seen = sight(seen, version(3, 1, Millis(2000)), t0 + Millis(9000));
  EXPECT_EQ(seen->expires_at, t0 + Millis(11000)) << "a renewal read later moves the expiry out";
  seen = sight(seen, version(4, 1, Millis(2000), "uid-other"), t0 + Millis(9500));
  EXPECT_EQ(seen->expires_at, t0 + Millis(11500)) << "a new grant counts from its own first sighting";
}

TEST(Expiry, HolderDeadlineComesBeforeAnyReadersView) {
  // The holder sends at 100; the write applies, a reader's read is answered at 130.
  const MonoTime sent = MonoTime{} + Millis(100);
  const MonoTime answered = MonoTime{} + Millis(130);
  const Sighting seen = sight(std::nullopt, version(1), answered);
  EXPECT_LT(holder_deadline(sent, Millis(1000)), seen.expires_at);
}

}  // namespace
}  // namespace eslease::lock
