#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja/strings.h"

namespace k3::jinja {

// ---- Value ----

Value Value::undefined(std::string hint, std::string error_kind) {
    Value v;
    v.data_ = std::make_shared<const UndefinedData>(
        UndefinedData{std::move(hint), std::move(error_kind)});
    return v;
}

namespace {

int checked_depth(int inner) {
    if (inner + 1 > kMaxNesting)
        raise("RecursionError", "maximum recursion depth exceeded (values nested deeper than " +
                                    std::to_string(kMaxNesting) + " levels)");
    return inner + 1;
}

int deepest(const std::vector<Value>& items) {
    int d = 0;
    for (const Value& item : items) d = std::max(d, item.nesting());
    return d;
}

}  // namespace

Value Value::list(std::vector<Value> items, bool is_tuple) {
    return dict_view(std::move(items), "", is_tuple);
}

Value Value::dict_view(std::vector<Value> items, std::string view, bool is_tuple) {
    const int depth = checked_depth(deepest(items));
    Value v;
    v.data_ = std::make_shared<const ListData>(ListData{std::move(items), is_tuple, std::move(view), depth});
    return v;
}

Value Value::dict(DictData dict) {
    int inner = 0;
    for (const auto& [key, value] : dict.items) inner = std::max({inner, key.nesting(), value.nesting()});
    dict.depth = checked_depth(inner);
    Value v;
    v.data_ = std::make_shared<const DictData>(std::move(dict));
    return v;
}

int Value::nesting() const {
    if (is_list()) return as_list().depth;
    if (is_dict()) return as_dict().depth;
    return 0;
}

Value Value::object(std::shared_ptr<Object> object) {
    Value v;
    v.data_ = std::move(object);
    return v;
}

const void* Value::identity() const {
    switch (kind()) {
        case Kind::List: return std::get<std::shared_ptr<const ListData>>(data_).get();
        case Kind::Dict: return std::get<std::shared_ptr<const DictData>>(data_).get();
        case Kind::Object: return std::get<std::shared_ptr<Object>>(data_).get();
        default: return nullptr;
    }
}

int64_t Value::as_int() const { return is_bool() ? int64_t{as_bool()} : std::get<int64_t>(data_); }

double Value::as_double() const {
    if (is_float()) return std::get<double>(data_);
    return static_cast<double>(as_int());
}

std::string Value::undefined_hint() const {
    const auto& data = std::get<std::shared_ptr<const UndefinedData>>(data_);
    return data && !data->hint.empty() ? data->hint : "'undefined' is undefined";
}

void Value::raise_undefined() const {
    const auto& data = std::get<std::shared_ptr<const UndefinedData>>(data_);
    raise(data && !data->error_kind.empty() ? data->error_kind.c_str() : "UndefinedError",
          undefined_hint());
}

// ---- DictData ----

const Value* DictData::find(const Value& key) const {
    for (const auto& [k, v] : items)
        if (equals(k, key)) return &v;
    return nullptr;
}

const Value* DictData::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k.is_string() && k.as_string() == key) return &v;
    return nullptr;
}

void DictData::set(Value key, Value value) {
    for (auto& [k, v] : items)
        if (equals(k, key)) {
            v = std::move(value);
            return;
        }
    items.emplace_back(std::move(key), std::move(value));
}

// ---- Object defaults ----

std::string Object::repr() const { return std::string("<") + type_name() + " object>"; }

Value Object::get_attr(const std::string& name) const {
    return Value::undefined(std::string("'") + type_name() + " object' has no attribute '" + name + "'");
}

bool Object::set_attr(const std::string&, Value) { return false; }

Value Object::call(Renderer&, CallArgs&) {
    type_error(std::string("'") + type_name() + "' object is not callable");
}

// ---- printing ----

std::string format_float(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    // Shortest round-trip digits, then Python's repr layout: positional for
    // 1e-4 <= |d| < 1e16, otherwise d.ddde+XX.
    char buf[64];
    auto result = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, result.ptr);
    std::string out;
    size_t pos = 0;
    if (sci[0] == '-') {
        out.push_back('-');
        pos = 1;
    }
    const size_t e_pos = sci.find('e');
    std::string digits;
    for (size_t i = pos; i < e_pos; ++i)
        if (sci[i] != '.') digits.push_back(sci[i]);
    const int exponent = std::stoi(sci.substr(e_pos + 1));
    if (exponent < -4 || exponent >= 16) {
        out += digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp_buf;
    }
    if (exponent >= 0) {
        const size_t int_digits = static_cast<size_t>(exponent) + 1;
        if (digits.size() <= int_digits) return out + digits + std::string(int_digits - digits.size(), '0') + ".0";
        return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
    return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
}

std::string repr_string(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t c : utf8_decode(s)) {
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (!py_isprintable(c)) {
            char buf[16];
            if (c <= 0xFF)
                std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
            else if (c <= 0xFFFF)
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            else
                std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
            out += buf;
        } else {
            append_utf8(out, c);
        }
    }
    out.push_back(quote);
    return out;
}

