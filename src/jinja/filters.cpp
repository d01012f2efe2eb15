// Jinja2's builtin filters (filters.py), with transformers' tojson in place of Jinja's.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <functional>
#include <random>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/render.h"
#include "jinja/strings.h"

namespace k3::jinja {
namespace {

using Getter = std::function<Value(const Value&)>;

// Jinja2's make_attrgetter: "a.b.0" looks up each part with getitem (an integer part as an index).
Getter attribute_getter(const Value& attribute, std::optional<Value> fallback = std::nullopt) {
    std::vector<Value> parts;
    if (attribute.is_string()) {
        for (const std::string& part : py_split(attribute.as_string(), std::string("."), -1, false)) {
            const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
            parts.push_back(numeric ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
        }
    } else {
        parts.push_back(attribute);
    }
    return [parts, fallback](const Value& item) {
        Value v = item;
        for (const Value& part : parts) {
            if (v.is_undefined()) v.raise_undefined();
            v = get_item(v, part);
        }
        if (fallback && v.is_undefined()) return *fallback;
        return v;
    };
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py_lower(v.as_string())) : v; }

Getter sort_key(const CallArgs& args, size_t case_index, size_t attribute_index) {
    const bool case_sensitive = truthy(argument_or(args, case_index, "case_sensitive", Value(false)));
    std::optional<Value> attribute = argument(args, attribute_index, "attribute");
    Getter get = attribute && !attribute->is_none() ? attribute_getter(*attribute) : Getter([](const Value& v) { return v; });
    if (case_sensitive) return get;
    return [get](const Value& v) { return ignore_case(get(v)); };
}

std::vector<Value> sorted(std::vector<Value> items, const Getter& key, bool reverse) {
    std::vector<std::pair<Value, Value>> keyed;
    keyed.reserve(items.size());
    for (auto& item : items) keyed.emplace_back(key(item), std::move(item));
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
        return reverse ? compare(b.first, a.first, "<") : compare(a.first, b.first, "<");
    });
    std::vector<Value> out;
    for (auto& k : keyed) out.push_back(std::move(k.second));
    return out;
}

Value filter_default(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("default", args, 2, {"default_value", "boolean"});
    const bool boolean = truthy(argument_or(args, 1, "boolean", Value(false)));
    if (v.is_undefined() || (boolean && !truthy(v))) return argument_or(args, 0, "default_value", Value(""));
    return v;
}

Value filter_tojson(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("tojson", args, 4, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions options;
    options.ensure_ascii = truthy(argument_or(args, 0, "ensure_ascii", Value(false)));
    const Value indent = argument_or(args, 1, "indent", Value::none());
    if (indent.is_string()) options.indent = indent.as_string();
    else if (indent.is_integral()) options.indent = std::string(static_cast<size_t>(std::max<int64_t>(indent.as_int(), 0)), ' ');
    else if (!indent.is_none()) type_error("indent must be None, an int or a str");
    if (options.indent) options.item_separator = ",";
    const Value separators = argument_or(args, 2, "separators", Value::none());
    if (!separators.is_none()) {
        const std::vector<Value> parts = iterate(separators);
        if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
            raise("ValueError", "separators must be a pair of strings");
        options.item_separator = parts[0].as_string();
        options.key_separator = parts[1].as_string();
    }
    options.sort_keys = truthy(argument_or(args, 3, "sort_keys", Value(false)));
    return Value(dumps_json(v, options));
}

Value filter_items(Renderer&, const Value& v, CallArgs&) {
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict()) type_error("Can only get item pairs from a mapping.");
    std::vector<Value> pairs;
    for (const auto& [k, val] : v.as_dict().items) pairs.push_back(Value::list({k, val}, true));
    return Value::list(std::move(pairs));
}

Value filter_dictsort(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("dictsort", args, 3, {"case_sensitive", "by", "reverse"});
    if (!v.is_dict()) type_error("dictsort expects a mapping, not " + type_name(v));
    const Value by = argument_or(args, 1, "by", Value("key"));
    if (!by.is_string() || (by.as_string() != "key" && by.as_string() != "value"))
        raise("FilterArgumentError", "You can only sort by either 'key' or 'value'");
    const size_t pos = by.as_string() == "key" ? 0 : 1;
    const bool case_sensitive = truthy(argument_or(args, 0, "case_sensitive", Value(false)));
    std::vector<Value> pairs;
    for (const auto& [k, val] : v.as_dict().items) pairs.push_back(Value::list({k, val}, true));
    return Value::list(sorted(std::move(pairs),
                              [pos, case_sensitive](const Value& pair) {
                                  const Value& x = pair.as_list().items[pos];
                                  return case_sensitive ? x : ignore_case(x);
                              },
                              truthy(argument_or(args, 2, "reverse", Value(false)))));
}

