#include "cli/grant_hold.h"

#include <optional>
#include <string>
#include <utility>

#include "cli/renewing_hold.h"

namespace eslease::cli {
namespace {

std::string names_of(const lock::HeldGrant& grant) {
  std::string out;
  for (const lock::HeldLock& doc : grant.docs) {
    if (out.find(doc.key.id()) == std::string::npos) out += (out.empty() ? "" : ", ") + doc.key.id();
  }
  return out;
}

}  // namespace

std::unique_ptr<Hold> make_grant_hold(lock::LockStore& store, Clock& clock, lock::HeldGrant grant, Millis ttl,
                                      std::ostream& err) {
  using Step = RenewStep<lock::HeldGrant>;
  std::string names = names_of(grant);
  auto renew = [&store, names, ttl](const lock::HeldGrant& held) {
    lock::GrantRenewal renewed = lock::renew_grant(store, held, ttl);
    Step step;
    step.grant = std::move(renewed.grant);  // kFailed: each document at its newest version
    switch (renewed.result) {
      case lock::GrantRenewal::Result::kRenewed:
        step.result = Step::Result::kRenewed;
        break;
      case lock::GrantRenewal::Result::kLost:
        step.result = Step::Result::kLost;
        step.why = "lock " + names + " was lost: " + renewed.why;
        break;
      case lock::GrantRenewal::Result::kFailed:
        step.result = Step::Result::kFailed;
        step.why = renewed.error ? renewed.error->describe() : std::string("unconfirmed");
        break;
    }
    return step;
  };
  auto release = [&store](const lock::HeldGrant& held) -> std::optional<std::string> {
    auto released = store.release_grant(held);
    if (released.ok()) return std::nullopt;
    return released.error().describe();
  };
  return std::make_unique<RenewingHold<lock::HeldGrant>>(clock, std::move(names), std::move(grant), ttl, err,
                                                         std::move(renew), std::move(release));
}

}  // namespace eslease::cli