std::string to_str(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return "";
        case Value::Kind::String: return v.as_string();
        default: return to_repr(v);
    }
}

std::string to_repr(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return "Undefined";
        case Value::Kind::None: return "None";
        case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
        case Value::Kind::Int: return std::to_string(v.as_int());
        case Value::Kind::Float: return format_float(v.as_double());
        case Value::Kind::String:
            return v.is_markup() ? "Markup(" + repr_string(v.as_string()) + ")" : repr_string(v.as_string());
        case Value::Kind::List: {
            const ListData& list = v.as_list();
            std::string out(1, list.is_tuple ? '(' : '[');
            for (size_t i = 0; i < list.items.size(); ++i) {
                if (i) out += ", ";
                out += to_repr(list.items[i]);
            }
            if (list.is_tuple && list.items.size() == 1) out += ",";
            out += list.is_tuple ? ')' : ']';
            return list.view.empty() ? out : list.view + "(" + out + ")";
        }
        case Value::Kind::Dict: {
            std::string out = "{";
            bool first = true;
            for (const auto& [key, value] : v.as_dict().items) {
                if (!first) out += ", ";
                first = false;
                out += to_repr(key) + ": " + to_repr(value);
            }
            return out + "}";
        }
        case Value::Kind::Object: return v.as_object().repr();
    }
    return "";
}

std::string type_name(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return "Undefined";
        case Value::Kind::None: return "NoneType";
        case Value::Kind::Bool: return "bool";
        case Value::Kind::Int: return "int";
        case Value::Kind::Float: return "float";
        case Value::Kind::String: return v.is_markup() ? "Markup" : "str";
        case Value::Kind::List:
            if (v.is_view()) return v.as_list().view;
            return v.as_list().is_tuple ? "tuple" : "list";
        case Value::Kind::Dict: return "dict";
        case Value::Kind::Object: return v.as_object().type_name();
    }
    return "object";
}

std::string object_type_repr(const Value& v) {
    if (v.is_none()) return "None";
    if (v.is_markup()) return "markupsafe.Markup object";
    return type_name(v) + " object";
}

// ---- truth, equality, order ----

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None: return false;
        case Value::Kind::Bool: return v.as_bool();
        case Value::Kind::Int: return v.as_int() != 0;
        case Value::Kind::Float: return v.as_double() != 0.0;
        case Value::Kind::String: return !v.as_string().empty();
        case Value::Kind::List: return !v.as_list().items.empty();
        case Value::Kind::Dict: return !v.as_dict().items.empty();
        case Value::Kind::Object: return true;
    }
    return false;
}

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None: return true;
        case Value::Kind::String: return a.as_string() == b.as_string();
        case Value::Kind::List: {
            const ListData& x = a.as_list();
            const ListData& y = b.as_list();
            if (x.is_tuple != y.is_tuple || x.view != y.view || x.items.size() != y.items.size()) return false;
            for (size_t i = 0; i < x.items.size(); ++i)
                if (!equals(x.items[i], y.items[i])) return false;
            return true;
        }
        case Value::Kind::Dict: {
            const DictData& x = a.as_dict();
            const DictData& y = b.as_dict();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [key, value] : x.items) {
                const Value* other = y.find(key);
                if (!other || !equals(value, *other)) return false;
            }
            return true;
        }
        case Value::Kind::Object: return a.identity() == b.identity();
        default: return false;
    }
}

namespace {

// -1, 0, 1 for a <=> b, or nullopt when Python cannot order them.
std::optional<int> order(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            const double x = a.as_double(), y = b.as_double();
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        const int64_t x = a.as_int(), y = b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
        const auto& x = a.as_list().items;
        const auto& y = b.as_list().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals(x[i], y[i])) continue;
            return order(x[i], y[i]);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    return std::nullopt;
}

}  // namespace

bool compare(const Value& a, const Value& b, std::string_view op) {
    if (a.is_undefined()) a.raise_undefined();
    if (b.is_undefined()) b.raise_undefined();
    const std::optional<int> c = order(a, b);
    if (!c)
        type_error(std::string("'") + std::string(op) + "' not supported between instances of '" + type_name(a) +
                   "' and '" + type_name(b) + "'");
    if (op == "<") return *c < 0;
    if (op == "<=") return *c <= 0;
    if (op == ">") return *c > 0;
    return *c >= 0;
}

// ---- len / iteration ----

int64_t length(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return 0;
        case Value::Kind::String: return utf8_length(v.as_string());
        case Value::Kind::List: return static_cast<int64_t>(v.as_list().items.size());
        case Value::Kind::Dict: return static_cast<int64_t>(v.as_dict().items.size());
        default: type_error("object of type '" + type_name(v) + "' has no len()");
    }
}

Generator::Generator(std::string function, std::function<std::vector<Value>()> produce)
    : function_(std::move(function)), produce_(std::move(produce)) {}

std::string Generator::repr() const {
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<const void*>(this));
    return "<generator object " + function_ + " at " + address + ">";
}

