// Python's arithmetic, concatenation, membership and string formatting on Jinja values.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/render.h"
#include "jinja/strings.h"

namespace k3::jinja {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
    type_error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

[[noreturn]] void overflow() { raise("OverflowError", "integer result exceeds 64 bits"); }

int64_t checked_add(int64_t x, int64_t y) {
    int64_t r = 0;
    if (__builtin_add_overflow(x, y, &r)) overflow();
    return r;
}
int64_t checked_sub(int64_t x, int64_t y) {
    int64_t r = 0;
    if (__builtin_sub_overflow(x, y, &r)) overflow();
    return r;
}
int64_t checked_mul(int64_t x, int64_t y) {
    int64_t r = 0;
    if (__builtin_mul_overflow(x, y, &r)) overflow();
    return r;
}

Value repeat(const Value& seq, int64_t times, const Renderer& renderer) {
    if (times < 0) times = 0;
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        if (times > 0 && !s.empty()) renderer.check_size(s.size() * static_cast<size_t>(times));
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += s;
        return Value(std::move(out), seq.is_markup());
    }
    const auto& items = seq.as_list().items;
    if (times > 0 && !items.empty()) renderer.check_size(items.size() * static_cast<size_t>(times));
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::list(std::move(out), seq.as_list().is_tuple);
}

int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    const int64_t m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

double float_mod(double a, double b) {
    double m = std::fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    const bool as_float = a.is_float() || b.is_float();
    if (op == "/") {
        if (b.as_double() == 0) raise("ZeroDivisionError", "division by zero");
        return Value(a.as_double() / b.as_double());
    }
    if (as_float) {
        const double x = a.as_double(), y = b.as_double();
        if (op == "+") return Value(x + y);
        if (op == "-") return Value(x - y);
        if (op == "*") return Value(x * y);
        if (op == "//") {
            if (y == 0) raise("ZeroDivisionError", "float floor division by zero");
            return Value(std::floor(x / y));
        }
        if (op == "%") {
            if (y == 0) raise("ZeroDivisionError", "float modulo");
            return Value(float_mod(x, y));
        }
        return Value(std::pow(x, y));
    }
    const int64_t x = a.as_int(), y = b.as_int();
    if (op == "+") return Value(checked_add(x, y));
    if (op == "-") return Value(checked_sub(x, y));
    if (op == "*") return Value(checked_mul(x, y));
    if (op == "//" || op == "%") {
        if (y == 0) raise("ZeroDivisionError", op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
        return Value(op == "//" ? floor_div(x, y) : floor_mod(x, y));
    }
    if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
    int64_t result = 1;
    for (int64_t i = 0; i < y; ++i) result = checked_mul(result, x);
    return Value(result);
}

}  // namespace

Value binary_operator(const std::string& op, const Value& a, const Value& b, const Renderer& renderer) {
    if (op == "~") {
        std::string s = to_str(a);
        const std::string t = to_str(b);
        renderer.check_size(s.size() + t.size());
        return Value(s + t);
    }
    if (a.is_undefined()) a.raise_undefined();
    if (b.is_undefined()) b.raise_undefined();
    if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
    if (op == "+") {
        if (a.is_markup() || b.is_markup()) return make_markup_concat(a, b);
        if (a.is_string() && b.is_string()) {
            renderer.check_size(a.as_string().size() + b.as_string().size());
            return Value(a.as_string() + b.as_string());
        }
        if (a.is_list() && b.is_list() && !a.is_view() && !b.is_view() && a.as_list().is_tuple == b.as_list().is_tuple) {
            std::vector<Value> items = a.as_list().items;
            items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
            return Value::list(std::move(items), a.as_list().is_tuple);
        }
        if (a.is_string() || (a.is_list() && !a.is_view()))
            type_error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
        unsupported(op, a, b);
    }
    if (op == "*") {
        if ((a.is_string() || a.is_list()) && b.is_integral()) return repeat(a, b.as_int(), renderer);
        if ((b.is_string() || b.is_list()) && a.is_integral()) return repeat(b, a.as_int(), renderer);
        if (a.is_string() || a.is_list() || b.is_string() || b.is_list())
            type_error("can't multiply sequence by non-int of type '" + type_name(a.is_string() || a.is_list() ? b : a) + "'");
        unsupported(op, a, b);
    }
    if (op == "%" && a.is_string()) return Value(percent_format(a.as_string(), b), a.is_markup());
    unsupported(op, a, b);
}

