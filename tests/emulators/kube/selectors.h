// Label and field selectors with the grammar and matching rules of apimachinery's
// labels.Parse and fields.ParseSelector.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "emulators/kube/api_status.h"

namespace eslease::kubeemu {

class LabelSelector {
 public:
  // Parses "a=b,c!=d,e in (x,y),f notin (z),g,!h"; a 400 BadRequest with the apiserver's
  // wording when malformed.
  static std::variant<LabelSelector, ApiError> parse(const std::string& text);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist, kGreaterThan, kLessThan };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;
  };
  static std::variant<Requirement, ApiError> parse_requirement(const std::string& part);
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  // `supported` lists the field labels the resource accepts besides metadata.name and
  // metadata.namespace. Unknown labels give "field label not supported: <label>".
  static std::variant<FieldSelector, ApiError> parse(const std::string& text,
                                                     const std::vector<std::string>& supported);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return terms_.empty(); }

 private:
  struct Term {
    std::string field;
    bool equals = true;
    std::string value;
  };
  std::vector<Term> terms_;
};

// The labelSelector and fieldSelector of a LIST, a WATCH or a DELETE of a collection.
struct Selectors {
  LabelSelector labels;
  FieldSelector fields;

  // `supported`: the resource's field labels, as FieldSelector::parse takes them.
  static std::variant<Selectors, ApiError> parse(const std::string& label_text, const std::string& field_text,
                                                 const std::vector<std::string>& supported);
  bool matches(const nlohmann::json& object) const {
    return labels.matches(object) && fields.matches(object);
  }
  bool empty() const { return labels.empty() && fields.empty(); }
};

}  // namespace eslease::kubeemu