std::vector<Value> Generator::consume() {
    if (!produce_) return {};
    const std::function<std::vector<Value>()> produce = std::move(produce_);
    produce_ = nullptr;
    return produce();
}

std::vector<Value> iterate(const Value& v) {
    if (Generator* generator = v.object_as<Generator>()) return generator->consume();
    switch (v.kind()) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::List: return v.as_list().items;
        case Value::Kind::Dict: {
            std::vector<Value> keys;
            for (const auto& item : v.as_dict().items) keys.push_back(item.first);
            return keys;
        }
        case Value::Kind::String: {
            std::vector<Value> chars;
            for (char32_t c : utf8_decode(v.as_string())) {
                std::string s;
                append_utf8(s, c);
                chars.emplace_back(std::move(s), v.is_markup());
            }
            return chars;
        }
        default: type_error(std::string("'") + type_name(v) + "' object is not iterable");
    }
}

// ---- Markup ----

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out.push_back(c);
        }
    }
    return out;
}

Value make_markup_concat(const Value& a, const Value& b) {
    // markupsafe: Markup + str escapes the plain operand; anything else is unsupported.
    if (!a.is_string() || !b.is_string())
        type_error("unsupported operand type(s) for +: '" + type_name(a) + "' and '" + type_name(b) + "'");
    auto part = [](const Value& v) { return v.is_markup() ? v.as_string() : html_escape(v.as_string()); };
    return Value(part(a) + part(b), true);
}

// ---- JSON ----

namespace {

Value from_json_at(const nlohmann::ordered_json& json, int depth) {
    if (depth > kMaxNesting)
        throw k3::Error("template variables nest deeper than " + std::to_string(kMaxNesting) + " levels");
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = json.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
            return Value(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(json.size());
            for (const auto& item : json) items.push_back(from_json_at(item, depth + 1));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            DictData dict;
            dict.items.reserve(json.size());
            for (const auto& [key, value] : json.items()) dict.items.emplace_back(Value(key), from_json_at(value, depth + 1));
            return Value::dict(std::move(dict));
        }
        default: type_error("unsupported JSON value (binary)");
    }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& json) { return from_json_at(json, 1); }

namespace {

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out.push_back('"');
    for (char32_t c : utf8_decode(s)) {
        switch (c) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        char buf[16];
        if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
            if (c >= 0x10000) {
                const char32_t v = c - 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                              static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
            } else {
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            }
            out += buf;
        } else {
            append_utf8(out, c);
        }
    }
    out.push_back('"');
}

std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return format_float(d);
}

std::string json_key(const Value& key) {
    switch (key.kind()) {
        case Value::Kind::String: return key.as_string();
        case Value::Kind::Bool: return key.as_bool() ? "true" : "false";
        case Value::Kind::None: return "null";
        case Value::Kind::Int: return std::to_string(key.as_int());
        case Value::Kind::Float: return json_float(key.as_double());
        default: type_error("keys must be str, int, float, bool or None, not " + type_name(key));
    }
}

void dump(std::string& out, const Value& v, const JsonOptions& options, int level) {
    auto open_container = [&](char open, size_t count, auto&& each) {
        out.push_back(open);
        if (count == 0) return;
        std::string newline_indent;
        if (options.indent) {
            newline_indent = "\n";
            for (int i = 0; i <= level; ++i) newline_indent += *options.indent;
            out += newline_indent;
        }
        for (size_t i = 0; i < count; ++i) {
            if (i) out += options.item_separator + newline_indent;
            each(i);
        }
        if (options.indent) {
            out.push_back('\n');
            for (int i = 0; i < level; ++i) out += *options.indent;
        }
    };
    switch (v.kind()) {
        case Value::Kind::None: out += "null"; return;
        case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Value::Kind::Int: out += std::to_string(v.as_int()); return;
        case Value::Kind::Float: out += json_float(v.as_double()); return;
        case Value::Kind::String: dump_string(out, v.as_string(), options.ensure_ascii); return;
        case Value::Kind::List: {
            if (v.is_view()) type_error("Object of type " + v.as_list().view + " is not JSON serializable");
            const auto& items = v.as_list().items;
            open_container('[', items.size(), [&](size_t i) { dump(out, items[i], options, level + 1); });
            out.push_back(']');
            return;
        }
        case Value::Kind::Dict: {
            std::vector<const std::pair<Value, Value>*> items;
            for (const auto& item : v.as_dict().items) items.push_back(&item);
            if (options.sort_keys)
                std::stable_sort(items.begin(), items.end(),
                                 [](auto* x, auto* y) { return compare(x->first, y->first, "<"); });
            open_container('{', items.size(), [&](size_t i) {
                dump_string(out, json_key(items[i]->first), options.ensure_ascii);
                out += options.key_separator;
                dump(out, items[i]->second, options, level + 1);
            });
            out.push_back('}');
            return;
        }
        default: type_error("Object of type " + type_name(v) + " is not JSON serializable");
    }
}

}  // namespace

std::string dumps_json(const Value& v, const JsonOptions& options) {
    std::string out;
    dump(out, v, options, 0);
    return out;
}

}  // namespace k3::jinja
