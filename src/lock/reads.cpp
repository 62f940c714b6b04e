// The realtime reads of grants.h: lock documents as the grant protocol decides on them.
#include <algorithm>

#include "lock/grants.h"

namespace eslease::lock {
namespace {

// A realtime read of document `id` as a lock state: nullopt when absent, kProtocol when it is
// not the lock document of that id. Its token counts among those issued before.
DocumentRead lock_state_of(const std::string& id, const es::GetResult& got, TokenGuard& guard) {
  if (!got.found) return std::optional<LockState>();
  auto doc = parse_lock_document(got.source);
  if (!doc.ok()) {
    Error error = doc.error();
    error.message = "lock " + id + ": " + error.message;
    return error;
  }
  if (document_id(*doc) != id) {
    return make_error(ErrorCode::kProtocol,
                      "document " + id + " claims to be " + document_id(*doc).substr(0, 300));
  }
  auto state = make_state(std::move(*doc), got.version);
  if (!state.ok()) return state.error();
  guard.saw(state->token);
  return std::optional<LockState>(std::move(*state));
}

}  // namespace

Result<std::vector<DocumentRead>> read_documents(const GrantContext& context,
                                                 const std::vector<std::string>& ids) {
  std::vector<DocumentRead> out;
  out.reserve(ids.size());
  if (ids.size() == 1) {
    auto got = context.api.get(context.index, ids.front());
    if (!got.ok()) return got.error();
    out.push_back(lock_state_of(ids.front(), *got, context.guard));
    return out;
  }
  const std::size_t chunk = std::max<std::size_t>(1, context.max_bulk_items);
  for (std::size_t begin = 0; begin < ids.size(); begin += chunk) {
    const std::vector<std::string> part(
        ids.begin() + static_cast<std::ptrdiff_t>(begin),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), begin + chunk)));
    auto got = context.api.mget(context.index, part);
    if (!got.ok()) return got.error();
    if (got->size() != part.size())
      return make_error(ErrorCode::kProtocol, "the _mget answer has " + std::to_string(got->size()) +
                                                  " documents for " + std::to_string(part.size()) + " ids");
    for (std::size_t n = 0; n < part.size(); ++n)
      out.push_back(lock_state_of(part[n], (*got)[n], context.guard));
  }
  return out;
}

}  // namespace eslease::lock
