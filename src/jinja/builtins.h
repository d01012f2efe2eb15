// Jinja2's filters, tests, globals and the Python methods templates call (str, dict, list),
// as ImmutableSandboxedEnvironment exposes them, plus transformers' additions.
#pragma once

#include <ctime>
#include <initializer_list>
#include <optional>
#include <string>

#include "jinja/value.h"

namespace k3::jinja {

using FilterFn = Value (*)(Renderer& renderer, const Value& subject, CallArgs& args);
using TestFn = bool (*)(Renderer& renderer, const Value& subject, CallArgs& args);

FilterFn find_filter(const std::string& name);  // null when unknown
TestFn find_test(const std::string& name);

// The global names: range, dict, namespace, joiner, cycler, raise_exception, strftime_now.
DictData make_globals(const std::tm& now);

// Sandboxed attribute / item access (Environment.getattr / getitem): methods of str, dict and
// list; unsafe (mutating) methods give a SecurityError undefined; a missing one an undefined
// that names it.
// with_items false is Python's getattr() alone (the attr filter): a dict's keys are not found.
Value get_attribute(const Value& object, const std::string& name, bool with_items = true);
Value get_item(const Value& object, const Value& key);

// Python-style argument binding for builtins: the i-th positional or the keyword `name`.
std::optional<Value> argument(const CallArgs& args, size_t index, const char* name);
Value argument_or(const CallArgs& args, size_t index, const char* name, Value fallback);
// Raises TypeError when args holds more positionals than max_positional or a keyword not in
// names (a null-terminated list).
void check_arguments(const char* function, const CallArgs& args, size_t max_positional,
                     std::initializer_list<const char*> names);

// Python's operators on values: + - * / // % ** ~ (op), unary - and + (op '-' / '+'), and the
// comparisons == != < <= > >= in notin. String results are checked against the output limit.
Value binary_operator(const std::string& op, const Value& a, const Value& b, const Renderer& renderer);
Value unary_operator(char op, const Value& v);
bool compare_operator(const std::string& op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);

// Python's str % args (printf-style) and str.format(*args, **kwargs).
std::string percent_format(const std::string& format, const Value& args);
std::string brace_format(const std::string& format, const CallArgs& args);

}  // namespace k3::jinja
