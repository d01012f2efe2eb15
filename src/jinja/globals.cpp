// Jinja2's tests (tests.py) and global functions, plus transformers' raise_exception and
// strftime_now.
#include <cmath>
#include <functional>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/render.h"
#include "jinja/strings.h"

namespace k3::jinja {
namespace {

// ---- tests ----

Value test_operand(CallArgs& args, const char* test) {
    std::optional<Value> v = argument(args, 0, "other");
    if (!v) type_error(std::string(test) + "() missing 1 required positional argument");
    return *v;
}

double modulo_operand(const Value& v) {
    if (v.is_undefined()) v.raise_undefined();
    if (!v.is_number()) type_error("unsupported operand type(s) for %: '" + type_name(v) + "' and 'int'");
    return v.as_double();
}

bool same_object(const Value& a, const Value& b) {
    if (a.kind() != b.kind()) return false;
    if (a.identity()) return a.identity() == b.identity();
    if (a.is_none() || a.is_bool() || a.is_int() || a.is_undefined()) return equals(a, b);
    return false;
}

const std::unordered_map<std::string, TestFn>& tests() {
    static const std::unordered_map<std::string, TestFn> table = {
        {"boolean", [](Renderer&, const Value& v, CallArgs&) { return v.is_bool(); }},
        {"callable", [](Renderer&, const Value& v, CallArgs&) {
             return v.is_undefined() || (v.is_object() && v.as_object().is_callable());
         }},
        {"defined", [](Renderer&, const Value& v, CallArgs&) { return !v.is_undefined(); }},
        {"undefined", [](Renderer&, const Value& v, CallArgs&) { return v.is_undefined(); }},
        {"divisibleby", [](Renderer&, const Value& v, CallArgs& a) {
             const double d = modulo_operand(test_operand(a, "divisibleby"));
             if (d == 0) raise("ZeroDivisionError", "integer modulo by zero");
             return std::fmod(modulo_operand(v), d) == 0;
         }},
        {"escaped", [](Renderer&, const Value& v, CallArgs&) { return v.is_markup(); }},
        {"even", [](Renderer&, const Value& v, CallArgs&) { return std::fmod(modulo_operand(v), 2) == 0; }},
        {"odd", [](Renderer&, const Value& v, CallArgs&) { return std::fabs(std::fmod(modulo_operand(v), 2)) == 1; }},
        {"false", [](Renderer&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }},
        {"true", [](Renderer&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }},
        {"filter", [](Renderer&, const Value& v, CallArgs&) { return v.is_string() && find_filter(v.as_string()); }},
        {"test", [](Renderer&, const Value& v, CallArgs&) { return v.is_string() && find_test(v.as_string()); }},
        {"float", [](Renderer&, const Value& v, CallArgs&) { return v.is_float(); }},
        {"integer", [](Renderer&, const Value& v, CallArgs&) { return v.is_int(); }},
        {"number", [](Renderer&, const Value& v, CallArgs&) { return v.is_number(); }},
        {"string", [](Renderer&, const Value& v, CallArgs&) { return v.is_string(); }},
        {"mapping", [](Renderer&, const Value& v, CallArgs&) { return v.is_dict(); }},
        {"none", [](Renderer&, const Value& v, CallArgs&) { return v.is_none(); }},
        // Python: iter(x) succeeds / x has len() and __getitem__ (Undefined has both).
        {"iterable", [](Renderer&, const Value& v, CallArgs&) {
             return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
         }},
        {"sequence", [](Renderer&, const Value& v, CallArgs&) {
             return v.is_undefined() || v.is_string() || (v.is_list() && !v.is_view()) || v.is_dict();
         }},
        {"lower", [](Renderer&, const Value& v, CallArgs&) {
             const std::string s = to_str(v);
             return py_lower(s) == s && py_upper(s) != s;
         }},
        {"upper", [](Renderer&, const Value& v, CallArgs&) {
             const std::string s = to_str(v);
             return py_upper(s) == s && py_lower(s) != s;
         }},
        {"sameas", [](Renderer&, const Value& v, CallArgs& a) { return same_object(v, test_operand(a, "sameas")); }},
        {"in", [](Renderer&, const Value& v, CallArgs& a) { return contains(test_operand(a, "in"), v); }},
        {"eq", [](Renderer&, const Value& v, CallArgs& a) { return equals(v, test_operand(a, "eq")); }},
        {"equalto", [](Renderer&, const Value& v, CallArgs& a) { return equals(v, test_operand(a, "eq")); }},
        {"==", [](Renderer&, const Value& v, CallArgs& a) { return equals(v, test_operand(a, "eq")); }},
        {"ne", [](Renderer&, const Value& v, CallArgs& a) { return !equals(v, test_operand(a, "ne")); }},
        {"!=", [](Renderer&, const Value& v, CallArgs& a) { return !equals(v, test_operand(a, "ne")); }},
        {"lt", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "lt"), "<"); }},
        {"lessthan", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "lt"), "<"); }},
        {"<", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "lt"), "<"); }},
        {"le", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "le"), "<="); }},
        {"<=", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "le"), "<="); }},
        {"gt", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "gt"), ">"); }},
        {"greaterthan", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "gt"), ">"); }},
        {">", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "gt"), ">"); }},
        {"ge", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "ge"), ">="); }},
        {">=", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, test_operand(a, "ge"), ">="); }},
    };
    return table;
}

// ---- globals ----

