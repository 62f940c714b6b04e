#include "emulators/kube/protobuf.h"

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "common/base64.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;

// A minimal protobuf wire-format reader: varints and length-delimited fields suffice for
// the messages decoded here.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }
  bool ok() const { return ok_; }

  // Reads the next field header; false at the end or on malformed input.
  bool next(std::uint32_t& field, std::uint32_t& wire_type) {
    if (done() || !ok_) return false;
    std::uint64_t key;
    if (!varint(key)) return false;
    field = static_cast<std::uint32_t>(key >> 3);
    wire_type = static_cast<std::uint32_t>(key & 7);
    return true;
  }
  bool varint(std::uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return fail();
      const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
      out |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return fail();
  }
  bool bytes(std::string_view& out) {
    std::uint64_t size;
    if (!varint(size) || size > data_.size() - pos_) return fail();
    out = data_.substr(pos_, size);
    pos_ += size;
    return true;
  }
  bool skip(std::uint32_t wire_type) {
    std::uint64_t ignored;
    std::string_view view;
    switch (wire_type) {
      case 0:
        return varint(ignored);
      case 1:
        return advance(8);
      case 2:
        return bytes(view);
      case 5:
        return advance(4);
      default:
        return fail();
    }
  }

 private:
  bool advance(std::size_t n) {
    if (n > data_.size() - pos_) return fail();
    pos_ += n;
    return true;
  }
  bool fail() {
    ok_ = false;
    return false;
  }
  std::string_view data_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

std::optional<std::pair<std::string, std::string>> map_entry(std::string_view data) {
  Reader r(data);
  std::pair<std::string, std::string> entry;
  std::uint32_t field, type;
  while (r.next(field, type)) {
    std::string_view value;
    if (type == 2 && (field == 1 || field == 2)) {
      if (!r.bytes(value)) return std::nullopt;
      (field == 1 ? entry.first : entry.second) = std::string(value);
    } else if (!r.skip(type)) {
      return std::nullopt;
    }
  }
  return r.ok() ? std::optional(entry) : std::nullopt;
}

// Strings fields by number, string maps by number and repeated strings by number; other
// fields are skipped. Returns false when malformed.
struct Layout {
  std::vector<std::pair<std::uint32_t, const char*>> strings;
  std::vector<std::pair<std::uint32_t, const char*>> maps;
  std::vector<std::pair<std::uint32_t, const char*>> lists;
  std::vector<std::pair<std::uint32_t, const char*>> bools;
};