Value filter_sort(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("sort", args, 3, {"reverse", "case_sensitive", "attribute"});
    const bool reverse = truthy(argument_or(args, 0, "reverse", Value(false)));
    std::optional<Value> attribute = argument(args, 2, "attribute");
    if (!attribute || !attribute->is_string() || attribute->as_string().find(',') == std::string::npos)
        return Value::list(sorted(iterate(v), sort_key(args, 1, 2), reverse));
    // make_multi_attrgetter: "age,name" sorts by the list [age, name].
    std::vector<Getter> getters;
    for (const std::string& part : py_split(attribute->as_string(), std::string(","), -1, false)) {
        CallArgs one;
        one.keyword = {{"case_sensitive", argument_or(args, 1, "case_sensitive", Value(false))}, {"attribute", Value(part)}};
        getters.push_back(sort_key(one, 99, 99));
    }
    return Value::list(sorted(iterate(v),
                              [getters](const Value& item) {
                                  std::vector<Value> keys;
                                  for (const Getter& g : getters) keys.push_back(g(item));
                                  return Value::list(std::move(keys));
                              },
                              reverse));
}

Value filter_filesizeformat(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("filesizeformat", args, 1, {"binary"});
    const bool binary = truthy(argument_or(args, 0, "binary", Value(false)));
    if (!v.is_number()) type_error("float() argument must be a string or a real number, not '" + type_name(v) + "'");
    const double bytes = v.as_double();
    const double base = binary ? 1024 : 1000;
    static const char* const kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    static const char* const kDecimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    if (bytes == 1) return Value("1 Byte");
    if (bytes < base) return Value(std::to_string(static_cast<int64_t>(bytes)) + " Bytes");
    double unit = base;
    const char* prefix = "";
    for (int i = 0; i < 8; ++i) {
        unit = std::pow(base, i + 2);
        prefix = binary ? kBinary[i] : kDecimal[i];
        if (bytes < unit) break;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, prefix);
    return Value(buf);
}

Value filter_unique(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("unique", args, 2, {"case_sensitive", "attribute"});
    const Getter key = sort_key(args, 0, 1);
    std::vector<Value> seen, out;
    for (const Value& item : iterate(v)) {
        const Value k = key(item);
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
        seen.push_back(k);
        out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value min_or_max(const Value& v, CallArgs& args, bool want_max) {
    check_arguments(want_max ? "max" : "min", args, 2, {"case_sensitive", "attribute"});
    const std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    const Getter key = sort_key(args, 0, 1);
    size_t best = 0;
    Value best_key = key(items[0]);
    for (size_t i = 1; i < items.size(); ++i) {
        Value k = key(items[i]);
        if (want_max ? compare(k, best_key, ">") : compare(k, best_key, "<")) {
            best = i;
            best_key = std::move(k);
        }
    }
    return items[best];
}

Value filter_min(Renderer&, const Value& v, CallArgs& args) { return min_or_max(v, args, false); }
Value filter_max(Renderer&, const Value& v, CallArgs& args) { return min_or_max(v, args, true); }

// Jinja2's map and select family are generator functions: their whole body, argument checks
// included, runs when the result is first iterated.
Value generator(Renderer& r, std::string function, std::function<std::vector<Value>()> produce) {
    auto made = std::make_shared<Generator>(std::move(function), std::move(produce));
    r.track(made);  // what it captures may refer back to it
    return Value::object(std::move(made));
}

std::vector<Value> map_items(Renderer& r, const Value& v, CallArgs& args) {
    std::vector<Value> out;
    if (!truthy(v)) return out;  // Jinja2: "if value:" before iterating
    if (args.positional.empty()) {
        std::optional<Value> attribute = argument(args, 99, "attribute");
        if (!attribute) raise("FilterArgumentError", "map requires a filter argument");
        const Getter get = attribute_getter(*attribute, argument(args, 99, "default"));
        for (const Value& item : iterate(v)) out.push_back(get(item));
        return out;
    }
    if (!args.positional[0].is_string()) type_error("map filter name must be a string");
    const std::string name = args.positional[0].as_string();
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& item : iterate(v)) {
        CallArgs call = rest;
        out.push_back(r.apply_filter(name, item, call));
    }
    return out;
}

Value filter_map(Renderer& r, const Value& v, CallArgs& args) {
    return generator(r, "sync_do_map", [&r, v, args]() mutable { return map_items(r, v, args); });
}

// select / reject / selectattr / rejectattr.
std::vector<Value> select_items(Renderer& r, const Value& v, CallArgs& args, bool by_attribute, bool keep_if) {
    if (!truthy(v)) return {};  // Jinja2: "if value:" before iterating
    size_t next = 0;
    Getter get = [](const Value& item) { return item; };
    if (by_attribute) {
        if (args.positional.empty()) type_error("selectattr/rejectattr need an attribute name");
        get = attribute_getter(args.positional[next++]);
    }
    std::optional<std::string> test;
    if (next < args.positional.size()) {
        if (!args.positional[next].is_string()) type_error("test name must be a string");
        test = args.positional[next++].as_string();
    }
    CallArgs test_args;
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(std::min(next, args.positional.size())),
                                args.positional.end());
    test_args.keyword = args.keyword;
    std::vector<Value> out;
    for (const Value& item : iterate(v)) {
        const Value subject = get(item);
        bool passed;
        if (test) {
            CallArgs call = test_args;
            passed = r.apply_test(*test, subject, call);
        } else {
            passed = truthy(subject);
        }
        if (passed == keep_if) out.push_back(item);
    }
    return out;
}

