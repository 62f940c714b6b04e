// Grant requests as the lock layer's tests write them: one lock of capacity 1 (its one
// document, created or written over a version read), or a claim's locks taken as if free.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "lock/lock_store.h"
#include "lock/slots.h"

namespace eslease::testing {

// Slot 0 of `key` for `grantee`: a create, or a write over exactly `replaces`.
inline lock::GrantRequest one_lock(const lock::LockKey& key, const lock::Grantee& grantee,
                                   std::optional<lock::LockState> replaces = std::nullopt) {
  return lock::GrantRequest{
      {lock::SlotWrite{key, 0, std::move(replaces)}}, grantee, 1, lock::Access::kExclusive};
}

// Every document `shape` takes of `keys`, each created.
inline lock::GrantRequest free_claim(const std::vector<lock::LockKey>& keys, lock::ClaimShape shape,
                                     const lock::Grantee& grantee) {
  return lock::GrantRequest{lock::writes_if_free(keys, shape), grantee, shape.capacity, shape.access};
}

// The grant `request` makes; a test failure when it makes none.
inline lock::HeldGrant granted(lock::LockStore& store, const lock::GrantRequest& request) {
  auto outcome = lock::grant_one(store, request);
  EXPECT_TRUE(outcome.ok()) << outcome.error().describe();
  EXPECT_TRUE(outcome.ok() && outcome->grant) << "not granted";
  return outcome.ok() && outcome->grant ? *outcome->grant : lock::HeldGrant{};
}

// The one document of a grant of one lock.
inline const lock::LockState& only_document(const lock::HeldGrant& grant) {
  EXPECT_EQ(grant.docs.size(), 1u);
  static const lock::LockState kNone{};
  return grant.docs.empty() ? kNone : grant.docs.front().state;
}

}  // namespace eslease::testing
