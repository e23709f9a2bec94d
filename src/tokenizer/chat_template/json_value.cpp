// JSON parsing into values (nlohmann::ordered_json) and Python-compatible JSON dumping.
#include "tokenizer/chat_template/json_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/json_string.h"
#include "core/ordered_json.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

constexpr int kMaxJsonDepth = 512;

Result<Value> from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxJsonDepth) return invalid_argument("JSON input nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) {
        SGL_ASSIGN_OR_RETURN(Value v, from_json(item, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      DictData d;
      for (const auto& [k, item] : j.items()) {
        SGL_ASSIGN_OR_RETURN(Value v, from_json(item, depth + 1));
        d.set(std::string_view(k), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();
  }
}

void append_escaped(std::string& out, const std::string& s, bool ensure_ascii) {
  if (!ensure_ascii) {
    append_json_string(out, s);
    return;
  }
  auto hex4 = [&](unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "\\u%04x", v);
    out += buf;
  };
  out += '"';
  for (char32_t cp : utf8_decode(s)) {
    if (append_json_escape(out, cp)) continue;
    if (cp >= 0x80 && cp < 0x10000) {
      hex4(static_cast<unsigned>(cp));
    } else if (cp >= 0x10000) {
      char32_t v = cp - 0x10000;
      hex4(0xD800 + static_cast<unsigned>(v >> 10));
      hex4(0xDC00 + static_cast<unsigned>(v & 0x3FF));
    } else {
      out += static_cast<char>(cp);  // ASCII, DEL included (as Python's json.dumps)
    }
  }
  out += '"';
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
  }

  Status dump(const Value& v, int depth) {
    if (out_.size() > o_.max_bytes) return output_limit_error(o_.max_bytes, out_.size());
    if (depth > kMaxJsonDepth) return value_error("Circular reference detected");
    switch (v.kind()) {
      case Kind::kNone:
        out_ += "null";
        return Status::ok_status();
      case Kind::kBool:
        out_ += v.as_bool() ? "true" : "false";
        return Status::ok_status();
      case Kind::kInt:
        out_ += std::to_string(v.as_int());
        return Status::ok_status();
      case Kind::kFloat:
        out_ += json_float(v.as_double());
        return Status::ok_status();
      case Kind::kString:
        if (v.as_string().size() > o_.max_bytes - out_.size()) {
          return output_limit_error(o_.max_bytes, out_.size() + v.as_string().size());
        }
        append_escaped(out_, v.as_string(), o_.ensure_ascii);
        return Status::ok_status();
      case Kind::kList:
      case Kind::kTuple:
        return dump_list(v.items(), depth);
      case Kind::kDict:
        return dump_dict(v.dict_data(), depth);
      default:
        return type_error("Object of type " + type_name(v) + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  // Checked before appending: indent strings nested 512 deep multiply fast.
  Status newline(int depth) {
    size_t n = 1 + static_cast<size_t>(depth) * o_.indent->size();
    if (n > o_.max_bytes || out_.size() > o_.max_bytes - n) {
      return output_limit_error(o_.max_bytes, out_.size() + n);
    }
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += *o_.indent;
    return Status::ok_status();
  }

  Status dump_list(const std::vector<Value>& items, int depth) {
    if (items.empty()) {
      out_ += "[]";
      return Status::ok_status();
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += item_sep_;
      if (o_.indent) SGL_RETURN_IF_ERROR(newline(depth + 1));
      SGL_RETURN_IF_ERROR(dump(items[i], depth + 1));
    }
    if (o_.indent) SGL_RETURN_IF_ERROR(newline(depth));
    out_ += ']';
    return Status::ok_status();
  }

  Result<std::string> key_string(const Value& k) {
    switch (k.kind()) {
      case Kind::kString:
        return k.as_string();
      case Kind::kBool:
        return std::string(k.as_bool() ? "true" : "false");
      case Kind::kInt:
        return std::to_string(k.as_int());
      case Kind::kFloat:
        return json_float(k.as_double());
      case Kind::kNone:
        return std::string("null");
      default:
        return type_error("keys must be str, int, float, bool or None, not " + type_name(k));
    }
  }

  Status dump_dict(const DictData& d, int depth) {
    if (d.empty()) {
      out_ += "{}";
      return Status::ok_status();
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries()) entries.push_back(&e);
    if (o_.sort_keys) {
      Status error;
      std::stable_sort(entries.begin(), entries.end(), [&](const auto* a, const auto* b) {
        auto c = py_compare(a->first, b->first);
        if (!c.ok()) {
          if (error.ok()) error = c.status();
          return false;
        }
        return *c < 0;
      });
      SGL_RETURN_IF_ERROR(error);
    }
    out_ += '{';
    bool first = true;
    for (const auto* e : entries) {
      if (!first) out_ += item_sep_;
      first = false;
      if (o_.indent) SGL_RETURN_IF_ERROR(newline(depth + 1));
      SGL_ASSIGN_OR_RETURN(std::string key, key_string(e->first));
      append_escaped(out_, key, o_.ensure_ascii);
      out_ += o_.key_separator;
      SGL_RETURN_IF_ERROR(dump(e->second, depth + 1));
    }
    if (o_.indent) SGL_RETURN_IF_ERROR(newline(depth));
    out_ += '}';
    return Status::ok_status();
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
  std::string out_;
};

}  // namespace

Result<Value> value_from_json(std::string_view json) {
  auto j = parse_ordered_json(json);
  if (!j.ok()) return invalid_argument("invalid JSON input");
  return from_json(*j, 0);
}

Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options) {
  Dumper dumper(options);
  SGL_RETURN_IF_ERROR(dumper.dump(value, 0));
  std::string out = dumper.take();
  if (out.size() > options.max_bytes) return output_limit_error(options.max_bytes, out.size());
  return out;
}

}  // namespace sgl::tokenizer::jinja
