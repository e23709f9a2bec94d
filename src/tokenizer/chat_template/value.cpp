// Value construction, truthiness, equality, hashing and the insertion-ordered dict.
#include "tokenizer/chat_template/value.h"

#include <cmath>
#include <cstdio>

#include "tokenizer/chat_template/value_format.h"

namespace sgl::tokenizer::jinja {
namespace {

// What container destructors nested inside an outer one leave to it (see value.h).
struct ReleaseQueue {
  std::vector<std::vector<Value>> values;
  std::vector<std::vector<std::pair<Value, Value>>> entries;
  std::vector<NativeFunction> functions;
};

// The queue of the outermost container destructor running on this thread, if any.
// NOTE: thread_local, as the last reference can be dropped on any thread; a plain pointer, so
// it is still valid for values destroyed after the thread's other thread_locals.
thread_local ReleaseQueue* draining = nullptr;

// Destroys `held` (moved from) when called from the outermost container destructor on the
// thread, then everything the nested ones queue meanwhile; queues it otherwise.
template <class T>
void release(std::vector<T> ReleaseQueue::*queue, T& held) {
  if (draining != nullptr) {
    (draining->*queue).push_back(std::move(held));
    return;
  }
  ReleaseQueue q;
  draining = &q;
  { T doomed = std::move(held); }
  while (!q.values.empty() || !q.entries.empty() || !q.functions.empty()) {
    if (!q.values.empty()) {
      std::vector<Value> doomed = std::move(q.values.back());
      q.values.pop_back();
    } else if (!q.entries.empty()) {
      std::vector<std::pair<Value, Value>> doomed = std::move(q.entries.back());
      q.entries.pop_back();
    } else {
      NativeFunction doomed = std::move(q.functions.back());
      q.functions.pop_back();
    }
  }
  draining = nullptr;
}

}  // namespace

Callable::~Callable() {
  if (fn) release(&ReleaseQueue::functions, fn);
}

ListData::~ListData() {
  if (!items.empty()) release(&ReleaseQueue::values, items);
}

DictData::~DictData() {
  if (!entries_.empty()) release(&ReleaseQueue::entries, entries_);
}

ObjectData::~ObjectData() {
  if (call) release(&ReleaseQueue::functions, call);
}

Value::Value(std::string s)
    : kind_(Kind::kString), data_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.markup_ = true;
  return v;
}

Value Value::undefined(std::string message) {
  Value v;
  v.data_ = std::make_shared<const std::string>(std::move(message));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kList;
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  v.data_ = std::move(data);
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::iterator(std::string type_name, std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kIterator;
  v.list_data().iter_type = std::move(type_name);
  return v;
}

Value Value::dict(DictData d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.data_ = std::make_shared<DictData>(std::move(d));
  return v;
}

Value Value::dict() { return dict(DictData{}); }

Value Value::object(std::shared_ptr<ObjectData> object) {
  Value v;
  v.kind_ = Kind::kObject;
  v.data_ = std::move(object);
  return v;
}

Value Value::callable(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.data_ = std::make_shared<const Callable>(std::move(name), std::move(fn));
  return v;
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

const std::string& Value::undefined_message() const {
  static const std::string kEmpty;
  if (auto* p = std::get_if<StringPtr>(&data_)) return **p;
  return kEmpty;
}

std::vector<Value>& Value::items() const { return list_data().items; }

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_double() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
    case Kind::kTuple:
      return !items().empty();
    case Kind::kDict:
      return !dict_data().empty();
    case Kind::kIterator:  // a dict view is as true as its dict; a generator always is
      return list_data().iter_type == "generator" || !items().empty();
    case Kind::kObject:
    case Kind::kCallable:
      return true;
  }
  return false;
}

const void* Value::identity() const {
  return std::visit(
      [](const auto& d) -> const void* {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, std::monostate> || std::is_same_v<T, bool> ||
                      std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          return nullptr;
        } else {
          return d.get();
        }
      },
      data_);
}

