// Values of the Jinja engine, with Python's semantics: None, bool, int, float, str (optionally
// markupsafe's Markup), list, tuple, dict (insertion-ordered), Jinja2's Undefined, and objects
// (namespace, loop, macros, bound methods). Lists and dicts are immutable (the sandbox is), so
// they are shared, not copied.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "jinja/budget.h"
#include "jinja/error.h"

namespace k3::jinja {

class Value;
class Renderer;

struct ListData {
    std::vector<Value> items;
    bool is_tuple = false;
    std::string view;  // "dict_items" / "dict_keys" / "dict_values": a dict view, not a list
    int depth = 1;     // containers nested inside, this one included
};

// A Python dict: keys compare with Python's == (1 == 1.0 == True), iteration in insertion order.
struct DictData {
    std::vector<std::pair<Value, Value>> items;
    int depth = 1;  // containers nested inside, this one included (set by Value::dict)
    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    void set(Value key, Value value);  // replaces the value of an existing key in place
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// Jinja2's Undefined: hint is the message an operation on it raises (empty: a plain undefined
// value); error_kind is UndefinedError, or SecurityError for an unsafe attribute.
struct UndefinedData {
    std::string hint;
    std::string error_kind;
};

// Anything that is neither data nor undefined: namespace(), loop, macros, methods, globals.
class Object {
public:
    virtual ~Object() = default;
    virtual std::string type_name() const = 0;  // Python's type(x).__name__
    virtual std::string repr() const;
    virtual Value get_attr(const std::string& name) const;  // a missing attribute is undefined
    virtual bool set_attr(const std::string& name, Value value);  // only a namespace accepts
    virtual bool is_callable() const { return false; }
    virtual Value call(Renderer& renderer, CallArgs& args);
    // Drops the values it holds, breaking reference cycles once rendering is over.
    virtual void release() {}
};

// A Python generator, as Jinja2's map, select, reject, selectattr and rejectattr return one:
// nothing runs until it is first iterated, and then it is exhausted (a second pass sees no
// items). Not a sequence: no len(), no reversed(), no JSON; always true.
class Generator : public Object {
public:
    // `function` is the Python generator function's name, shown by repr().
    Generator(std::string function, std::function<std::vector<Value>()> produce);
    std::string type_name() const override { return "generator"; }
    std::string repr() const override;  // <generator object select_or_reject at 0x...>
    std::vector<Value> consume();       // every item the first time, none after
    void release() override { produce_ = nullptr; }

private:
    std::string function_;
    std::function<std::vector<Value>()> produce_;  // null once consumed
};

class Value {
public:
    enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };

    Value() : data_(std::shared_ptr<const UndefinedData>()) {}
    static Value undefined(std::string hint, std::string error_kind = "UndefinedError");
    static Value none() { Value v; v.data_ = nullptr; return v; }
    Value(bool b) : data_(b) {}
    Value(int64_t i) : data_(i) {}
    Value(int i) : data_(int64_t{i}) {}
    Value(double d) : data_(d) {}
    Value(std::string s, bool markup = false) : data_(std::move(s)), markup_(markup) {}
    Value(const char* s) : data_(std::string(s)) {}
    static Value list(std::vector<Value> items, bool is_tuple = false);
    static Value dict_view(std::vector<Value> items, std::string view, bool is_tuple = false);
    static Value dict(DictData dict);
    static Value object(std::shared_ptr<Object> object);

    Kind kind() const { return static_cast<Kind>(data_.index()); }
    bool is_undefined() const { return kind() == Kind::Undefined; }
    bool is_none() const { return kind() == Kind::None; }
    bool is_bool() const { return kind() == Kind::Bool; }
    bool is_int() const { return kind() == Kind::Int; }
    bool is_float() const { return kind() == Kind::Float; }
    bool is_string() const { return kind() == Kind::String; }
    bool is_list() const { return kind() == Kind::List; }
    bool is_view() const { return is_list() && !as_list().view.empty(); }
    bool is_dict() const { return kind() == Kind::Dict; }
    bool is_object() const { return kind() == Kind::Object; }
    bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python Number
    bool is_integral() const { return is_bool() || is_int(); }                // Python int
    bool is_markup() const { return is_string() && markup_; }

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const;     // int or bool
    double as_double() const;   // any number
    const std::string& as_string() const { return std::get<std::string>(data_); }
    const ListData& as_list() const { return *std::get<std::shared_ptr<const ListData>>(data_); }
    const DictData& as_dict() const { return *std::get<std::shared_ptr<const DictData>>(data_); }
    Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
    template <class T>
    T* object_as() const {
        return is_object() ? dynamic_cast<T*>(&as_object()) : nullptr;
    }
    // What Python's `is` compares for containers and objects (null for scalars).
    const void* identity() const;
    int nesting() const;  // 0 for a scalar

    // The message an operation on this undefined raises, and raising it.
    std::string undefined_hint() const;
    [[noreturn]] void raise_undefined() const;

private:
    std::variant<std::shared_ptr<const UndefinedData>, std::nullptr_t, bool, int64_t, double,
                 std::string, std::shared_ptr<const ListData>, std::shared_ptr<const DictData>,
                 std::shared_ptr<Object>>
        data_;
    bool markup_ = false;
};

// Python's builtins, as Jinja2 reaches them.
std::string to_str(const Value& v);   // str(v); undefined prints empty
std::string to_repr(const Value& v);  // repr(v)
std::string repr_string(std::string_view s);
std::string format_float(double d);   // float.__repr__
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
// a < b (or the operator op among < <= > >=); TypeError for unordered types.
bool compare(const Value& a, const Value& b, std::string_view op);
std::string type_name(const Value& v);         // 'NoneType', 'str', 'dict', ...
std::string object_type_repr(const Value& v);  // Jinja2's "dict object" / "None"
int64_t length(const Value& v);                // len(v); TypeError when it has none
std::vector<Value> iterate(const Value& v);    // list(v): dict keys, str characters
std::string html_escape(std::string_view s);   // markupsafe.escape
Value make_markup_concat(const Value& a, const Value& b);  // a + b where either is Markup

Value from_json(const nlohmann::ordered_json& json);

struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // None, or the indent string per level
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
};
std::string dumps_json(const Value& v, const JsonOptions& options);  // Python json.dumps

}  // namespace k3::jinja
