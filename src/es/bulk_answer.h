// Reading a _bulk answer. A renewal tick sends 1,000 documents a request, and building the
// answer as a JSON value only to read five members of each item was a third of a tick's CPU:
// the plain answer (every item applied, in conflict or not found) is read as it streams by,
// and anything else is parsed in full, where the messages that describe it are made.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "common/result.h"
#include "es/document_api.h"

namespace eslease::es {

// The items of a plain answer with `expected_items` items, without building a JSON value;
// nullopt for any other answer (malformed, an item that failed otherwise, an unexpected type).
std::optional<BulkResult> read_plain_bulk_answer(std::string_view body, std::size_t expected_items);

// The items of a _bulk answer already parsed, whatever it holds: an item that failed for
// another reason carries its Error, a malformed answer is a kProtocol Error.
Result<BulkResult> bulk_result_of(const nlohmann::json& body, std::size_t expected_items);

}  // namespace eslease::es
