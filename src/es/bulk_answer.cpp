#include "es/bulk_answer.h"

#include <limits>
#include <string>
#include <vector>

namespace eslease::es {
namespace {

using nlohmann::json;

// What is read of one item. A member seen again replaces what was read of it (as the last
// of two equal keys wins in a JSON value); one of an unexpected type leaves it unset.
struct ItemSeen {
  std::string id;
  std::optional<std::int64_t> status;
  std::optional<std::int64_t> seq_no;
  std::optional<std::int64_t> primary_term;
  std::string result;
  std::string error_type;
};

// A SAX reader of {"items":[{"<action>":{item}}, ...], ...}. It declines (returns false,
// which stops the parse) at the first thing a plain answer does not hold. Depths: 1 the
// answer, 2 its items, 3 an item's action wrapper, 4 the item, 5 the item's error.
class PlainBulkReader {
 public:
  explicit PlainBulkReader(std::size_t expected) { items.reserve(expected); }

  std::vector<ItemSeen> items;
  bool items_seen = false;

  bool null() { return scalar(); }
  bool boolean(bool) { return scalar(); }
  bool number_integer(json::number_integer_t value) { return integer(value); }
  bool number_unsigned(json::number_unsigned_t value) {
    if (value > static_cast<json::number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) return false;
    return integer(static_cast<std::int64_t>(value));
  }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar(); }
  bool binary(json::binary_t&) { return false; }
  bool string(json::string_t& value) {
    if (skipping_ > 0) return true;
    if (depth_ == 4) {
      if (key_ == "_id") {
        items.back().id = std::move(value);
      } else if (key_ == "result") {
        items.back().result = std::move(value);
      }
      return true;
    }
    if (depth_ == 5) {
      if (key_ == "type") items.back().error_type = std::move(value);
      return true;
    }
    return scalar();
  }
  bool key(json::string_t& name) {
    if (skipping_ > 0) return true;
    if (depth_ == 1) answer_key_ = name;
    if (depth_ == 3 && ++wrapper_keys_ > 1) return false;
    if (depth_ == 4) forget(name);
    if (depth_ == 5 && name == "type") items.back().error_type.clear();
    if (depth_ == 4 || depth_ == 5) key_ = std::move(name);
    return true;
  }
  bool start_object(std::size_t) {
    if (skipping_ > 0 || (depth_ == 1 && answer_key_ != "items") || (depth_ == 4 && key_ != "error") ||
        depth_ == 5) {
      ++skipping_;
      return true;
    }
    if (depth_ == 1) return false;  // items that are not an array
    if (depth_ == 2) {
      items.emplace_back();
      wrapper_keys_ = 0;
    }
    if (depth_ == 4) items.back().error_type.clear();
    ++depth_;
    return true;
  }
  bool end_object() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    if (depth_ == 3 && wrapper_keys_ != 1) return false;
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    if (skipping_ > 0 || (depth_ >= 4) || (depth_ == 1 && answer_key_ != "items")) {
      ++skipping_;
      return true;
    }
    if (depth_ != 1 || items_seen) return false;  // an answer, item or wrapper that is an array
    items_seen = true;
    depth_ = 2;
    return true;
  }
  bool end_array() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    depth_ = 1;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  // A scalar where the answer, an item or a wrapper belongs declines; elsewhere it is ignored.
  bool scalar() const {
    if (skipping_ > 0 || depth_ >= 4) return true;
    return depth_ == 1 && answer_key_ != "items";
  }
  bool integer(std::int64_t value) {
    if (skipping_ > 0 || depth_ != 4) return scalar();
    if (key_ == "status") items.back().status = value;
    if (key_ == "_seq_no") items.back().seq_no = value;
    if (key_ == "_primary_term") items.back().primary_term = value;
    return true;
  }
  void forget(const std::string& name) {
    ItemSeen& item = items.back();
    if (name == "_id") item.id.clear();
    if (name == "status") item.status.reset();
    if (name == "_seq_no") item.seq_no.reset();
    if (name == "_primary_term") item.primary_term.reset();
    if (name == "result") item.result.clear();
    if (name == "error") item.error_type.clear();
  }

  int depth_ = 0;
  int skipping_ = 0;  // containers open inside one that is not read
  int wrapper_keys_ = 0;
  std::string answer_key_;
  std::string key_;  // the item's (depth 4) or its error's (depth 5) member being read
};

std::optional<BulkItemResult> plain_item(ItemSeen& seen) {
  BulkItemResult out;
  out.id = std::move(seen.id);
  if (!seen.status) return std::nullopt;
  const std::int64_t status = *seen.status;
  if (status == 200 || status == 201) {
    if (!seen.seq_no || !seen.primary_term || *seen.seq_no < 0 || *seen.primary_term < 1) return std::nullopt;
    out.status = WriteStatus::kApplied;
    out.version = Version{*seen.seq_no, *seen.primary_term};
  } else if (status == 409 && seen.error_type == "version_conflict_engine_exception") {
    out.status = WriteStatus::kConflict;
  } else if (status == 404 && seen.result == "not_found") {
    out.status = WriteStatus::kNotFound;
  } else {
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<BulkResult> read_plain_bulk_answer(std::string_view body, std::size_t expected_items) {
  PlainBulkReader reader(expected_items);
  if (!json::sax_parse(body, &reader) || !reader.items_seen || reader.items.size() != expected_items)
    return std::nullopt;
  BulkResult out;
  out.items.reserve(expected_items);
  for (ItemSeen& seen : reader.items) {
    std::optional<BulkItemResult> item = plain_item(seen);
    if (!item) return std::nullopt;
    out.items.push_back(std::move(*item));
  }
  return out;
}

}  // namespace eslease::es
