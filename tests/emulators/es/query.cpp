#include "emulators/es/query.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <functional>

#include "common/text.h"
#include "emulators/es/dates.h"
#include "emulators/es/field_values.h"
#include "emulators/es/mapping.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

// The evaluation of a query over one document. A query value that cannot be compared with
// its field's type fails the whole search with a query_shard_exception: the first such
// failure is kept, and the rest of the evaluation, which can no longer change the answer,
// runs on without effect.
struct Evaluation {
  const Index& index;
  const std::string& id;
  const Doc& doc;
  long long now = 0;
  std::optional<std::string> failure;

  void fail(std::string reason) {
    if (!failure) failure = std::move(reason);
  }
};

// Three-way comparison of a document value with a query value for a field type.
// nullopt when the values cannot be compared (the document does not match).
std::optional<int> compare(Evaluation& ev, const std::string& type, const json& doc_value,
                           const json& query_value, bool case_insensitive = false) {
  if (is_numeric_type(type)) {
    auto q = to_number(query_value);
    if (!q) {
      ev.fail("failed to create query: For input string: \"" + to_keyword(query_value) + "\"");
      return std::nullopt;
    }
    auto d = to_number(doc_value);
    if (!d) return std::nullopt;
    return *d < *q ? -1 : (*d > *q ? 1 : 0);
  }
  if (type == "date" || type == "date_nanos") {
    auto q = parse_date_math(query_value, ev.now);
    if (!q) {
      ev.fail("failed to parse date field [" + to_keyword(query_value) +
              "] with format [strict_date_optional_time||epoch_millis]");
      return std::nullopt;
    }
    auto d = parse_date_millis(doc_value);
    if (!d) return std::nullopt;
    return *d < *q ? -1 : (*d > *q ? 1 : 0);
  }
  if (type == "boolean") {
    auto q = to_bool(query_value);
    if (!q) {
      ev.fail("Can't parse boolean value [" + to_keyword(query_value) + "], expected [true] or [false]");
      return std::nullopt;
    }
    auto d = to_bool(doc_value);
    if (!d) return std::nullopt;
    return static_cast<int>(*d) - static_cast<int>(*q);
  }
  std::string d = to_keyword(doc_value);
  std::string q = to_keyword(query_value);
  if (case_insensitive) {
    d = to_lower(d);
    q = to_lower(q);
  }
  return d.compare(q) < 0 ? -1 : (d.compare(q) > 0 ? 1 : 0);
}

bool term_matches(Evaluation& ev, const std::string& type, const json& doc_value, const json& term, bool ci) {
  if (is_text(type)) {
    auto tokens = tokenize(to_keyword(doc_value));
    std::string t = to_keyword(term);
    return std::find(tokens.begin(), tokens.end(), ci ? to_lower(t) : t) != tokens.end();
  }
  auto c = compare(ev, type, doc_value, term, ci);
  return c && *c == 0;
}

// Whether any value of the query's field passes `test`, given the field's mapped type.
bool any_value(const Evaluation& ev, const Query& q,
               const std::function<bool(const std::string& type, const json& value)>& test) {
  auto type = field_type(ev.index.mappings, q.field);
  if (!type || *type == "object" || *type == "nested") return false;
  // A multi-field such as "name.keyword" reads its parent's values.
  std::vector<const json*> values;
  collect_values(ev.doc.source, q.field, values);
  if (values.empty()) {
    auto dot = q.field.rfind('.');
    if (dot != std::string::npos) collect_values(ev.doc.source, q.field.substr(0, dot), values);
  }
  for (const json* v : values) {
    if (!v->is_object() && test(*type, *v)) return true;
  }
  return false;
}

bool id_among(const std::vector<json>& values, const std::string& id) {
  return std::any_of(values.begin(), values.end(), [&](const json& v) { return to_keyword(v) == id; });
}

bool terms_match(Evaluation& ev, const Query& q) {
  if (q.field == "_id") return id_among(q.values, ev.id);
  return any_value(ev, q, [&](const std::string& type, const json& value) {
    return std::any_of(q.values.begin(), q.values.end(),
                       [&](const json& t) { return term_matches(ev, type, value, t, q.case_insensitive); });
  });
}

