#include "lock/expiry.h"

#include <gtest/gtest.h>

namespace eslease::lock {
namespace {

TEST(Expiry, SameVersionMustStayUnchangedForTtlOnLocalClock) {
  ExpiryObserver observer;
  const MonoTime t0{};
  const es::Version v{4, 1};
  EXPECT_FALSE(is_expired(observer.observe("n/l", v, Millis(1000), t0), t0));
  EXPECT_FALSE(is_expired(observer.observe("n/l", v, Millis(1000), t0 + Millis(999)), t0 + Millis(999)));
  EXPECT_TRUE(is_expired(observer.observe("n/l", v, Millis(1000), t0 + Millis(1000)), t0 + Millis(1000)));
}

TEST(Expiry, NewVersionRestartsTheCount) {
  ExpiryObserver observer;
  const MonoTime t0{};
  observer.observe("n/l", es::Version{4, 1}, Millis(1000), t0);
  const Observation& renewed = observer.observe("n/l", es::Version{5, 1}, Millis(1000), t0 + Millis(900));
  EXPECT_EQ(renewed.first_seen, t0 + Millis(900));
  EXPECT_FALSE(is_expired(renewed, t0 + Millis(1500)));
  EXPECT_TRUE(is_expired(renewed, t0 + Millis(1900)));
  // A primary-term change with the same seq_no is a different version too.
  const Observation& bumped = observer.observe("n/l", es::Version{5, 2}, Millis(1000), t0 + Millis(1950));
  EXPECT_FALSE(is_expired(bumped, t0 + Millis(1960)));
}

TEST(Expiry, HolderDeadlineComesBeforeAnyContendersView) {
  // The holder sends at 100; the write applies, a contender's read is answered at 130.
  const MonoTime sent = MonoTime{} + Millis(100);
  const MonoTime answered = MonoTime{} + Millis(130);
  ExpiryObserver observer;
  const Observation& seen = observer.observe("n/l", es::Version{1, 1}, Millis(1000), answered);
  EXPECT_LT(holder_deadline(sent, Millis(1000)), expiry_of(seen));
}

TEST(Expiry, LocksAreTrackedSeparately) {
  ExpiryObserver observer;
  observer.observe("n/a", es::Version{1, 1}, Millis(10), MonoTime{});
  EXPECT_FALSE(observer.find("n/b").has_value());
  observer.forget("n/a");
  EXPECT_FALSE(observer.find("n/a").has_value());
}

}  // namespace
}  // namespace eslease::lock