class Function : public Object {
public:
    using Body = std::function<Value(Renderer&, CallArgs&)>;
    Function(std::string name, Body body) : name_(std::move(name)), body_(std::move(body)) {}
    std::string type_name() const override { return "function"; }
    std::string repr() const override { return "<function " + name_ + ">"; }
    bool is_callable() const override { return true; }
    Value call(Renderer& renderer, CallArgs& args) override { return body_(renderer, args); }

private:
    std::string name_;
    Body body_;
};

// jinja2.utils.Namespace: the one object whose attributes templates may assign.
class Namespace : public Object {
public:
    std::string type_name() const override { return "Namespace"; }
    std::string repr() const override { return "<Namespace " + to_repr(Value::dict(attrs_)) + ">"; }
    Value get_attr(const std::string& name) const override {
        const Value* v = attrs_.find(std::string_view(name));
        return v ? *v : Value::undefined("'jinja2.utils.Namespace object' has no attribute '" + name + "'");
    }
    bool set_attr(const std::string& name, Value value) override {
        attrs_.set(Value(name), std::move(value));
        return true;
    }
    void release() override { attrs_.items.clear(); }

private:
    DictData attrs_;
};

// dict(mapping_or_pairs, **kwargs) as Python builds it.
DictData build_dict(const CallArgs& args, const char* function) {
    if (args.positional.size() > 1) type_error(std::string(function) + " expected at most 1 argument, got " + std::to_string(args.positional.size()));
    DictData dict;
    if (!args.positional.empty()) {
        const Value& source = args.positional[0];
        if (source.is_dict()) {
            dict = source.as_dict();
        } else {
            for (const Value& pair : iterate(source)) {
                const std::vector<Value> kv = iterate(pair);
                if (kv.size() != 2) raise("ValueError", "dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
                dict.set(kv[0], kv[1]);
            }
        }
    }
    for (const auto& [key, value] : args.keyword) dict.set(Value(key), value);
    return dict;
}

int64_t range_argument(const Value& v) {
    if (!v.is_integral()) type_error(std::string("'") + type_name(v) + "' object cannot be interpreted as an integer");
    return v.as_int();
}

// jinja2.sandbox.safe_range: ranges over MAX_RANGE items are refused.
constexpr int64_t kMaxRange = 100000;

Value range(Renderer&, CallArgs& args) {
    if (!args.keyword.empty()) type_error("range() takes no keyword arguments");
    const size_t n = args.positional.size();
    if (n == 0 || n > 3) type_error("range expected at most 3 arguments, got " + std::to_string(n));
    const int64_t start = n == 1 ? 0 : range_argument(args.positional[0]);
    const int64_t stop = range_argument(args.positional[n == 1 ? 0 : 1]);
    const int64_t step = n == 3 ? range_argument(args.positional[2]) : 1;
    if (step == 0) raise("ValueError", "range() arg 3 must not be zero");
    const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                   : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (count > kMaxRange)
        raise("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    std::vector<Value> items;
    items.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) items.emplace_back(start + i * step);
    return Value::list(std::move(items));
}

// datetime.strftime of a naive datetime: %z and %Z are empty, %f is microseconds (0 here).
std::string strftime_naive(const std::string& format, std::tm when) {
    std::string rewritten;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%' || i + 1 == format.size()) {
            rewritten.push_back(format[i]);
            continue;
        }
        const char c = format[++i];
        if (c == 'z' || c == 'Z') continue;
        if (c == 'f') rewritten += "000000";
        else rewritten += std::string("%") + c;
    }
    if (rewritten.empty()) return "";
    std::tm normalized = when;
    normalized.tm_isdst = 0;
    timegm(&normalized);  // fills tm_wday and tm_yday
    std::string out(rewritten.size() * 4 + 64, '\0');
    while (true) {
        const size_t n = std::strftime(out.data(), out.size(), rewritten.c_str(), &normalized);
        if (n > 0 || out.size() > rewritten.size() * 64 + 1024) {
            out.resize(n);
            return out;
        }
        out.resize(out.size() * 2);
    }
}

}  // namespace

TestFn find_test(const std::string& name) {
    auto it = tests().find(name);
    return it == tests().end() ? nullptr : it->second;
}

DictData make_globals(const std::tm& now) {
    DictData globals;
    auto add = [&](const char* name, Function::Body body) {
        globals.set(Value(name), Value::object(std::make_shared<Function>(name, std::move(body))));
    };
    add("range", range);
    add("dict", [](Renderer&, CallArgs& args) { return Value::dict(build_dict(args, "dict")); });
    add("namespace", [](Renderer& r, CallArgs& args) {
        auto ns = std::make_shared<Namespace>();
        for (auto& [key, value] : build_dict(args, "namespace").items) ns->set_attr(to_str(key), value);
        r.track(ns);
        return Value::object(ns);
    });
    add("joiner", [](Renderer&, CallArgs& args) {
        const std::string sep = to_str(argument_or(args, 0, "sep", Value(", ")));
        auto used = std::make_shared<bool>(false);
        return Value::object(std::make_shared<Function>("joiner", [sep, used](Renderer&, CallArgs&) {
            const bool first = !*used;
            *used = true;
            return Value(first ? std::string() : sep);
        }));
    });
    add("raise_exception", [](Renderer&, CallArgs& args) -> Value {
        raise("TemplateError", to_str(argument_or(args, 0, "message", Value(""))));
    });
    add("strftime_now", [now](Renderer&, CallArgs& args) {
        const Value format = argument_or(args, 0, "format", Value(""));
        if (!format.is_string()) type_error("strftime() argument 1 must be str, not " + type_name(format));
        return Value(strftime_naive(format.as_string(), now));
    });
    return globals;
}

}  // namespace k3::jinja