namespace {

// Python raises RecursionError past ~1000 frames; the walks here stop there too, rather than
// run off the native stack on values a template nested millions deep.
constexpr int kMaxWalkDepth = 1000;

std::optional<std::string> hash_key_at(const Value& v, int depth) {
  if (depth > kMaxWalkDepth) return std::nullopt;
  switch (v.kind()) {
    case Kind::kNone:
      return std::string("N");
    case Kind::kUndefined:
      return std::string("U");
    case Kind::kBool:
    case Kind::kInt:
      return "I" + std::to_string(v.as_int());
    case Kind::kFloat: {
      double d = v.as_double();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
        return "I" + std::to_string(static_cast<int64_t>(d));
      }
      return "F" + float_repr(d);
    }
    case Kind::kString:
      return "S" + v.as_string();
    case Kind::kTuple: {
      std::string key = "T(";
      for (const Value& item : v.items()) {
        auto k = hash_key_at(item, depth + 1);
        if (!k) return std::nullopt;
        key += std::to_string(k->size()) + ":" + *k;
      }
      return key + ")";
    }
    case Kind::kObject:
    case Kind::kCallable:
    case Kind::kIterator: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "P%p", v.identity());
      return std::string(buf);
    }
    case Kind::kList:
    case Kind::kDict:
      return std::nullopt;
  }
  return std::nullopt;
}

enum class Equality { kEqual, kUnequal, kTooDeep };

Equality equal_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxWalkDepth) return Equality::kTooDeep;
  auto of = [](bool equal) { return equal ? Equality::kEqual : Equality::kUnequal; };
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return of(a.as_double() == b.as_double());
    return of(a.as_int() == b.as_int());
  }
  if (a.kind() != b.kind()) return Equality::kUnequal;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return Equality::kEqual;
    case Kind::kString:
      return of(a.as_string() == b.as_string());
    case Kind::kList:
    case Kind::kTuple: {
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return Equality::kUnequal;
      for (size_t i = 0; i < x.size(); ++i) {
        Equality e = equal_at(x[i], y[i], depth + 1);
        if (e != Equality::kEqual) return e;
      }
      return Equality::kEqual;
    }
    case Kind::kDict: {
      const DictData& x = a.dict_data();
      const DictData& y = b.dict_data();
      if (x.size() != y.size()) return Equality::kUnequal;
      for (const auto& [k, val] : x.entries()) {
        const Value* other = y.find(k);
        if (other == nullptr) return Equality::kUnequal;
        Equality e = equal_at(val, *other, depth + 1);
        if (e != Equality::kEqual) return e;
      }
      return Equality::kEqual;
    }
    default:
      return of(a.identity() == b.identity());
  }
}

}  // namespace

std::optional<std::string> hash_key(const Value& v) { return hash_key_at(v, 0); }

bool py_equal(const Value& a, const Value& b) { return equal_at(a, b, 0) == Equality::kEqual; }

Result<bool> py_equal_checked(const Value& a, const Value& b) {
  Equality e = equal_at(a, b, 0);
  if (e == Equality::kTooDeep) {
    return invalid_argument("RecursionError: maximum recursion depth exceeded in comparison");
  }
  return e == Equality::kEqual;
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return v.is_markup() ? "Markup" : "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kIterator:
      return v.list_data().iter_type;
    case Kind::kObject: {
      const std::string& full = v.object_data().type_name;
      size_t dot = full.rfind('.');
      return dot == std::string::npos ? full : full.substr(dot + 1);
    }
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_object()) return v.object_data().type_name + " object";
  if (v.is_callable()) return "function object";
  return type_name(v) + " object";
}

Value make_namespace(DictData attrs) {
  auto obj = std::make_shared<ObjectData>();
  obj->type_name = "jinja2.utils.Namespace";
  obj->attrs = std::move(attrs);
  obj->assignable = true;
  return Value::object(std::move(obj));
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  auto k = hash_key(key);
  if (!k) return nullptr;
  auto it = index_.find(*k);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Value* DictData::find(std::string_view key) const {
  std::string k;
  k.reserve(key.size() + 1);
  k.push_back('S');
  k.append(key);
  auto it = index_.find(k);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

bool DictData::set(const Value& key, Value value) {
  auto k = hash_key(key);
  if (!k) return false;
  auto [it, inserted] = index_.emplace(std::move(*k), entries_.size());
  if (inserted) {
    entries_.emplace_back(key, std::move(value));
  } else {
    entries_[it->second].second = std::move(value);
  }
  return true;
}

void DictData::set(std::string_view key, Value value) { set(Value(key), std::move(value)); }

bool DictData::erase(const Value& key) {
  auto k = hash_key(key);
  if (!k) return false;
  auto it = index_.find(*k);
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(*hash_key(entries_[i].first), i);
  return true;
}

void DictData::clear() {
  entries_.clear();
  index_.clear();
}

}  // namespace sgl::tokenizer::jinja