bool decode_fields(std::string_view data, const Layout& layout, json& out,
                   const std::function<bool(std::uint32_t, std::uint32_t, Reader&)>& extra = nullptr) {
  Reader r(data);
  std::uint32_t field, type;
  while (r.next(field, type)) {
    auto find = [&](const auto& list) -> const char* {
      for (const auto& [number, name] : list) {
        if (number == field) return name;
      }
      return nullptr;
    };
    std::string_view value;
    if (const char* name = find(layout.strings); name && type == 2) {
      if (!r.bytes(value)) return false;
      // gogo-protobuf writes empty strings too; JSON omits them.
      if (!value.empty()) out[name] = std::string(value);
    } else if (const char* name = find(layout.maps); name && type == 2) {
      if (!r.bytes(value)) return false;
      auto entry = map_entry(value);
      if (!entry) return false;
      out[name][entry->first] = entry->second;
    } else if (const char* name = find(layout.lists); name && type == 2) {
      if (!r.bytes(value)) return false;
      out[name].push_back(std::string(value));
    } else if (const char* name = find(layout.bools); name && type == 0) {
      std::uint64_t flag;
      if (!r.varint(flag)) return false;
      out[name] = flag != 0;
    } else if (extra && extra(field, type, r)) {
      continue;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return r.ok();
}

bool decode_object_meta(std::string_view data, json& meta) {
  meta = json::object();
  static const Layout layout{
      {{1, "name"}, {2, "generateName"}, {3, "namespace"}, {5, "uid"}, {6, "resourceVersion"}},
      {{11, "labels"}, {12, "annotations"}},
      {{14, "finalizers"}},
      {}};
  return decode_fields(data, layout, meta);
}

// Decodes a top-level object whose field 1 is ObjectMeta and whose other fields follow `layout`.
std::optional<json> decode_object(
    std::string_view raw, const Layout& layout,
    const std::function<bool(std::uint32_t, std::uint32_t, Reader&, json&)>& extra) {
  json object = json::object();
  bool ok = decode_fields(raw, layout, object, [&](std::uint32_t field, std::uint32_t type, Reader& r) {
    if (field == 1 && type == 2) {
      std::string_view value;
      json meta;
      if (!r.bytes(value) || !decode_object_meta(value, meta)) return false;
      object["metadata"] = meta;
      return true;
    }
    return extra ? extra(field, type, r, object) : false;
  });
  if (!ok) return std::nullopt;
  return object;
}

// runtime.Unknown: the type of the object and its bytes, behind the "k8s\0" magic.
struct Envelope {
  std::string api_version;
  std::string kind;
  std::string_view raw;
};

std::optional<Envelope> decode_envelope(const std::string& body) {
  static const std::string kMagic("k8s\0", 4);
  if (body.compare(0, kMagic.size(), kMagic) != 0) return std::nullopt;
  Reader reader(std::string_view(body).substr(kMagic.size()));
  Envelope envelope;
  std::uint32_t field, type;
  while (reader.next(field, type)) {
    std::string_view value;
    if (field == 1 && type == 2) {
      if (!reader.bytes(value)) return std::nullopt;
      json type_meta = json::object();
      if (!decode_fields(value, Layout{{{1, "apiVersion"}, {2, "kind"}}, {}, {}, {}}, type_meta))
        return std::nullopt;
      envelope.api_version = type_meta.value("apiVersion", "");
      envelope.kind = type_meta.value("kind", "");
    } else if (field == 2 && type == 2) {
      if (!reader.bytes(envelope.raw)) return std::nullopt;
    } else if (!reader.skip(type)) {
      return std::nullopt;
    }
  }
  if (!reader.ok()) return std::nullopt;
  return envelope;
}

// gracePeriodSeconds=1 (int64), preconditions=2 {uid=1, resourceVersion=2},
// orphanDependents=3, propagationPolicy=4, dryRun=5. It has no metadata.
std::optional<json> decode_delete_options(std::string_view raw) {
  json options = json::object();
  bool ok = decode_fields(
      raw, Layout{{{4, "propagationPolicy"}}, {}, {{5, "dryRun"}}, {{3, "orphanDependents"}}}, options,
      [&](std::uint32_t field, std::uint32_t type, Reader& r) {
        if (field == 1 && type == 0) {
          std::uint64_t grace;
          if (!r.varint(grace)) return false;
          options["gracePeriodSeconds"] = static_cast<std::int64_t>(grace);
          return true;
        }
        std::string_view pre;
        if (field != 2 || type != 2 || !r.bytes(pre)) return false;
        json decoded = json::object();
        if (!decode_fields(pre, Layout{{{1, "uid"}, {2, "resourceVersion"}}, {}, {}, {}}, decoded))
          return false;
        options["preconditions"] = decoded;
        return true;
      });
  if (!ok) return std::nullopt;
  return options;
}

std::optional<json> decode_namespace(std::string_view raw) {
  return decode_object(raw, {}, [](std::uint32_t field, std::uint32_t type, Reader& r, json& out) {
    if (field != 2 || type != 2) return false;
    std::string_view spec;
    json decoded = json::object();
    if (!r.bytes(spec) || !decode_fields(spec, Layout{{}, {}, {{1, "finalizers"}}, {}}, decoded))
      return false;
    out["spec"] = decoded;
    return true;
  });
}

// ConfigMap: data=2, binaryData=3, immutable=4. Secret: data=2 (bytes), type=3,
// stringData=4, immutable=5. Bytes values are base64 in JSON.
std::optional<json> decode_config_map_or_secret(std::string_view raw, bool secret) {
  Layout layout = secret ? Layout{{{3, "type"}}, {{4, "stringData"}}, {}, {{5, "immutable"}}}
                         : Layout{{}, {{2, "data"}}, {}, {{4, "immutable"}}};
  return decode_object(raw, layout, [secret](std::uint32_t field, std::uint32_t type, Reader& r, json& out) {
    const bool binary = secret ? field == 2 : field == 3;
    if (!binary || type != 2) return false;
    std::string_view entry_bytes;
    if (!r.bytes(entry_bytes)) return false;
    auto entry = map_entry(entry_bytes);
    if (!entry) return false;
    out[secret ? "data" : "binaryData"][entry->first] = base64_encode(entry->second);
    return true;
  });
}

}  // namespace

std::optional<json> decode_kubernetes_protobuf(const std::string& body) {
  auto envelope = decode_envelope(body);
  if (!envelope || envelope->api_version != "v1") return std::nullopt;
  const std::string& kind = envelope->kind;
  std::optional<json> object;
  if (kind == "DeleteOptions") {
    object = decode_delete_options(envelope->raw);
  } else if (kind == "Namespace") {
    object = decode_namespace(envelope->raw);
  } else if (kind == "ConfigMap" || kind == "Secret") {
    object = decode_config_map_or_secret(envelope->raw, kind == "Secret");
  }
  if (!object) return std::nullopt;
  (*object)["apiVersion"] = envelope->api_version;
  (*object)["kind"] = kind;
  if (kind != "DeleteOptions" && !object->contains("metadata")) (*object)["metadata"] = json::object();
  return object;
}

}  // namespace eslease::kubeemu
