#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace eslease::kube {

// Parses what the API server sent (an object, a list, a watch event) without its objects'
// `managedFields`. No part of eslease reads them, and they are about half the bytes of an
// object the controller writes: building them into JSON only to drop them cost a tenth of the
// controller's CPU in a cold start. An update that omits them keeps them on the server, so
// nothing written back loses them.
//
// They are cut out of the text before parsing (a parser callback that drops them costs more
// than it saves): every `"managedFields": [...]` member whose value is an array, wherever it
// sits. In the objects eslease reads it only occurs in metadata (labels and annotations are
// strings). Text that is not valid JSON is left as it is, so the parse reports it.
// Returns a discarded value when the text is not valid JSON, as nlohmann::json::parse does
// without exceptions.
nlohmann::json parse_answer(std::string_view text);

// Only the `metadata` of the object the text holds, as {"metadata": {...}} (without its
// managedFields), for a caller that reads nothing else of an answer (the resourceVersion a
// write produced). The rest is checked for balanced structure but not decoded: a status
// write's answer is the whole object, and decoding it cost more than the write itself.
// Discarded, as parse_answer, when the text is not an object or its metadata not valid JSON.
nlohmann::json parse_answer_metadata(std::string_view text);

// The text with those members cut out; `scratch` holds it when something was cut.
std::string_view without_managed_fields(std::string_view text, std::string& scratch);

}  // namespace eslease::kube
