// Sandboxed attribute and item access, and the Python methods of str, dict, list and tuple
// that templates call (jinja2.sandbox.ImmutableSandboxedEnvironment: mutating methods of list
// and dict are unsafe).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "jinja/builtins.h"
#include "jinja/strings.h"

namespace k3::jinja {

std::optional<Value> argument(const CallArgs& args, size_t index, const char* name) {
    if (index < args.positional.size()) return args.positional[index];
    for (const auto& [key, value] : args.keyword)
        if (key == name) return value;
    return std::nullopt;
}

Value argument_or(const CallArgs& args, size_t index, const char* name, Value fallback) {
    std::optional<Value> v = argument(args, index, name);
    return v ? *v : fallback;
}

void check_arguments(const char* function, const CallArgs& args, size_t max_positional,
                     std::initializer_list<const char*> names) {
    if (args.positional.size() > max_positional)
        type_error(std::string(function) + "() takes at most " + std::to_string(max_positional) + " argument(s) (" +
                   std::to_string(args.positional.size()) + " given)");
    for (const auto& [key, value] : args.keyword) {
        bool known = false;
        size_t position = 0;
        for (const char* n : names) {
            if (key == n) {
                known = true;
                if (position < args.positional.size())
                    type_error(std::string(function) + "() got multiple values for argument '" + key + "'");
            }
            ++position;
        }
        if (!known) type_error(std::string(function) + "() got an unexpected keyword argument '" + key + "'");
    }
}

namespace {

using MethodFn = Value (*)(const Value& self, const CallArgs& args);

class BoundMethod : public Object {
public:
    BoundMethod(Value self, std::string name, MethodFn fn) : self_(std::move(self)), name_(std::move(name)), fn_(fn) {}
    std::string type_name() const override { return "builtin_function_or_method"; }
    std::string repr() const override { return "<built-in method " + name_ + " of " + jinja::type_name(self_) + " object>"; }
    bool is_callable() const override { return true; }
    Value call(Renderer&, CallArgs& args) override { return fn_(self_, args); }

private:
    Value self_;
    std::string name_;
    MethodFn fn_;
};

const std::string& self_str(const Value& self) { return self.as_string(); }

std::optional<std::string> optional_string(const CallArgs& args, size_t index, const char* name, const char* method) {
    std::optional<Value> v = argument(args, index, name);
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_string()) type_error(std::string(method) + " arg must be None or str");
    return v->as_string();
}

std::string required_string(const CallArgs& args, size_t index, const char* name, const char* method) {
    std::optional<Value> v = argument(args, index, name);
    if (!v) type_error(std::string(method) + "() takes at least " + std::to_string(index + 1) + " argument(s) (" +
                       std::to_string(args.positional.size()) + " given)");
    if (!v->is_string()) type_error("must be str, not " + type_name(*v));
    return v->as_string();
}

int64_t optional_int(const CallArgs& args, size_t index, const char* name, int64_t fallback) {
    std::optional<Value> v = argument(args, index, name);
    if (!v || v->is_none()) return fallback;
    if (!v->is_integral()) type_error(std::string("'") + type_name(*v) + "' object cannot be interpreted as an integer");
    return v->as_int();
}

Value string_list(std::vector<std::string> parts) {
    std::vector<Value> items;
    items.reserve(parts.size());
    for (auto& p : parts) items.emplace_back(std::move(p));
    return Value::list(std::move(items));
}

Value str_strip(const Value& self, const CallArgs& args, bool left, bool right) {
    return Value(py_strip(self_str(self), optional_string(args, 0, "chars", "strip"), left, right));
}

Value str_split(const Value& self, const CallArgs& args, bool from_right) {
    const std::optional<std::string> sep = optional_string(args, 0, "sep", "split");
    if (sep && sep->empty()) raise("ValueError", "empty separator");
    return string_list(py_split(self_str(self), sep, optional_int(args, 1, "maxsplit", -1), from_right));
}

// str.startswith / endswith with a str or a tuple of str.
Value str_affix(const Value& self, const CallArgs& args, bool prefix) {
    std::optional<Value> v = argument(args, 0, "prefix");
    if (!v) type_error(std::string(prefix ? "startswith" : "endswith") + "() takes at least 1 argument (0 given)");
    std::u32string text = utf8_decode(self_str(self));
    const int64_t n = static_cast<int64_t>(text.size());
    auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
    const int64_t start = clamp(optional_int(args, 1, "start", 0));
    const int64_t end = clamp(optional_int(args, 2, "end", n));
    if (start > end) return Value(false);
    const std::string window = utf8_encode(std::u32string_view(text).substr(start, end - start));
    auto test = [&](const Value& affix) {
        if (!affix.is_string())
            type_error(std::string(prefix ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " + type_name(affix));
        const std::string& a = affix.as_string();
        if (a.size() > window.size()) return false;
        return prefix ? window.compare(0, a.size(), a) == 0 : window.compare(window.size() - a.size(), a.size(), a) == 0;
    };
    if (v->is_list() && v->as_list().is_tuple) {
        for (const Value& a : v->as_list().items)
            if (test(a)) return Value(true);
        return Value(false);
    }
    return Value(test(*v));
}

Value str_find(const Value& self, const CallArgs& args, bool from_right, bool raise_missing) {
    const std::string sub = required_string(args, 0, "sub", from_right ? "rfind" : "find");
    const std::string& s = self_str(self);
    const size_t hit = from_right ? s.rfind(sub) : s.find(sub);
    if (hit == std::string::npos) {
        if (raise_missing) raise("ValueError", "substring not found");
        return Value(int64_t{-1});
    }
    return Value(utf8_length(std::string_view(s).substr(0, hit)));
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
    const std::u32string t = utf8_decode(s);
    if (t.empty()) return false;
    return std::all_of(t.begin(), t.end(), pred);
}

Value str_justify(const Value& self, const CallArgs& args, char how) {
    const int64_t width = optional_int(args, 0, "width", 0);
    const std::string fill = argument_or(args, 1, "fillchar", Value(" ")).as_string();
    std::u32string text = utf8_decode(self_str(self));
    const int64_t n = static_cast<int64_t>(text.size());
    if (width <= n) return Value(self_str(self));
    const size_t total = static_cast<size_t>(width - n);
    size_t left = how == '<' ? 0 : (how == '>' ? total : total / 2 + (total & static_cast<size_t>(width) & 1));
    std::string out;
    for (size_t i = 0; i < left; ++i) out += fill;
    out += self_str(self);
    for (size_t i = left; i < total; ++i) out += fill;
    return Value(out);
}

Value str_join(const Value& self, const CallArgs& args) {
    std::optional<Value> iterable = argument(args, 0, "iterable");
    if (!iterable) type_error("str.join() takes exactly one argument (0 given)");
    std::string out;
    size_t index = 0;
    for (const Value& item : iterate(*iterable)) {
        if (!item.is_string())
            type_error("sequence item " + std::to_string(index) + ": expected str instance, " + type_name(item) + " found");
        if (index++) out += self_str(self);
        out += item.as_string();
    }
    return Value(out);
}

Value str_splitlines(const Value& self, const CallArgs& args) {
    const bool keepends = truthy(argument_or(args, 0, "keepends", Value(false)));
    std::vector<std::string> lines;
    std::u32string text = utf8_decode(self_str(self));
    std::u32string line;
    for (size_t i = 0; i < text.size(); ++i) {
        const char32_t c = text[i];
        const bool is_break = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
                              c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!is_break) {
            line.push_back(c);
            continue;
        }
        if (keepends) line.push_back(c);
        if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
            if (keepends) line.push_back('\n');
            ++i;
        }
        lines.push_back(utf8_encode(line));
        line.clear();
    }
    if (!line.empty()) lines.push_back(utf8_encode(line));
    return string_list(std::move(lines));
}

Value str_partition(const Value& self, const CallArgs& args, bool from_right) {
    const std::string sep = required_string(args, 0, "sep", "partition");
    if (sep.empty()) raise("ValueError", "empty separator");
    const std::string& s = self_str(self);
    const size_t hit = from_right ? s.rfind(sep) : s.find(sep);
    if (hit == std::string::npos)
        return from_right ? Value::list({Value(""), Value(""), Value(s)}, true) : Value::list({Value(s), Value(""), Value("")}, true);
    return Value::list({Value(s.substr(0, hit)), Value(sep), Value(s.substr(hit + sep.size()))}, true);
}

const std::unordered_map<std::string, MethodFn>& str_methods() {
    static const std::unordered_map<std::string, MethodFn> methods = {
        {"strip", [](const Value& s, const CallArgs& a) { return str_strip(s, a, true, true); }},
        {"lstrip", [](const Value& s, const CallArgs& a) { return str_strip(s, a, true, false); }},
        {"rstrip", [](const Value& s, const CallArgs& a) { return str_strip(s, a, false, true); }},
        {"split", [](const Value& s, const CallArgs& a) { return str_split(s, a, false); }},
        {"rsplit", [](const Value& s, const CallArgs& a) { return str_split(s, a, true); }},
        {"splitlines", str_splitlines},
        {"startswith", [](const Value& s, const CallArgs& a) { return str_affix(s, a, true); }},
        {"endswith", [](const Value& s, const CallArgs& a) { return str_affix(s, a, false); }},
        {"replace", [](const Value& s, const CallArgs& a) {
             return Value(py_replace(self_str(s), required_string(a, 0, "old", "replace"),
                                     required_string(a, 1, "new", "replace"), optional_int(a, 2, "count", -1)));
         }},
        {"upper", [](const Value& s, const CallArgs&) { return Value(py_upper(self_str(s))); }},
        {"lower", [](const Value& s, const CallArgs&) { return Value(py_lower(self_str(s))); }},
        {"title", [](const Value& s, const CallArgs&) { return Value(py_title(self_str(s))); }},
        {"capitalize", [](const Value& s, const CallArgs&) { return Value(py_capitalize(self_str(s))); }},
        {"find", [](const Value& s, const CallArgs& a) { return str_find(s, a, false, false); }},
        {"rfind", [](const Value& s, const CallArgs& a) { return str_find(s, a, true, false); }},
        {"index", [](const Value& s, const CallArgs& a) { return str_find(s, a, false, true); }},
        {"rindex", [](const Value& s, const CallArgs& a) { return str_find(s, a, true, true); }},
        {"count", [](const Value& s, const CallArgs& a) {
             return Value(py_count(self_str(s), required_string(a, 0, "sub", "count")));
         }},
        {"join", str_join},
        {"format", [](const Value& s, const CallArgs& a) { return Value(brace_format(self_str(s), a)); }},
        {"isdigit", [](const Value& s, const CallArgs&) {
             return Value(all_chars(self_str(s), [](char32_t c) { return c >= '0' && c <= '9'; }));
         }},
        {"isnumeric", [](const Value& s, const CallArgs&) {
             return Value(all_chars(self_str(s), [](char32_t c) { return c >= '0' && c <= '9'; }));
         }},
        {"isdecimal", [](const Value& s, const CallArgs&) {
             return Value(all_chars(self_str(s), [](char32_t c) { return c >= '0' && c <= '9'; }));
         }},
        {"isalpha", [](const Value& s, const CallArgs&) {
             return Value(all_chars(self_str(s), [](char32_t c) { return py_upper(utf8_encode(std::u32string(1, c))) != py_lower(utf8_encode(std::u32string(1, c))) || c > 0x2E80; }));
         }},
        {"isalnum", [](const Value& s, const CallArgs&) {
             return Value(all_chars(self_str(s), [](char32_t c) { return (c >= '0' && c <= '9') || py_upper(utf8_encode(std::u32string(1, c))) != py_lower(utf8_encode(std::u32string(1, c))) || c > 0x2E80; }));
         }},
        {"isspace", [](const Value& s, const CallArgs&) { return Value(all_chars(self_str(s), py_isspace)); }},
        {"isupper", [](const Value& s, const CallArgs&) {
             const std::string& t = self_str(s);
             return Value(py_upper(t) == t && py_lower(t) != t);
         }},
        {"islower", [](const Value& s, const CallArgs&) {
             const std::string& t = self_str(s);
             return Value(py_lower(t) == t && py_upper(t) != t);
         }},
        {"center", [](const Value& s, const CallArgs& a) { return str_justify(s, a, '^'); }},
        {"ljust", [](const Value& s, const CallArgs& a) { return str_justify(s, a, '<'); }},
        {"rjust", [](const Value& s, const CallArgs& a) { return str_justify(s, a, '>'); }},
        {"zfill", [](const Value& s, const CallArgs& a) {
             const std::string& t = self_str(s);
             const int64_t width = optional_int(a, 0, "width", 0);
             const int64_t n = utf8_length(t);
             if (width <= n) return Value(t);
             const size_t sign = !t.empty() && (t[0] == '-' || t[0] == '+') ? 1 : 0;
             return Value(t.substr(0, sign) + std::string(static_cast<size_t>(width - n), '0') + t.substr(sign));
         }},
        {"removeprefix", [](const Value& s, const CallArgs& a) {
             const std::string& t = self_str(s);
             const std::string p = required_string(a, 0, "prefix", "removeprefix");
             return Value(t.compare(0, p.size(), p) == 0 ? t.substr(p.size()) : t);
         }},
        {"removesuffix", [](const Value& s, const CallArgs& a) {
             const std::string& t = self_str(s);
             const std::string p = required_string(a, 0, "suffix", "removesuffix");
             const bool has = !p.empty() && t.size() >= p.size() && t.compare(t.size() - p.size(), p.size(), p) == 0;
             return Value(has ? t.substr(0, t.size() - p.size()) : t);
         }},
        {"partition", [](const Value& s, const CallArgs& a) { return str_partition(s, a, false); }},
        {"rpartition", [](const Value& s, const CallArgs& a) { return str_partition(s, a, true); }},
    };
    return methods;
}

Value dict_items(const Value& self, const CallArgs&) {
    std::vector<Value> pairs;
    for (const auto& [k, v] : self.as_dict().items) pairs.push_back(Value::list({k, v}, true));
    return Value::dict_view(std::move(pairs), "dict_items");
}

const std::unordered_map<std::string, MethodFn>& dict_methods() {
    static const std::unordered_map<std::string, MethodFn> methods = {
        {"get", [](const Value& self, const CallArgs& a) {
             std::optional<Value> key = argument(a, 0, "key");
             if (!key) type_error("get expected at least 1 argument, got 0");
             const Value* found = self.as_dict().find(*key);
             return found ? *found : argument_or(a, 1, "default", Value::none());
         }},
        {"items", dict_items},
        {"keys", [](const Value& self, const CallArgs&) { return Value::dict_view(iterate(self), "dict_keys"); }},
        {"values", [](const Value& self, const CallArgs&) {
             std::vector<Value> values;
             for (const auto& item : self.as_dict().items) values.push_back(item.second);
             return Value::dict_view(std::move(values), "dict_values");
         }},
        {"copy", [](const Value& self, const CallArgs&) { return self; }},
    };
    return methods;
}

const std::unordered_map<std::string, MethodFn>& list_methods() {
    static const std::unordered_map<std::string, MethodFn> methods = {
        {"index", [](const Value& self, const CallArgs& a) {
             std::optional<Value> x = argument(a, 0, "value");
             const auto& items = self.as_list().items;
             for (size_t i = 0; x && i < items.size(); ++i)
                 if (equals(items[i], *x)) return Value(static_cast<int64_t>(i));
             raise("ValueError", (x ? to_repr(*x) : std::string("value")) + " is not in list");
         }},
        {"count", [](const Value& self, const CallArgs& a) {
             std::optional<Value> x = argument(a, 0, "value");
             int64_t n = 0;
             for (const Value& item : self.as_list().items) n += x && equals(item, *x);
             return Value(n);
         }},
        {"copy", [](const Value& self, const CallArgs&) { return self; }},
    };
    return methods;
}

const std::unordered_set<std::string> kUnsafeListMethods = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
const std::unordered_set<std::string> kUnsafeDictMethods = {"clear", "pop", "popitem", "setdefault", "update"};

Value method_or_missing(const Value& object, const std::string& name,
                        const std::unordered_map<std::string, MethodFn>& methods) {
    auto it = methods.find(name);
    if (it != methods.end()) return Value::object(std::make_shared<BoundMethod>(object, name, it->second));
    return Value::undefined(std::string("'") + object_type_repr(object) + "' has no attribute '" + name + "'");
}

Value unsafe(const Value& object, const std::string& name) {
    return Value::undefined("access to attribute '" + name + "' of '" + type_name(object) + "' object is unsafe.",
                            "SecurityError");
}

Value missing_element(const Value& object, const Value& key) {
    return Value::undefined(object_type_repr(object) + " has no element " + to_repr(key));
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name, bool with_items) {
    switch (object.kind()) {
        case Value::Kind::Undefined: object.raise_undefined();
        case Value::Kind::String: return method_or_missing(object, name, str_methods());
        case Value::Kind::List:
            if (object.is_view()) return method_or_missing(object, name, {});
            if (!object.as_list().is_tuple && kUnsafeListMethods.count(name)) return unsafe(object, name);
            return method_or_missing(object, name, list_methods());
        case Value::Kind::Dict: {
            if (dict_methods().count(name)) return method_or_missing(object, name, dict_methods());
            if (kUnsafeDictMethods.count(name)) return unsafe(object, name);
            const Value* v = with_items ? object.as_dict().find(std::string_view(name)) : nullptr;
            return v ? *v : Value::undefined("'dict object' has no attribute '" + name + "'");
        }
        case Value::Kind::Object: return object.as_object().get_attr(name);
        default: return Value::undefined(std::string("'") + object_type_repr(object) + "' has no attribute '" + name + "'");
    }
}

Value get_item(const Value& object, const Value& key) {
    switch (object.kind()) {
        case Value::Kind::Undefined: object.raise_undefined();
        case Value::Kind::String:
        case Value::Kind::List: {
            if (object.is_view()) return missing_element(object, key);
            if (key.is_integral()) {
                int64_t i = key.as_int();
                if (object.is_list()) {
                    const auto& items = object.as_list().items;
                    const auto n = static_cast<int64_t>(items.size());
                    if (i < 0) i += n;
                    return i >= 0 && i < n ? items[static_cast<size_t>(i)] : missing_element(object, key);
                }
                const std::u32string text = utf8_decode(object.as_string());
                const auto n = static_cast<int64_t>(text.size());
                if (i < 0) i += n;
                if (i < 0 || i >= n) return missing_element(object, key);
                std::string c;
                append_utf8(c, text[static_cast<size_t>(i)]);
                return Value(c, object.is_markup());
            }
            if (key.is_string()) return get_attribute(object, key.as_string());
            return missing_element(object, key);
        }
        case Value::Kind::Dict: {
            if (!key.is_dict() && !(key.is_list() && !key.as_list().is_tuple))
                if (const Value* v = object.as_dict().find(key)) return *v;
            if (key.is_string()) return get_attribute(object, key.as_string());
            return missing_element(object, key);
        }
        case Value::Kind::Object:
            if (key.is_string()) return object.as_object().get_attr(key.as_string());
            return missing_element(object, key);
        default:
            if (key.is_string()) return get_attribute(object, key.as_string());
            return missing_element(object, key);
    }
}

}  // namespace k3::jinja
