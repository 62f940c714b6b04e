// Renders JSON values the way Go's fmt prints the decoded unstructured values inside
// k8s.io/apimachinery field.Error messages, so emulator messages match kube-apiserver's byte
// for byte. Internal to the emulator.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace eslease::kubeemu::schema::detail {

// strconv.Quote: printable UTF-8 kept, control characters and invalid bytes escaped.
std::string go_quote(std::string_view text);
// fmt "%v" of a float64: shortest representation, exponent form below 1e-4 or from 1e21.
std::string go_float(double value);
// fmt "%v" of a decoded JSON number (int64 or float64).
std::string go_number(const nlohmann::json& number);
// fmt "%#v" of a decoded JSON value: map[string]interface {}{"k":v}, []interface {}{...}.
std::string go_sharp_v(const nlohmann::json& value);
// fmt "%v" of a decoded JSON value: [a b c], map[k:v], <nil>; also how a printer column
// of type string shows a value that is not a string (jsonpath prints it with fmt.Fprint).
std::string go_plain_v(const nlohmann::json& value);
// fmt "%v" of []interface{} as EnumFail prints it: [a b c].
std::string go_slice_v(const nlohmann::json& values);

// field.Error.ErrorBody() for a bad value: "<Type>: <value>[: <detail>]".
std::string error_body_with_value(std::string_view type_text, const nlohmann::json& bad_value,
                                  std::string_view detail);

}  // namespace eslease::kubeemu::schema::detail
