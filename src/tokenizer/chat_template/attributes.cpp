// Interpreter: Jinja's sandboxed attribute (`x.name`) and subscript (`x[key]`) access.
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/methods.h"
#include "tokenizer/chat_template/utf8.h"

namespace sgl::tokenizer::jinja {
namespace {

// Indexing a Markup string yields Markup.
Value same_kind(const Value& s, std::string text) {
  return s.is_markup() ? Value::markup(std::move(text)) : Value(std::move(text));
}

}  // namespace

// NOTE: Python attributes win over dict keys for `x.name` (so `d.items` is the method), while
// `x[key]` tries the key first and falls back to the attribute.
Result<Value> Interpreter::get_attr(const Value& obj, const std::string& name) {
  SGL_RETURN_IF_ERROR(budget_.charge(name.size()));  // hashed (attribute names can be built)
  switch (obj.kind()) {
    case Kind::kUndefined:
      return undefined_error(obj);
    case Kind::kObject: {
      if (const Value* v = obj.object_data().attrs.find(name)) return *v;
      return undefined_attribute(obj, name);
    }
    case Kind::kDict: {
      if (auto m = find_method(obj, name, options_.immutable_sandbox)) return *m;
      if (const Value* v = obj.dict_data().find(name)) return *v;
      return undefined_attribute(obj, name);
    }
    case Kind::kString:
    case Kind::kList:
    case Kind::kTuple:
      if (auto m = find_method(obj, name, options_.immutable_sandbox)) return *m;
      return undefined_attribute(obj, name);
    default:
      return undefined_attribute(obj, name);
  }
}

Result<Value> Interpreter::get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      return undefined_error(obj);
    case Kind::kDict:
      SGL_RETURN_IF_ERROR(budget_.charge_walk(key));  // hashed
      if (const Value* v = obj.dict_data().find(key)) return *v;
      break;
    case Kind::kList:
    case Kind::kTuple:
      if (key.is_integral()) {
        int64_t n = static_cast<int64_t>(obj.items().size());
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) return obj.items()[static_cast<size_t>(i)];
      }
      break;
    case Kind::kString:
      if (key.is_integral()) {
        const std::string& s = obj.as_string();
        SGL_RETURN_IF_ERROR(budget_.charge(s.size()));  // scanned for its characters
        int64_t i = key.as_int();
        if (is_ascii(s)) {
          int64_t n = static_cast<int64_t>(s.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return same_kind(obj, std::string(1, s[static_cast<size_t>(i)]));
        } else {
          std::u32string u = utf8_decode(s);
          int64_t n = static_cast<int64_t>(u.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) {
            std::string one;
            append_utf8(one, u[static_cast<size_t>(i)]);
            return same_kind(obj, std::move(one));
          }
        }
      }
      break;
    case Kind::kObject:
      if (key.is_string()) {
        SGL_RETURN_IF_ERROR(budget_.charge(key.as_string().size()));
        if (const Value* v = obj.object_data().attrs.find(key.as_string())) return *v;
      }
      break;
    default:
      break;
  }
  if (key.is_string() && (obj.is_dict() || obj.is_string() || obj.is_sequence())) {
    if (auto m = find_method(obj, key.as_string(), options_.immutable_sandbox)) return *m;
  }
  return undefined_element(obj, key);
}

}  // namespace sgl::tokenizer::jinja