Value filter_select(Renderer& r, const Value& v, CallArgs& args, bool by_attribute, bool keep_if) {
    return generator(r, "select_or_reject", [&r, v, args, by_attribute, keep_if]() mutable {
        return select_items(r, v, args, by_attribute, keep_if);
    });
}

Value filter_join(Renderer& r, const Value& v, CallArgs& args) {
    check_arguments("join", args, 2, {"d", "attribute"});
    const std::string separator = to_str(argument_or(args, 0, "d", Value("")));
    std::optional<Value> attribute = argument(args, 1, "attribute");
    const Getter get = attribute && !attribute->is_none() ? attribute_getter(*attribute) : Getter([](const Value& x) { return x; });
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
        if (!first) out += separator;
        first = false;
        out += to_str(get(item));
        r.check_size(out.size());
    }
    return Value(out);
}

Value filter_indent(Renderer& r, const Value& v, CallArgs& args) {
    check_arguments("indent", args, 3, {"width", "first", "blank"});
    const Value width = argument_or(args, 0, "width", Value(4));
    const std::string indention = width.is_string() ? width.as_string() : std::string(static_cast<size_t>(std::max<int64_t>(width.as_int(), 0)), ' ');
    const bool first = truthy(argument_or(args, 1, "first", Value(false)));
    const bool blank = truthy(argument_or(args, 2, "blank", Value(false)));
    // Jinja2 appends a newline before splitting, so a trailing newline survives.
    CallArgs none;
    const Value lines_value = get_attribute(Value(to_str(v) + "\n"), "splitlines");
    const std::vector<Value> lines = r.call(lines_value, none).as_list().items;
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i].as_string();
        if (i > 0) out += "\n";
        if (i > 0 && (blank || !line.empty())) out += indention;
        out += line;
    }
    if (first) out = indention + out;
    r.check_size(out.size());
    return Value(out, v.is_markup());
}

Value filter_int(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("int", args, 2, {"default", "base"});
    const Value fallback = argument_or(args, 0, "default", Value(0));
    const int64_t base = argument_or(args, 1, "base", Value(10)).as_int();
    if (v.is_integral()) return Value(v.as_int());
    if (v.is_float()) return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : fallback;
    if (!v.is_string()) return fallback;
    std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    std::string clean;
    for (char c : s)
        if (c != '_') clean.push_back(c);
    if (!clean.empty()) {
        char* end = nullptr;
        errno = 0;
        const long long parsed = std::strtoll(clean.c_str(), &end, static_cast<int>(base));
        if (errno == 0 && end && *end == '\0') return Value(static_cast<int64_t>(parsed));
        end = nullptr;
        const double d = std::strtod(clean.c_str(), &end);
        if (end && *end == '\0' && std::isfinite(d)) return Value(static_cast<int64_t>(d));
    }
    return fallback;
}

Value filter_float(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("float", args, 1, {"default"});
    const Value fallback = argument_or(args, 0, "default", Value(0.0));
    if (v.is_number()) return Value(v.as_double());
    if (!v.is_string()) return fallback;
    const std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    return !s.empty() && end && *end == '\0' ? Value(d) : fallback;
}

