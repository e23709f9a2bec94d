// Value: the dynamically typed runtime value of the Jinja interpreter (a Python object subset).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/status.h"

namespace sgl::tokenizer::jinja {

class Interpreter;
class Value;
struct CallArgs;
struct ListData;
class DictData;
struct ObjectData;
struct Callable;

// Native functions receive the interpreter (to call back into filters, tests and macros).
using NativeFunction = std::function<Result<Value>(Interpreter& interp, const CallArgs& args)>;

enum class Kind {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kIterator,  // single-pass: generators and dict views
  kObject,    // attribute bags: namespace(), loop, cycler, joiner
  kCallable,  // macros, globals, bound methods
};

// NOTE: lists, dicts and objects have reference semantics like Python: copies of a Value share
// the container, so `ns.items` mutated through one copy is visible through all.
class Value {
 public:
  Value() = default;                                                   // undefined
  Value(bool b) : kind_(Kind::kBool), data_(b) {}                      // NOLINT
  Value(int i) : kind_(Kind::kInt), data_(static_cast<int64_t>(i)) {}  // NOLINT
  Value(int64_t i) : kind_(Kind::kInt), data_(i) {}                    // NOLINT
  Value(double d) : kind_(Kind::kFloat), data_(d) {}                   // NOLINT
  Value(std::string s);                                                // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}                 // NOLINT
  Value(const char* s) : Value(std::string(s)) {}                      // NOLINT

  // markupsafe.Markup (from `|safe`, `|escape`): a string that escapes plain strings it is
  // combined with (`markup + str`, `markup.join(...)`, `markup.format(...)`).
  static Value markup(std::string s);
  // `message` is what misusing the value raises (e.g. "'x' is undefined").
  static Value undefined(std::string message);
  static Value none();
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  static Value iterator(std::string type_name, std::vector<Value> items);
  static Value dict(DictData d);
  static Value dict();
  static Value object(std::shared_ptr<ObjectData> object);
  static Value callable(std::string name, NativeFunction fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return kind_ == Kind::kString && markup_; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_iterator() const { return kind_ == Kind::kIterator; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  // Python numbers: bool, int, float.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  // Python int (bool included, as bool subclasses int).
  bool is_integral() const { return is_bool() || is_int(); }
  // list or tuple: indexable, sized sequences of values.
  bool is_sequence() const { return is_list() || is_tuple(); }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;    // int or bool
  double as_double() const;  // any number
  const std::string& as_string() const { return *std::get<StringPtr>(data_); }
  const std::string& undefined_message() const;
  ListData& list_data() const { return *std::get<std::shared_ptr<ListData>>(data_); }
  std::vector<Value>& items() const;  // list, tuple, iterator
  DictData& dict_data() const { return *std::get<std::shared_ptr<DictData>>(data_); }
  ObjectData& object_data() const { return *std::get<std::shared_ptr<ObjectData>>(data_); }
  const Callable& callable_data() const {
    return *std::get<std::shared_ptr<const Callable>>(data_);
  }

  // Python truthiness (undefined is false).
  bool truthy() const;
  // Address of the shared payload (Python `is` for containers); nullptr for scalars.
  const void* identity() const;

 private:
  using StringPtr = std::shared_ptr<const std::string>;
  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  std::variant<std::monostate, bool, int64_t, double, StringPtr, std::shared_ptr<ListData>,
               std::shared_ptr<DictData>, std::shared_ptr<ObjectData>,
               std::shared_ptr<const Callable>>
      data_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// NOTE: the destructors of Callable, ListData, DictData and ObjectData hand what they hold to
// a per-thread queue while an outer destructor on the thread is draining it (value.cpp): a
// template can nest values millions deep ({% set ns.a = [ns.a] %} in a loop, or joiners in
// joiners), and destroying them recursively would overflow the native stack.
struct Callable {
  Callable(std::string name_in, NativeFunction fn_in)
      : name(std::move(name_in)), fn(std::move(fn_in)) {}
  Callable(const Callable&) = default;
  Callable& operator=(const Callable&) = default;
  ~Callable();

  std::string name;
  NativeFunction fn;
};

struct ListData {
  ListData() = default;
  ListData(const ListData&) = default;
  ListData& operator=(const ListData&) = default;
  ~ListData();

  std::vector<Value> items;
  std::string iter_type;  // iterators only: Python type name ("generator", "dict_items", ...)
};

// Insertion-ordered dict with Python key semantics (1 == 1.0 == True).
class DictData {
 public:
  DictData() = default;
  DictData(const DictData&) = default;
  DictData(DictData&&) = default;
  DictData& operator=(const DictData&) = default;
  DictData& operator=(DictData&&) = default;
  ~DictData();

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  // nullptr when missing or unhashable.
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  const Value* find(const std::string& key) const { return find(std::string_view(key)); }
  const Value* find(const char* key) const { return find(std::string_view(key)); }
  // Inserts or replaces; false when the key is unhashable.
  bool set(const Value& key, Value value);
  void set(std::string_view key, Value value);
  void set(const std::string& key, Value value) { set(std::string_view(key), std::move(value)); }
  void set(const char* key, Value value) { set(std::string_view(key), std::move(value)); }
  bool erase(const Value& key);
  void clear();

 private:
  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;
};

struct ObjectData {
  ObjectData() = default;
  ObjectData(const ObjectData&) = default;
  ObjectData& operator=(const ObjectData&) = default;
  ~ObjectData();

  std::string type_name;  // Python qualified type, e.g. "jinja2.utils.Namespace"
  DictData attrs;
  bool assignable = false;  // namespace(): `{% set ns.x = ... %}` is allowed
  NativeFunction call;      // callable objects (recursive loop(), joiner)
};

// Hash identity of a dict key (Python hash/eq classes); nullopt for unhashable values.
std::optional<std::string> hash_key(const Value& v);
// Python ==. Values nested past Python's recursion limit compare unequal here; the `==`
// operator uses py_equal_checked, which raises RecursionError as Python does.
bool py_equal(const Value& a, const Value& b);
Result<bool> py_equal_checked(const Value& a, const Value& b);
// Python type name as in error messages: 'NoneType', 'int', 'str', 'dict', 'Namespace', ...
std::string type_name(const Value& v);
// Jinja's object_type_repr: "None", "dict object", "jinja2.utils.Namespace object".
std::string object_type_repr(const Value& v);
// Creates a namespace() object.
Value make_namespace(DictData attrs);

}  // namespace sgl::tokenizer::jinja
