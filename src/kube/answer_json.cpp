#include "kube/answer_json.h"

#include <algorithm>

namespace eslease::kube {

namespace {

constexpr std::string_view kKey = "\"managedFields\"";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_space(std::string_view text, std::size_t at) {
  while (at < text.size() && is_space(text[at])) ++at;
  return at;
}

// The position just past the string whose opening quote is at `open`, or npos.
std::size_t past_string(std::string_view text, std::size_t open) {
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;  // the escaped character, whatever it is
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The position just past the array or object that starts at `open` ('[' or '{'), or npos
// when the text ends inside it or closes a bracket with the other kind. Brackets inside
// strings do not count.
std::size_t past_bracketed(std::string_view text, std::size_t open) {
  std::string closers;  // the closing brackets expected, innermost last
  for (std::size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = past_string(text, i);
      if (end == std::string_view::npos) return end;
      i = end - 1;
    } else if (c == '[') {
      closers.push_back(']');
    } else if (c == '{') {
      closers.push_back('}');
    } else if (c == ']' || c == '}') {
      if (closers.empty() || closers.back() != c) return std::string_view::npos;
      closers.pop_back();
      if (closers.empty()) return i + 1;
    }
  }
  return std::string_view::npos;
}

// The span [begin, end) to cut for the key found at `key`, with one of the commas around it;
// nullopt-like {0, 0} when the match is not a member with an array value.
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
};

Span member_at(std::string_view text, std::size_t key) {
  // A member's key follows '{' or ','. Inside a string a quote is escaped, so the quoted key
  // cannot match there; this check also refuses "...\"managedFields\"..." split oddly.
  std::size_t before = key;
  while (before > 0 && is_space(text[before - 1])) --before;
  if (before == 0 || (text[before - 1] != '{' && text[before - 1] != ',')) return {};
  std::size_t colon = skip_space(text, key + kKey.size());
  if (colon >= text.size() || text[colon] != ':') return {};
  const std::size_t value = skip_space(text, colon + 1);
  if (value >= text.size() || text[value] != '[') return {};
  const std::size_t end = past_bracketed(text, value);
  if (end == std::string_view::npos) return {};
  // Take the comma after it; the last member takes the comma before it instead.
  const std::size_t after = skip_space(text, end);
  if (after < text.size() && text[after] == ',') return {key, after + 1};
  if (text[before - 1] == ',') return {before - 1, end};
  return {key, end};  // the only member
}

}  // namespace

std::string_view without_managed_fields(std::string_view text, std::string& scratch) {
  std::size_t found = text.find(kKey);
  if (found == std::string_view::npos) return text;
  scratch.clear();
  std::size_t copied = 0;  // text before this was copied or cut
  while (found != std::string_view::npos) {
    Span span = member_at(text, found);
    if (span.end == 0) {
      found = text.find(kKey, found + kKey.size());
      continue;
    }
    // A comma before it may have gone with the member before (a key given twice).
    span.begin = std::max(span.begin, copied);
    if (scratch.empty()) scratch.reserve(text.size());
    scratch.append(text.substr(copied, span.begin - copied));
    copied = span.end;
    found = text.find(kKey, span.end);
  }
  if (copied == 0) return text;
  scratch.append(text.substr(copied));
  return scratch;
}

namespace {

// The position just past the value that starts at `at`, or npos when it is cut short.
std::size_t past_value(std::string_view text, std::size_t at) {
  if (at >= text.size()) return std::string_view::npos;
  if (text[at] == '{' || text[at] == '[') return past_bracketed(text, at);
  if (text[at] == '"') return past_string(text, at);
  const std::size_t end = text.find_first_of(",}] \t\n\r", at);  // a number, true, false, null
  return end == at ? std::string_view::npos : end;
}

}  // namespace

nlohmann::json parse_answer_metadata(std::string_view text) {
  auto discarded = [] { return nlohmann::json(nlohmann::json::value_t::discarded); };
  std::size_t at = skip_space(text, 0);
  if (at >= text.size() || text[at] != '{') return discarded();
  std::string_view metadata;
  at = skip_space(text, at + 1);
  while (at < text.size() && text[at] != '}') {
    if (text[at] != '"') return discarded();
    const std::size_t key_end = past_string(text, at);
    if (key_end == std::string_view::npos) return discarded();
    const std::string_view key = text.substr(at, key_end - at);
    const std::size_t colon = skip_space(text, key_end);
    if (colon >= text.size() || text[colon] != ':') return discarded();
    const std::size_t value = skip_space(text, colon + 1);
    const std::size_t value_end = past_value(text, value);
    if (value_end == std::string_view::npos) return discarded();
    if (key == "\"metadata\"") metadata = text.substr(value, value_end - value);
    at = skip_space(text, value_end);
    if (at < text.size() && text[at] == ',') at = skip_space(text, at + 1);
  }
  if (at >= text.size() || skip_space(text, at + 1) != text.size()) return discarded();
  if (metadata.empty()) return nlohmann::json::object();
  nlohmann::json parsed = parse_answer(metadata);
  if (!parsed.is_object()) return discarded();
  return nlohmann::json{{"metadata", std::move(parsed)}};
}

nlohmann::json parse_answer(std::string_view text) {
  std::string scratch;
  const std::string_view cut = without_managed_fields(text, scratch);
  return nlohmann::json::parse(cut.begin(), cut.end(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace eslease::kube