Value filter_round(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("round", args, 2, {"precision", "method"});
    const int64_t precision = argument_or(args, 0, "precision", Value(0)).as_int();
    const std::string method = to_str(argument_or(args, 1, "method", Value("common")));
    if (method != "common" && method != "ceil" && method != "floor")
        raise("FilterArgumentError", "method must be common, ceil or floor");
    if (!v.is_number()) type_error("type " + type_name(v) + " doesn't define __round__ method");
    if (method == "common") {
        if (v.is_integral()) return Value(v.as_int());
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), v.as_double());
        return Value(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double scaled = v.as_double() * scale;
    return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Value filter_truncate(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("truncate", args, 4, {"length", "killwords", "end", "leeway"});
    const std::u32string s = utf8_decode(to_str(v));
    const int64_t length = argument_or(args, 0, "length", Value(255)).as_int();
    const bool killwords = truthy(argument_or(args, 1, "killwords", Value(false)));
    const std::string end = to_str(argument_or(args, 2, "end", Value("...")));
    const Value leeway_value = argument_or(args, 3, "leeway", Value::none());
    const int64_t leeway = leeway_value.is_none() ? 5 : leeway_value.as_int();
    if (static_cast<int64_t>(s.size()) <= length + leeway) return Value(to_str(v));
    const int64_t keep = std::max<int64_t>(length - utf8_length(end), 0);
    std::string head = utf8_encode(s.substr(0, static_cast<size_t>(keep)));
    if (!killwords) {
        const size_t space = head.rfind(' ');
        if (space != std::string::npos) head.resize(space);
    }
    return Value(head + end);
}

Value filter_sum(Renderer& r, const Value& v, CallArgs& args) {
    check_arguments("sum", args, 2, {"attribute", "start"});
    std::optional<Value> attribute = argument(args, 0, "attribute");
    const Getter get = attribute && !attribute->is_none() ? attribute_getter(*attribute) : Getter([](const Value& x) { return x; });
    Value total = argument_or(args, 1, "start", Value(0));
    for (const Value& item : iterate(v)) total = binary_operator("+", total, get(item), r);
    return total;
}

Value filter_reverse(Renderer&, const Value& v, CallArgs&) {
    if (v.is_string()) {
        std::u32string s = utf8_decode(v.as_string());
        std::reverse(s.begin(), s.end());
        return Value(utf8_encode(s), v.is_markup());
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
}

Value filter_batch(Renderer&, const Value& v, CallArgs& args) {
    check_arguments("batch", args, 2, {"linecount", "fill_with"});
    const int64_t size = argument_or(args, 0, "linecount", Value(1)).as_int();
    if (size <= 0) raise("ValueError", "batch size must be positive");
    std::optional<Value> fill = argument(args, 1, "fill_with");
    std::vector<Value> batches, current;
    for (const Value& item : iterate(v)) {
        current.push_back(item);
        if (static_cast<int64_t>(current.size()) == size) {
            batches.push_back(Value::list(std::move(current)));
            current.clear();
        }
    }
    if (!current.empty()) {
        while (fill && !fill->is_none() && static_cast<int64_t>(current.size()) < size) current.push_back(*fill);
        batches.push_back(Value::list(std::move(current)));
    }
    return Value::list(std::move(batches));
}

Value filter_wordcount(Renderer&, const Value& v, CallArgs&) {
    int64_t words = 0;
    bool in_word = false;
    for (char32_t c : utf8_decode(to_str(v))) {
        const bool word_char = c == '_' || (c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : !py_isspace(c));
        if (word_char && !in_word) ++words;
        in_word = word_char;
    }
    return Value(words);
}

Value filter_first(Renderer&, const Value& v, CallArgs&) {
    const std::vector<Value> items = iterate(v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value filter_last(Renderer&, const Value& v, CallArgs&) {
    if (v.object_as<Generator>()) type_error("'generator' object is not reversible");  // Jinja2: next(reversed(seq))
    const std::vector<Value> items = iterate(v);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value filter_format(Renderer&, const Value& v, CallArgs& args) {
    if (!args.positional.empty() && !args.keyword.empty())
        raise("FilterArgumentError", "can't handle positional and keyword arguments at the same time");
    if (!args.keyword.empty()) {
        DictData kwargs;
        for (const auto& [k, val] : args.keyword) kwargs.set(Value(k), val);
        return Value(percent_format(to_str(v), Value::dict(std::move(kwargs))));
    }
    return Value(percent_format(to_str(v), Value::list(args.positional, true)));
}

// Filters that are str methods of the value's text; Markup stays Markup.
Value call_str_method(Renderer& r, const Value& v, const char* method, CallArgs& args) {
    const Value out = r.call(get_attribute(Value(to_str(v)), method), args);
    return Value(out.as_string(), v.is_markup());
}

Value filter_replace(Renderer& r, const Value& v, CallArgs& args) {
    check_arguments("replace", args, 3, {"old", "new", "count"});
    CallArgs call;
    call.positional = {Value(to_str(argument_or(args, 0, "old", Value("")))), Value(to_str(argument_or(args, 1, "new", Value(""))))};
    const Value count = argument_or(args, 2, "count", Value::none());
    if (!count.is_none()) call.positional.push_back(count);
    return r.call(get_attribute(Value(to_str(v)), "replace"), call);
}

const std::unordered_map<std::string, FilterFn>& filters() {
    static const std::unordered_map<std::string, FilterFn> table = {
        {"abs", [](Renderer&, const Value& v, CallArgs&) {
             if (!v.is_number()) type_error("bad operand type for abs(): '" + type_name(v) + "'");
             return v.is_float() ? Value(std::fabs(v.as_double())) : Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         }},
        // getattr() only: unlike obj.name, a dict's keys are not attributes here.
        {"attr", [](Renderer&, const Value& v, CallArgs& args) {
             if (v.is_undefined()) v.raise_undefined();
             return get_attribute(v, to_str(argument_or(args, 0, "name", Value(""))), false);
         }},
        {"batch", filter_batch},
        {"capitalize", [](Renderer& r, const Value& v, CallArgs& a) { return call_str_method(r, v, "capitalize", a); }},
        {"center", [](Renderer& r, const Value& v, CallArgs& a) { return call_str_method(r, v, "center", a); }},
        {"count", [](Renderer&, const Value& v, CallArgs&) { return Value(length(v)); }},
        {"d", filter_default},
        {"default", filter_default},
        {"dictsort", filter_dictsort},
        {"e", [](Renderer&, const Value& v, CallArgs&) { return v.is_markup() ? v : Value(html_escape(to_str(v)), true); }},
        {"escape", [](Renderer&, const Value& v, CallArgs&) { return v.is_markup() ? v : Value(html_escape(to_str(v)), true); }},
        {"filesizeformat", filter_filesizeformat},
        {"first", filter_first},
        {"float", filter_float},
        {"forceescape", [](Renderer&, const Value& v, CallArgs&) { return Value(html_escape(to_str(v)), true); }},
        {"format", filter_format},
        {"indent", filter_indent},
        {"int", filter_int},
        {"items", filter_items},
        {"join", filter_join},
        {"last", filter_last},
        {"length", [](Renderer&, const Value& v, CallArgs&) { return Value(length(v)); }},
        {"list", [](Renderer&, const Value& v, CallArgs&) { return Value::list(iterate(v)); }},
        {"lower", [](Renderer& r, const Value& v, CallArgs& a) { return call_str_method(r, v, "lower", a); }},
        {"map", filter_map},
        {"max", filter_max},
        {"min", filter_min},
        {"random", [](Renderer&, const Value& v, CallArgs&) {
             const std::vector<Value> items = iterate(v);
             if (items.empty()) return Value::undefined("No random item, sequence was empty.");
             static thread_local std::mt19937_64 rng{std::random_device{}()};
             return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng)];
         }},
        {"reject", [](Renderer& r, const Value& v, CallArgs& a) { return filter_select(r, v, a, false, false); }},
        {"rejectattr", [](Renderer& r, const Value& v, CallArgs& a) { return filter_select(r, v, a, true, false); }},
        {"replace", filter_replace},
        {"reverse", filter_reverse},
        {"round", filter_round},
        {"safe", [](Renderer&, const Value& v, CallArgs&) { return Value(to_str(v), true); }},
        {"select", [](Renderer& r, const Value& v, CallArgs& a) { return filter_select(r, v, a, false, true); }},
        {"selectattr", [](Renderer& r, const Value& v, CallArgs& a) { return filter_select(r, v, a, true, true); }},
        {"sort", filter_sort},
        {"string", [](Renderer&, const Value& v, CallArgs&) { return Value(to_str(v), v.is_markup()); }},
        {"sum", filter_sum},
        {"title", [](Renderer& r, const Value& v, CallArgs& a) { return call_str_method(r, v, "title", a); }},
        {"tojson", filter_tojson},
        {"trim", [](Renderer& r, const Value& v, CallArgs& a) { return call_str_method(r, v, "strip", a); }},
        {"truncate", filter_truncate},
        {"unique", filter_unique},
        {"upper", [](Renderer& r, const Value& v, CallArgs& a) { return call_str_method(r, v, "upper", a); }},
        {"wordcount", filter_wordcount},
    };
    return table;
}

}  // namespace

FilterFn find_filter(const std::string& name) {
    auto it = filters().find(name);
    return it == filters().end() ? nullptr : it->second;
}

}  // namespace k3::jinja