Value unary_operator(char op, const Value& v) {
    if (v.is_undefined()) v.raise_undefined();
    if (v.is_float()) return Value(op == '-' ? -v.as_double() : v.as_double());
    if (v.is_integral()) return Value(op == '-' ? checked_sub(0, v.as_int()) : v.as_int());
    type_error(std::string("bad operand type for unary ") + op + ": '" + type_name(v) + "'");
}

bool contains(const Value& container, const Value& item) {
    if (container.object_as<Generator>()) {
        for (const Value& v : iterate(container))
            if (equals(v, item)) return true;
        return false;
    }
    switch (container.kind()) {
        case Value::Kind::Undefined: return false;
        case Value::Kind::String:
            if (!item.is_string())
                type_error("'in <string>' requires string as left operand, not " + type_name(item));
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Value::Kind::List:
            for (const Value& v : container.as_list().items)
                if (equals(v, item)) return true;
            return false;
        case Value::Kind::Dict:
            if (item.is_dict() || (item.is_list() && !item.as_list().is_tuple))
                type_error("unhashable type: '" + type_name(item) + "'");
            return container.as_dict().find(item) != nullptr;
        default: type_error("argument of type '" + type_name(container) + "' is not iterable");
    }
}

bool compare_operator(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "in") return contains(b, a);
    if (op == "notin") return !contains(b, a);
    return compare(a, b, op);
}

// ---- str % args ----

namespace {

struct Spec {
    std::string flags;
    int width = -1;
    int precision = -1;
    char type = 's';
};

std::string pad(std::string body, const Spec& spec, bool numeric) {
    const auto len = static_cast<int>(utf8_length(body));
    if (spec.width <= len) return body;
    const size_t fill = static_cast<size_t>(spec.width - len);
    if (spec.flags.find('-') != std::string::npos) return body + std::string(fill, ' ');
    if (numeric && spec.flags.find('0') != std::string::npos) {
        const size_t sign = !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
        return body.substr(0, sign) + std::string(fill, '0') + body.substr(sign);
    }
    return std::string(fill, ' ') + body;
}

std::string format_number(const Value& v, const Spec& spec) {
    std::string sign = spec.flags.find('+') != std::string::npos ? "+" : (spec.flags.find(' ') != std::string::npos ? " " : "");
    char buf[512];
    if (spec.type == 'd' || spec.type == 'i' || spec.type == 'x' || spec.type == 'X' || spec.type == 'o') {
        if (!v.is_number()) type_error(std::string("%") + spec.type + " format: a real number is required, not " + type_name(v));
        const int64_t i = v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int();
        const char* f = spec.type == 'x' ? "%llx" : spec.type == 'X' ? "%llX" : spec.type == 'o' ? "%llo" : "%llu";
        const unsigned long long magnitude = i < 0 ? 0ULL - static_cast<unsigned long long>(i) : static_cast<unsigned long long>(i);
        std::snprintf(buf, sizeof buf, f, magnitude);
        return (i < 0 ? "-" : sign) + std::string(buf);
    }
    if (!v.is_number()) type_error("must be real number, not " + type_name(v));
    const double d = v.as_double();
    const int precision = spec.precision < 0 ? 6 : std::min(spec.precision, 100);
    const std::string f = std::string("%") + (spec.flags.find('#') != std::string::npos ? "#" : "") + "." +
                          std::to_string(precision) + spec.type;
    std::snprintf(buf, sizeof buf, f.c_str(), std::fabs(d));
    return (std::signbit(d) ? "-" : sign) + std::string(buf);
}

}  // namespace

