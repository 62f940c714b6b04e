#include "emulators/kube/object_meta.h"

#include <cstdio>
#include <random>
#include <regex>

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

std::mt19937_64& rng() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine;
}

}  // namespace

std::vector<StatusCause> validate_object_name(const std::string& name, bool label_only) {
  static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  static const std::regex kSubdomain("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  std::vector<StatusCause> causes;
  const std::string value = "Invalid value: " + json(name).dump() + ": ";
  const std::size_t max = label_only ? 63 : 253;
  if (name.size() > max) {
    causes.push_back({"FieldValueInvalid",
                      value + "must be no more than " + std::to_string(max) + " characters",
                      "metadata.name"});
  }
  if (label_only && !std::regex_match(name, kLabel)) {
    causes.push_back({"FieldValueInvalid",
                      value +
                          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                          "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                          "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                      "metadata.name"});
  } else if (!label_only && !std::regex_match(name, kSubdomain)) {
    causes.push_back(
        {"FieldValueInvalid",
         value + "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                 "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                 "'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
         "metadata.name"});
  }
  return causes;
}

std::string random_uid() {
  std::uniform_int_distribution<std::uint64_t> dist;
  std::uint64_t a = dist(rng()), b = dist(rng());
  a = (a & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  char out[40];
  std::snprintf(out, sizeof(out), "%08llx-%04llx-%04llx-%04llx-%012llx", (unsigned long long)(a >> 32),
                (unsigned long long)((a >> 16) & 0xFFFF), (unsigned long long)(a & 0xFFFF),
                (unsigned long long)(b >> 48), (unsigned long long)(b & 0xFFFFFFFFFFFFULL));
  return out;
}

std::string generate_name(const std::string& prefix) {
  static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<std::size_t> dist(0, sizeof(kAlphabet) - 2);
  // The apiserver truncates the prefix so the result stays within 63 characters.
  std::string name = prefix.substr(0, 58);
  for (int i = 0; i < 5; ++i) name += kAlphabet[dist(rng())];
  return name;
}

bool spec_changed(const json& before, const json& after) {
  auto strip = [](json object) {
    if (object.is_object()) {
      object.erase("metadata");
      object.erase("status");
    }
    return object;
  };
  return strip(before) != strip(after);
}

std::vector<std::string> finalizers_of(const json& object) {
  std::vector<std::string> out;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return out;
  auto list = meta->find("finalizers");
  if (list == meta->end() || !list->is_array()) return out;
  for (const auto& f : *list) {
    if (f.is_string()) out.push_back(f.get<std::string>());
  }
  return out;
}

std::string meta_string(const json& object, const char* key) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto it = meta->find(key);
  return it != meta->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace eslease::kubeemu
