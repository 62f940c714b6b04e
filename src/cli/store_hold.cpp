#include "cli/store_hold.h"

#include <optional>
#include <string>
#include <utility>

#include "cli/renewing_hold.h"

namespace eslease::cli {

std::unique_ptr<Hold> make_store_hold(lock::LockStore& store, Clock& clock, lock::LockKey key,
                                      lock::Grant grant, Millis ttl, std::ostream& err) {
  using Step = RenewStep<lock::Grant>;
  std::string name = key.id();
  auto release = [&store, key](const lock::Grant& held) -> std::optional<std::string> {
    auto released = store.release(key, held, lock::ReleaseScope::kGrant);
    if (released.ok()) return std::nullopt;
    return released.error().message;
  };
  auto renew = [&store, key = std::move(key), ttl](const lock::Grant& held) {
    Result<lock::RenewOutcome> renewed = store.renew(key, held, ttl);
    Step step;
    if (renewed.ok() && renewed->grant) {
      step.result = renewed->renewed ? Step::Result::kRenewed : Step::Result::kRefreshed;
      step.grant = std::move(renewed->grant);
    } else if (renewed.ok()) {
      step.result = Step::Result::kLost;
      step.why = "lock " + key.id() + " was lost" +
                 (renewed->current ? " to " + renewed->current->doc.holder : std::string());
    } else {
      step.why = renewed.error().message;
    }
    return step;
  };
  return std::make_unique<RenewingHold<lock::Grant>>(clock, std::move(name), std::move(grant), ttl, err,
                                                     std::move(renew), std::move(release));
}

}  // namespace eslease::cli