std::string percent_format(const std::string& format, const Value& args) {
    std::vector<Value> positional;
    const DictData* mapping = args.is_dict() ? &args.as_dict() : nullptr;
    if (args.is_list() && args.as_list().is_tuple) positional = args.as_list().items;
    else if (!mapping) positional.push_back(args);
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out.push_back(format[i]);
            continue;
        }
        if (++i >= format.size()) raise("ValueError", "incomplete format");
        const Value* value = nullptr;
        if (format[i] == '(') {
            const size_t close = format.find(')', i);
            if (close == std::string::npos || !mapping) raise("ValueError", "incomplete format key");
            value = mapping->find(std::string_view(format).substr(i + 1, close - i - 1));
            if (!value) raise("KeyError", repr_string(format.substr(i + 1, close - i - 1)));
            i = close + 1;
        }
        Spec spec;
        while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos) spec.flags.push_back(format[i++]);
        while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) spec.width = std::max(spec.width, 0) * 10 + (format[i++] - '0');
        if (i < format.size() && format[i] == '.') {
            spec.precision = 0;
            while (++i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) spec.precision = spec.precision * 10 + (format[i] - '0');
        }
        if (i >= format.size()) raise("ValueError", "incomplete format");
        spec.type = format[i];
        if (spec.type == '%') {
            out.push_back('%');
            continue;
        }
        if (!value) {
            if (mapping) {
                value = &args;
            } else {
                if (next >= positional.size()) type_error("not enough arguments for format string");
                value = &positional[next++];
            }
        }
        switch (spec.type) {
            case 's': out += pad(to_str(*value), spec, false); break;
            case 'r':
            case 'a': out += pad(to_repr(*value), spec, false); break;
            case 'c':
                if (value->is_string()) out += pad(value->as_string(), spec, false);
                else {
                    std::string c;
                    append_utf8(c, static_cast<char32_t>(value->as_int()));
                    out += pad(c, spec, false);
                }
                break;
            case 'd': case 'i': case 'u': case 'x': case 'X': case 'o':
            case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
                if (spec.type == 'u') spec.type = 'd';
                out += pad(format_number(*value, spec), spec, true);
                break;
            default:
                raise("ValueError", std::string("unsupported format character '") + spec.type + "'");
        }
    }
    if (!mapping && next < positional.size()) type_error("not all arguments converted during string formatting");
    return out;
}

// ---- str.format ----

namespace {

// Applies a format spec ([[fill]align][sign][0][width][.precision][type]) to one value.
std::string apply_format_spec(const Value& v, const std::string& spec_text) {
    if (spec_text.empty()) return to_str(v);
    std::u32string spec = utf8_decode(spec_text);
    size_t i = 0;
    char32_t fill = ' ';
    char align = 0;
    auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (spec.size() >= 2 && is_align(spec[1])) {
        fill = spec[0];
        align = static_cast<char>(spec[1]);
        i = 2;
    } else if (!spec.empty() && is_align(spec[0])) {
        align = static_cast<char>(spec[0]);
        i = 1;
    }
    Spec s;
    if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) s.flags.push_back(static_cast<char>(spec[i++]));
    if (i < spec.size() && spec[i] == '0') {
        if (!align) {
            fill = '0';
            align = '=';
        }
        ++i;
    }
    int width = 0;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') width = width * 10 + static_cast<int>(spec[i++] - '0');
    if (i < spec.size() && spec[i] == '.') {
        s.precision = 0;
        while (++i < spec.size() && spec[i] >= '0' && spec[i] <= '9') s.precision = s.precision * 10 + static_cast<int>(spec[i] - '0');
    }
    char type = i < spec.size() ? static_cast<char>(spec[i]) : 0;
    std::string body;
    if (type == 0 && v.is_float() && s.precision >= 0) type = 'g';
    if (type == 0 || type == 's') {
        body = to_str(v);
        if (s.precision >= 0) body = utf8_encode(utf8_decode(body).substr(0, static_cast<size_t>(s.precision)));
        if (!align) align = v.is_number() ? '>' : '<';
    } else {
        s.type = type == 'n' ? 'd' : type;
        if (type == '%') {
            s.type = 'f';
            body = format_number(Value(v.as_double() * 100), s) + "%";
        } else {
            body = format_number(v, s);
        }
        if (!align) align = '>';
    }
    const auto len = static_cast<int>(utf8_length(body));
    if (width <= len) return body;
    const auto n = static_cast<size_t>(width - len);
    std::string fill_text;
    append_utf8(fill_text, fill);
    auto repeat_fill = [&](size_t count) {
        std::string r;
        for (size_t k = 0; k < count; ++k) r += fill_text;
        return r;
    };
    if (align == '<') return body + repeat_fill(n);
    if (align == '^') return repeat_fill(n / 2) + body + repeat_fill(n - n / 2);
    if (align == '=' && !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' '))
        return body.substr(0, 1) + repeat_fill(n) + body.substr(1);
    return repeat_fill(n) + body;
}

}  // namespace

