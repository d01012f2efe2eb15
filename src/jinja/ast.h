// The parsed form of a Jinja template: expressions and statements, as Jinja2's parser builds
// them (nodes.py), reduced to what the renderer needs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace k3::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
    Literal,      // literal
    Name,         // name
    List,         // args
    Tuple,        // args
    Dict,         // args: key, value, key, value, ...
    Attribute,    // args[0].name
    Item,         // args[0][args[1]]
    Slice,        // args[0][args[1]:args[2]:args[3]] (null = omitted)
    Call,         // args[0](args[1..], kwargs)
    Filter,       // args[0]|name(args[1..], kwargs); args[0] null in a filter block
    Test,         // args[0] is name(args[1..], kwargs)
    Negate,       // -args[0]
    Plus,         // +args[0]
    Not,          // not args[0]
    Binary,       // args[0] name args[1]: + - * / // % ** ~
    Compare,      // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
    And,          // args[0] and args[1]
    Or,           // args[0] or args[1]
    Conditional,  // args[0] if args[1] else args[2] (args[2] null: no else)
};

struct Expr {
    ExprKind kind;
    int line = 0;
    Value literal;
    std::string name;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;
};

// An assignment target: a name, a (nested) tuple of names, or namespace.attribute.
struct Target {
    enum class Kind { Name, Tuple, Attribute };
    Kind kind = Kind::Name;
    std::string name;
    std::string attribute;
    std::vector<Target> items;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

enum class StmtKind {
    Text,         // text
    Print,        // {{ expr }}
    If,           // conditions[i] -> bodies[i]; else_body
    For,          // for target in expr [if loop_filter] [recursive]: body; else_body
    Set,          // set target = expr
    SetBlock,     // set target [| expr (filter chain)]: body
    Macro,        // macro name(params = defaults): body
    FilterBlock,  // filter expr (filter chain): body
    Scope,        // with assignments: body; also transformers' generation tag
    Break,
    Continue,
};

struct Stmt {
    StmtKind kind;
    int line = 0;
    std::string text;
    ExprPtr expr;
    std::vector<ExprPtr> conditions;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    Target target;
    ExprPtr loop_filter;
    bool recursive = false;
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // one per param; null when the param has no default
    bool catch_varargs = false;     // the macro body reads `varargs` / `kwargs`
    bool catch_kwargs = false;
    std::vector<std::pair<Target, ExprPtr>> assignments;
};

class Template {
public:
    Body body;
};

// Parses a template; throws TemplateError (TemplateSyntaxError, or TemplateAssertionError for an
// unknown filter/test outside an if-statement or inline if, as Jinja2 does at compile time).
std::shared_ptr<const Template> parse_template(std::string_view source);

}  // namespace k3::jinja
