// How queries and sorts read a document value: as a number, a boolean, a keyword, or
// the terms a text field is analyzed into (lowercased runs of letters and digits, a
// simplified standard analyzer).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace eslease::esemu {

std::optional<long double> to_number(const nlohmann::ordered_json& v);
std::optional<bool> to_bool(const nlohmann::ordered_json& v);
std::string to_keyword(const nlohmann::ordered_json& v);
std::vector<std::string> tokenize(const std::string& text);
bool is_text(const std::string& type);

}  // namespace eslease::esemu
