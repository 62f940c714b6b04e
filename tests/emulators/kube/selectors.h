// Label and field selectors with the grammar and matching rules of apimachinery's
// labels.Parse and fields.ParseSelector.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace eslease::kubeemu {

class LabelSelector {
 public:
  // Parses "a=b,c!=d,e in (x,y),f notin (z),g,!h"; Error(kInvalidArgument) with the
  // apiserver's wording when malformed.
  static Result<LabelSelector> parse(const std::string& text);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist, kGreaterThan, kLessThan };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  // `supported` lists the field labels the resource accepts besides metadata.name and
  // metadata.namespace. Unknown labels give "field label not supported: <label>".
  static Result<FieldSelector> parse(const std::string& text, const std::vector<std::string>& supported);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return terms_.empty(); }

 private:
  struct Term {
    std::string field;
    bool equals;
    std::string value;
  };
  std::vector<Term> terms_;
};

}  // namespace eslease::kubeemu
