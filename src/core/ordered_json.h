// JSON text parsed into nlohmann::ordered_json (objects keep their keys' order) in O(n log k)
// time. nlohmann's own parser inserts each key with a linear search of the object's keys, so a
// request body of one object of a million keys would take hours; this builder indexes each
// object's keys while it is built. A repeated key keeps its first place and its last value, as
// nlohmann's parser does; errors are nlohmann's messages. Nesting deeper than a limit is an error
// (the values are walked recursively afterwards: dumped, copied, converted).
// Header-only: include it only where nlohmann_json is linked.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace sgl {

namespace ordered_json_detail {

class Builder final : public nlohmann::json_sax<nlohmann::ordered_json> {
 public:
  using json = nlohmann::ordered_json;

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t& /*v*/) override { return false; }  // not in JSON text
  explicit Builder(size_t max_depth) : max_depth_(max_depth) {}

  bool start_object(std::size_t /*n*/) override { return open(json::object()); }
  bool key(string_t& k) override {
    stack_.back().key = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*n*/) override { return open(json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }

  json& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    json value;
    // An object's keys and their places (a sorted map: no hash an input could flood).
    std::map<std::string, size_t, std::less<>> index;
    std::string key;  // the key of the value being read
  };

  bool open(json container) {
    if (stack_.size() >= max_depth_) {
      error_ = "JSON nested too deeply (deeper than " + std::to_string(max_depth_) + ")";
      return false;
    }
    stack_.push_back({std::move(container), {}, {}});
    return true;
  }
  bool close() {
    json done = std::move(stack_.back().value);
    stack_.pop_back();
    return put(std::move(done));
  }
  bool put(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return true;
    }
    Frame& f = stack_.back();
    if (f.value.is_array()) {
      f.value.get_ref<json::array_t&>().push_back(std::move(v));
      return true;
    }
    auto& object = f.value.get_ref<json::object_t&>();
    const auto [place, fresh] = f.index.try_emplace(f.key, object.size());
    if (fresh) {
      // Appended without ordered_map's search: the index has just said the key is new.
      static_cast<json::object_t::Container&>(object).emplace_back(std::move(f.key), std::move(v));
    } else {
      (object.begin() + static_cast<std::ptrdiff_t>(place->second))->second = std::move(v);
    }
    return true;
  }

  size_t max_depth_;
  json root_;
  std::vector<Frame> stack_;
  std::string error_;
};

}  // namespace ordered_json_detail

inline constexpr size_t kMaxOrderedJsonDepth = 128;

// `text` as one JSON value; kInvalidArgument with nlohmann's message when it is not JSON, or
// when it nests deeper than `max_depth`.
inline Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text,
                                                         size_t max_depth = kMaxOrderedJsonDepth) {
  ordered_json_detail::Builder builder(max_depth);
  if (!nlohmann::ordered_json::sax_parse(text, &builder)) {
    return invalid_argument(builder.error());
  }
  return std::move(builder.root());
}

}  // namespace sgl