bool prefix_matches(const Evaluation& ev, const Query& q) {
  if (q.field == "_id") return ev.id.rfind(to_keyword(q.values[0]), 0) == 0;
  return any_value(ev, q, [&](const std::string& type, const json& value) {
    std::string p = to_keyword(q.values[0]);
    if (is_text(type)) {
      for (const auto& token : tokenize(to_keyword(value))) {
        if (token.rfind(p, 0) == 0) return true;
      }
      return false;
    }
    std::string v = to_keyword(value);
    if (q.case_insensitive) {
      v = to_lower(v);
      p = to_lower(p);
    }
    return v.rfind(p, 0) == 0;
  });
}

bool match_matches(Evaluation& ev, const Query& q) {
  return any_value(ev, q, [&](const std::string& type, const json& value) {
    if (!is_text(type)) return term_matches(ev, type, value, q.values[0], false);
    auto doc_tokens = tokenize(to_keyword(value));
    auto query_tokens = tokenize(to_keyword(q.values[0]));
    if (query_tokens.empty()) return false;
    auto has = [&](const std::string& t) {
      return std::find(doc_tokens.begin(), doc_tokens.end(), t) != doc_tokens.end();
    };
    return q.match_all_terms ? std::all_of(query_tokens.begin(), query_tokens.end(), has)
                             : std::any_of(query_tokens.begin(), query_tokens.end(), has);
  });
}

bool range_matches(Evaluation& ev, const Query& q) {
  return any_value(ev, q, [&](const std::string& type, const json& value) {
    auto check = [&](const std::optional<json>& bound, auto accept) {
      if (!bound || bound->is_null()) return true;
      auto c = compare(ev, type, value, *bound);
      return c.has_value() && accept(*c);
    };
    return check(q.gt, [](int c) { return c > 0; }) && check(q.gte, [](int c) { return c >= 0; }) &&
           check(q.lt, [](int c) { return c < 0; }) && check(q.lte, [](int c) { return c <= 0; });
  });
}

bool evaluate(Evaluation& ev, const Query& q);

bool bool_matches(Evaluation& ev, const Query& q) {
  for (const auto& sub : q.must) {
    if (!evaluate(ev, sub)) return false;
  }
  for (const auto& sub : q.filter) {
    if (!evaluate(ev, sub)) return false;
  }
  for (const auto& sub : q.must_not) {
    if (evaluate(ev, sub)) return false;
  }
  int should = 0;
  for (const auto& sub : q.should) {
    if (evaluate(ev, sub)) ++should;
  }
  return should >= q.minimum_should_match;
}

bool evaluate(Evaluation& ev, const Query& q) {
  switch (q.kind) {
    case Query::Kind::kMatchAll:
      return true;
    case Query::Kind::kMatchNone:
      return false;
    case Query::Kind::kIds:
      return id_among(q.values, ev.id);
    case Query::Kind::kTerm:
    case Query::Kind::kTerms:
      return terms_match(ev, q);
    case Query::Kind::kPrefix:
      return prefix_matches(ev, q);
    case Query::Kind::kExists:
      return any_value(ev, q, [](const std::string&, const json&) { return true; });
    case Query::Kind::kMatch:
      return match_matches(ev, q);
    case Query::Kind::kRange:
      return range_matches(ev, q);
    case Query::Kind::kBool:
      return bool_matches(ev, q);
  }
  return false;
}

}  // namespace

std::variant<bool, EsError> query_matches(const Query& query, const Index& index, const std::string& id,
                                          const Doc& doc, long long now_millis) {
  Evaluation ev{index, id, doc, now_millis, std::nullopt};
  const bool matched = evaluate(ev, query);
  if (ev.failure) {
    return make_es_error(400, "query_shard_exception", *ev.failure,
                         {{"index_uuid", index.uuid}, {"index", index.name}});
  }
  return matched;
}

}  // namespace eslease::esemu
