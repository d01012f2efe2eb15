// The error a template raises, named as Jinja2/Python names it.
#pragma once

#include <string>

#include "util/error.h"

namespace k3::jinja {

// kind is the Python exception class Jinja2 would raise: TemplateError (raise_exception),
// TemplateSyntaxError, TemplateAssertionError, TemplateRuntimeError, UndefinedError,
// SecurityError, TypeError, ValueError, ZeroDivisionError, OverflowError, RecursionError.
// what() is Python's str(exception); a syntax error adds " (line N)".
class TemplateError : public k3::Error {
public:
    TemplateError(std::string kind, const std::string& message)
        : k3::Error(message), kind_(std::move(kind)) {}
    const std::string& kind() const { return kind_; }

private:
    std::string kind_;
};

// A render that ran out of its work or memory budget (budget.h): a fault of the template
// (or of what it was given), which a server reports apart from a request's own errors.
class BudgetExceeded : public TemplateError {
public:
    using TemplateError::TemplateError;
};

[[noreturn]] inline void raise(const char* kind, const std::string& message) {
    throw TemplateError(kind, message);
}
[[noreturn]] inline void type_error(const std::string& message) { raise("TypeError", message); }

}  // namespace k3::jinja