std::string brace_format(const std::string& format, const CallArgs& args) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < format.size(); ++i) {
        const char c = format[i];
        if (c == '}') {
            if (i + 1 < format.size() && format[i + 1] == '}') ++i;
            else raise("ValueError", "Single '}' encountered in format string");
            out.push_back('}');
            continue;
        }
        if (c != '{') {
            out.push_back(c);
            continue;
        }
        if (i + 1 < format.size() && format[i + 1] == '{') {
            out.push_back('{');
            ++i;
            continue;
        }
        const size_t close = format.find('}', i);
        if (close == std::string::npos) raise("ValueError", "expected '}' before end of string");
        std::string field = format.substr(i + 1, close - i - 1);
        i = close;
        std::string spec;
        if (const size_t colon = field.find(':'); colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field.resize(colon);
        }
        char conversion = 0;
        if (const size_t bang = field.find('!'); bang != std::string::npos) {
            conversion = bang + 1 < field.size() ? field[bang + 1] : 0;
            field.resize(bang);
        }
        const size_t name_end = field.find_first_of(".[");
        const std::string name = field.substr(0, name_end);
        Value value;
        if (name.empty()) {
            if (auto_index >= args.positional.size())
                raise("IndexError", "Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
            value = args.positional[auto_index++];
        } else if (std::isdigit(static_cast<unsigned char>(name[0]))) {
            const size_t index = std::stoul(name);
            if (index >= args.positional.size())
                raise("IndexError", "Replacement index " + std::to_string(index) + " out of range for positional args tuple");
            value = args.positional[index];
        } else {
            bool found = false;
            for (const auto& [key, v] : args.keyword)
                if (key == name) {
                    value = v;
                    found = true;
                }
            if (!found) raise("KeyError", repr_string(name));
        }
        for (size_t p = name_end; p != std::string::npos && p < field.size();) {
            if (field[p] == '.') {
                const size_t end = field.find_first_of(".[", p + 1);
                value = get_attribute(value, field.substr(p + 1, end == std::string::npos ? std::string::npos : end - p - 1));
                p = end;
            } else {
                const size_t end = field.find(']', p);
                const std::string key = field.substr(p + 1, end - p - 1);
                const bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
                value = get_item(value, numeric ? Value(static_cast<int64_t>(std::stoll(key))) : Value(key));
                p = end == std::string::npos ? end : end + 1;
            }
        }
        if (conversion == 'r' || conversion == 'a') value = Value(to_repr(value));
        else if (conversion == 's') value = Value(to_str(value));
        out += apply_format_spec(value, spec);
    }
    return out;
}

}  // namespace k3::jinja
