// String formats that apiextensions-apiserver checks (strfmt.Default after
// StripUnsupportedFormatsPostProcess). Internal to the schema library.
#pragma once

#include <string>

namespace eslease::kubeemu::schema::detail {

// True for the formats kube keeps and checks; other formats are stripped, so never fail.
bool format_is_checked(const std::string& format);
bool matches_format(const std::string& format, const std::string& text);

}  // namespace eslease::kubeemu::schema::detail
