// Recursive-descent parser following Jinja2's parser.py, operator for operator.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/lexer.h"

namespace k3::jinja {
namespace {

using TT = Token::Type;

// Deeper expression nesting than this is refused rather than risking the C++ stack
// (Jinja2 itself hits Python's recursion limit far earlier).
constexpr int kMaxExpressionDepth = 300;

ExprPtr make_expr(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
}

int64_t parse_integer_literal(const std::string& digits) {
    std::string clean;
    for (char c : digits)
        if (c != '_') clean.push_back(c);
    int base = 10;
    size_t start = 0;
    if (clean.size() > 1 && clean[0] == '0' && std::isalpha(static_cast<unsigned char>(clean[1]))) {
        const char b = static_cast<char>(std::tolower(static_cast<unsigned char>(clean[1])));
        base = b == 'x' ? 16 : (b == 'o' ? 8 : 2);
        start = 2;
    }
    errno = 0;
    const long long v = std::strtoll(clean.c_str() + start, nullptr, base);
    if (errno == ERANGE) raise("OverflowError", "integer literal too large: " + digits);
    return v;
}

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Body parse() { return subparse({}); }

private:
    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead = 1) const {
        return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
    }
    void advance() {
        if (pos_ + 1 < tokens_.size()) ++pos_;
    }
    bool is_op(std::string_view op) const { return current().type == TT::Operator && current().text == op; }
    bool is_name(std::string_view name) const { return current().type == TT::Name && current().text == name; }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (!is_name(name)) return false;
        advance();
        return true;
    }

    [[noreturn]] void fail(const std::string& message, int line) const {
        raise("TemplateSyntaxError", message + " (line " + std::to_string(line) + ")");
    }

    static std::string describe(const Token& t) {
        switch (t.type) {
            case TT::Data: return "template data / text";
            case TT::VariableBegin: return "begin of print statement";
            case TT::VariableEnd: return "end of print statement";
            case TT::BlockBegin: return "begin of statement block";
            case TT::BlockEnd: return "end of statement block";
            case TT::End: return "end of template";
            default: return t.text;
        }
    }

    void expect_op(std::string_view op) {
        if (!skip_op(op)) fail("expected token '" + std::string(op) + "', got '" + describe(current()) + "'", current().line);
    }
    void expect(TT type, const char* what) {
        if (current().type != type) fail(std::string("expected token '") + what + "', got '" + describe(current()) + "'", current().line);
        advance();
    }
    std::string expect_name() {
        if (current().type != TT::Name) fail("expected token 'name', got '" + describe(current()) + "'", current().line);
        std::string name = current().text;
        advance();
        return name;
    }
    void expect_block_end() { expect(TT::BlockEnd, "end of statement block"); }

    // ---- statements ----

    // Parses until a block whose first name is in end_names; leaves current() at that name.
    Body subparse(std::initializer_list<std::string_view> end_names) {
        Body body;
        while (current().type != TT::End) {
            const Token& t = current();
            if (t.type == TT::Data) {
                auto s = make_stmt(StmtKind::Text, t.line);
                s->text = t.text;
                body.push_back(std::move(s));
                advance();
            } else if (t.type == TT::VariableBegin) {
                advance();
                auto s = make_stmt(StmtKind::Print, t.line);
                s->expr = parse_tuple(true, {}, false);
                expect(TT::VariableEnd, "end of print statement");
                body.push_back(std::move(s));
            } else if (t.type == TT::BlockBegin) {
                advance();
                if (current().type == TT::Name)
                    for (std::string_view end : end_names)
                        if (current().text == end) return body;
                body.push_back(parse_statement());
            } else {
                fail("unexpected '" + describe(t) + "'", t.line);
            }
        }
        if (end_names.size() > 0) {
            std::string names;
            for (std::string_view n : end_names) names += (names.empty() ? "'" : " or '") + std::string(n) + "'";
            fail("Unexpected end of template. Jinja was looking for the following tags: " + names +
                     ". The innermost block that needs to be closed is '" + std::string(block_stack_.empty() ? "" : block_stack_.back()) + "'.",
                 current().line);
        }
        return body;
    }

    static std::unique_ptr<Stmt> make_stmt(StmtKind kind, int line) {
        auto s = std::make_unique<Stmt>();
        s->kind = kind;
        s->line = line;
        return s;
    }

    std::unique_ptr<Stmt> parse_statement() {
        const Token& t = current();
        if (t.type != TT::Name) fail("tag name expected", t.line);
        const std::string tag = t.text;
        const int line = t.line;
        advance();
        block_stack_.push_back(tag);
        std::unique_ptr<Stmt> s;
        if (tag == "for") s = parse_for(line);
        else if (tag == "if") s = parse_if(line);
        else if (tag == "set") s = parse_set(line);
        else if (tag == "macro") s = parse_macro(line);
        else if (tag == "filter") s = parse_filter_block(line);
        else if (tag == "with") s = parse_with(line);
        else if (tag == "generation") s = parse_generation(line);
        else if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) fail(std::string("'") + tag + "' outside loop", line);
            s = make_stmt(tag == "break" ? StmtKind::Break : StmtKind::Continue, line);
            expect_block_end();
        } else {
            fail("Encountered unknown tag '" + tag + "'.", line);
        }
        block_stack_.pop_back();
        return s;
    }

    // Consumes "{% end_name %}" after subparse stopped at end_name.
    void end_block(std::string_view end_name) {
        if (!skip_name(end_name)) fail("expected '" + std::string(end_name) + "'", current().line);
        expect_block_end();
    }

    std::unique_ptr<Stmt> parse_for(int line) {
        auto s = make_stmt(StmtKind::For, line);
        s->target = parse_assign_target(true, {"in"}, false);
        if (!skip_name("in")) fail("expected 'in'", current().line);
        s->expr = parse_tuple(false, {"recursive"}, false);
        if (skip_name("if")) s->loop_filter = parse_expression(true);
        if (skip_name("recursive")) s->recursive = true;
        expect_block_end();
        const int saved_depth = loop_depth_;
        loop_depth_ = 1;
        s->body = subparse({"endfor", "else"});
        loop_depth_ = saved_depth;
        if (skip_name("else")) {
            expect_block_end();
            s->else_body = subparse({"endfor"});
        }
        end_block("endfor");
        return s;
    }

    std::unique_ptr<Stmt> parse_if(int line) {
        auto s = make_stmt(StmtKind::If, line);
        s->conditions.push_back(parse_tuple(false, {}, false));
        expect_block_end();
        s->bodies.push_back(subparse({"elif", "else", "endif"}));
        while (true) {
            if (skip_name("elif")) {
                s->conditions.push_back(parse_tuple(false, {}, false));
                expect_block_end();
                s->bodies.push_back(subparse({"elif", "else", "endif"}));
            } else if (skip_name("else")) {
                expect_block_end();
                s->else_body = subparse({"endif"});
                end_block("endif");
                return s;
            } else {
                end_block("endif");
                return s;
            }
        }
    }

    std::unique_ptr<Stmt> parse_set(int line) {
        Target target = parse_assign_target(true, {}, true);
        if (skip_op("=")) {
            auto s = make_stmt(StmtKind::Set, line);
            s->target = std::move(target);
            s->expr = parse_tuple(true, {}, false);
            expect_block_end();
            return s;
        }
        auto s = make_stmt(StmtKind::SetBlock, line);
        s->target = std::move(target);
        if (is_op("|")) s->expr = parse_filter(nullptr, false);
        expect_block_end();
        s->body = subparse({"endset"});
        end_block("endset");
        return s;
    }

    std::unique_ptr<Stmt> parse_macro(int line) {
        auto s = make_stmt(StmtKind::Macro, line);
        s->name = expect_name();
        expect_op("(");
        while (!is_op(")")) {
            if (!s->params.empty()) expect_op(",");
            if (is_op(")")) break;
            s->params.push_back(expect_name());
            if (skip_op("=")) {
                s->defaults.push_back(parse_expression(true));
            } else {
                if (!s->defaults.empty() && s->defaults.back()) fail("non-default argument follows default argument", line);
                s->defaults.push_back(nullptr);
            }
        }
        expect_op(")");
        expect_block_end();
        const int saved_depth = loop_depth_;
        loop_depth_ = 0;
        s->body = subparse({"endmacro"});
        loop_depth_ = saved_depth;
        end_block("endmacro");
        return s;
    }

    std::unique_ptr<Stmt> parse_filter_block(int line) {
        auto s = make_stmt(StmtKind::FilterBlock, line);
        s->expr = parse_filter(nullptr, true);
        expect_block_end();
        s->body = subparse({"endfilter"});
        end_block("endfilter");
        return s;
    }

    std::unique_ptr<Stmt> parse_with(int line) {
        auto s = make_stmt(StmtKind::Scope, line);
        while (current().type != TT::BlockEnd) {
            if (!s->assignments.empty()) expect_op(",");
            Target target = parse_assign_target(true, {}, false);
            expect_op("=");
            s->assignments.emplace_back(std::move(target), parse_expression(true));
        }
        expect_block_end();
        s->body = subparse({"endwith"});
        end_block("endwith");
        return s;
    }

    // transformers' {% generation %}: a call block whose body renders unchanged, in its own scope.
    std::unique_ptr<Stmt> parse_generation(int line) {
        auto s = make_stmt(StmtKind::Scope, line);
        expect_block_end();
        const int saved_depth = loop_depth_;
        loop_depth_ = 0;
        s->body = subparse({"endgeneration"});
        loop_depth_ = saved_depth;
        end_block("endgeneration");
        return s;
    }

    Target parse_assign_target(bool with_tuple, std::initializer_list<std::string_view> extra_end, bool with_namespace) {
        const int line = current().line;
        if (with_namespace && current().type == TT::Name && peek().type == TT::Operator && peek().text == ".") {
            Target t;
            t.kind = Target::Kind::Attribute;
            t.name = expect_name();
            advance();
            t.attribute = expect_name();
            return t;
        }
        ExprPtr e = with_tuple ? parse_tuple(true, extra_end, false, true) : parse_primary();
        return to_target(*e, line);
    }

    Target to_target(const Expr& e, int line) {
        Target t;
        if (e.kind == ExprKind::Name) {
            t.name = e.name;
            if (t.name == "true" || t.name == "false" || t.name == "none" || t.name == "True" ||
                t.name == "False" || t.name == "None")
                fail("Can't assign to special constant '" + t.name + "'", line);
            return t;
        }
        if (e.kind == ExprKind::Tuple) {
            t.kind = Target::Kind::Tuple;
            for (const auto& item : e.args) t.items.push_back(to_target(*item, line));
            return t;
        }
        fail("can't assign to '" + std::string(e.kind == ExprKind::Literal ? "Const" : "expression") + "'", line);
    }

    // ---- expressions ----

    struct DepthGuard {
        explicit DepthGuard(Parser& p) : parser(p) {
            if (++parser.expr_depth_ > kMaxExpressionDepth)
                parser.fail("expression nested too deeply", parser.current().line);
        }
        ~DepthGuard() { --parser.expr_depth_; }
        Parser& parser;
    };

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    ExprPtr parse_condexpr() {
        ExprPtr expr1 = parse_or();
        while (is_name("if")) {
            const int line = current().line;
            advance();
            ExprPtr cond = parse_or();
            ExprPtr expr3;
            if (skip_name("else")) expr3 = parse_condexpr();
            auto e = make_expr(ExprKind::Conditional, line);
            e->args.push_back(std::move(expr1));
            e->args.push_back(std::move(cond));
            e->args.push_back(std::move(expr3));
            expr1 = std::move(e);
        }
        return expr1;
    }

    ExprPtr binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op = {}) {
        auto e = make_expr(kind, line);
        e->name = std::move(op);
        e->args.push_back(std::move(left));
        e->args.push_back(std::move(right));
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const int line = current().line;
            advance();
            left = binary(ExprKind::Or, std::move(left), parse_and(), line);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const int line = current().line;
            advance();
            left = binary(ExprKind::And, std::move(left), parse_not(), line);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            const int line = current().line;
            advance();
            DepthGuard guard(*this);
            auto e = make_expr(ExprKind::Not, line);
            e->args.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const int line = current().line;
        ExprPtr first = parse_math1();
        std::vector<ExprPtr> operands;
        std::vector<std::string> ops;
        while (true) {
            const Token& t = current();
            if (t.type == TT::Operator && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
                ops.push_back(t.text);
                advance();
            } else if (is_name("in")) {
                ops.push_back("in");
                advance();
            } else if (is_name("not") && peek().type == TT::Name && peek().text == "in") {
                ops.push_back("notin");
                advance();
                advance();
            } else {
                break;
            }
            operands.push_back(parse_math1());
        }
        if (ops.empty()) return first;
        auto e = make_expr(ExprKind::Compare, line);
        e->args.push_back(std::move(first));
        for (auto& o : operands) e->args.push_back(std::move(o));
        e->ops = std::move(ops);
        return e;
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const std::string op = current().text;
            const int line = current().line;
            advance();
            left = binary(ExprKind::Binary, std::move(left), parse_concat(), line, op);
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            const int line = current().line;
            advance();
            left = binary(ExprKind::Binary, std::move(left), parse_math2(), line, "~");
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const std::string op = current().text;
            const int line = current().line;
            advance();
            left = binary(ExprKind::Binary, std::move(left), parse_pow(), line, op);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const int line = current().line;
            advance();
            left = binary(ExprKind::Binary, std::move(left), parse_unary(true), line, "**");
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        const int line = current().line;
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            const bool negate = is_op("-");
            advance();
            node = make_expr(negate ? ExprKind::Negate : ExprKind::Plus, line);
            node->args.push_back(parse_unary(false));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr literal(Value v, int line) {
        auto e = make_expr(ExprKind::Literal, line);
        e->literal = std::move(v);
        return e;
    }

    ExprPtr parse_primary() {
        DepthGuard guard(*this);
        const Token& t = current();
        const int line = t.line;
        if (t.type == TT::Name) {
            const std::string name = t.text;
            advance();
            if (name == "true" || name == "True") return literal(Value(true), line);
            if (name == "false" || name == "False") return literal(Value(false), line);
            if (name == "none" || name == "None") return literal(Value::none(), line);
            auto e = make_expr(ExprKind::Name, line);
            e->name = name;
            return e;
        }
        if (t.type == TT::String) {
            std::string s = t.text;
            advance();
            while (current().type == TT::String) {
                s += current().text;
                advance();
            }
            return literal(Value(std::move(s)), line);
        }
        if (t.type == TT::Integer) {
            const int64_t v = parse_integer_literal(t.text);
            advance();
            return literal(Value(v), line);
        }
        if (t.type == TT::Float) {
            std::string clean;
            for (char c : t.text)
                if (c != '_') clean.push_back(c);
            advance();
            return literal(Value(std::strtod(clean.c_str(), nullptr)), line);
        }
        if (skip_op("(")) {
            ExprPtr e = parse_tuple(true, {}, true);
            expect_op(")");
            return e;
        }
        if (skip_op("[")) {
            auto e = make_expr(ExprKind::List, line);
            while (!is_op("]")) {
                if (!e->args.empty()) expect_op(",");
                if (is_op("]")) break;
                e->args.push_back(parse_expression(true));
            }
            expect_op("]");
            return e;
        }
        if (skip_op("{")) {
            auto e = make_expr(ExprKind::Dict, line);
            while (!is_op("}")) {
                if (!e->args.empty()) expect_op(",");
                if (is_op("}")) break;
                e->args.push_back(parse_expression(true));
                expect_op(":");
                e->args.push_back(parse_expression(true));
            }
            expect_op("}");
            return e;
        }
        fail("unexpected '" + describe(t) + "'", line);
    }

    bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
        const Token& t = current();
        if (t.type == TT::VariableEnd || t.type == TT::BlockEnd || t.type == TT::End) return true;
        if (t.type == TT::Operator && t.text == ")") return true;
        if (t.type == TT::Name)
            for (std::string_view n : extra_end)
                if (t.text == n) return true;
        return false;
    }

    // Jinja2's parse_tuple: "a, b" without parentheses makes a tuple in print/for/set.
    ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                        bool explicit_parentheses, bool simplified = false) {
        const int line = current().line;
        std::vector<ExprPtr> args;
        bool is_tuple = false;
        while (true) {
            if (!args.empty()) expect_op(",");
            if (is_tuple_end(extra_end)) break;
            args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
            if (is_op(",")) is_tuple = true;
            else break;
        }
        if (!is_tuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicit_parentheses) fail("Expected an expression, got '" + describe(current()) + "'", line);
        }
        auto e = make_expr(ExprKind::Tuple, line);
        e->args = std::move(args);
        return e;
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
            else if (is_op("(")) node = parse_call(std::move(node));
            else return node;
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) node = parse_filter(std::move(node), false);
            else if (is_name("is")) node = parse_test(std::move(node));
            else if (is_op("(")) node = parse_call(std::move(node));
            else return node;
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const int line = current().line;
        if (skip_op(".")) {
            if (current().type == TT::Name) {
                auto e = make_expr(ExprKind::Attribute, line);
                e->name = current().text;
                advance();
                e->args.push_back(std::move(node));
                return e;
            }
            if (current().type != TT::Integer) fail("expected name or number", line);
            auto e = make_expr(ExprKind::Item, line);
            e->args.push_back(std::move(node));
            e->args.push_back(literal(Value(parse_integer_literal(current().text)), line));
            advance();
            return e;
        }
        expect_op("[");
        std::vector<ExprPtr> keys;
        while (!is_op("]")) {
            if (!keys.empty()) expect_op(",");
            keys.push_back(parse_subscribed());
        }
        expect_op("]");
        if (keys.size() == 1 && keys[0]->kind == ExprKind::Slice) {
            keys[0]->args[0] = std::move(node);
            return std::move(keys[0]);
        }
        auto e = make_expr(ExprKind::Item, line);
        e->args.push_back(std::move(node));
        if (keys.size() == 1) {
            e->args.push_back(std::move(keys[0]));
        } else {
            auto tuple = make_expr(ExprKind::Tuple, line);
            tuple->args = std::move(keys);
            e->args.push_back(std::move(tuple));
        }
        return e;
    }

    // One subscript: an expression, or a slice start:stop:step (returned as a Slice whose
    // args[0] the caller fills with the sliced object).
    ExprPtr parse_subscribed() {
        const int line = current().line;
        ExprPtr start;
        if (!is_op(":")) {
            start = parse_expression(true);
            if (!is_op(":")) return start;
        }
        advance();
        auto e = make_expr(ExprKind::Slice, line);
        e->args.push_back(nullptr);
        e->args.push_back(std::move(start));
        e->args.push_back(!is_op("]") && !is_op(",") && !is_op(":") ? parse_expression(true) : nullptr);
        ExprPtr step;
        if (skip_op(":") && !is_op("]") && !is_op(",")) step = parse_expression(true);
        e->args.push_back(std::move(step));
        return e;
    }

    void parse_call_args(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (current().type == TT::Name && peek().type == TT::Operator && peek().text == "=") {
                std::string key = current().text;
                advance();
                advance();
                e.kwargs.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!e.kwargs.empty()) fail("positional argument follows keyword argument", current().line);
                e.args.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr node) {
        auto e = make_expr(ExprKind::Call, current().line);
        e->args.push_back(std::move(node));
        parse_call_args(*e);
        return e;
    }

    std::string parse_dotted_name() {
        std::string name = expect_name();
        while (is_op(".") && peek().type == TT::Name) {
            advance();
            name += '.';
            name += expect_name();
        }
        return name;
    }

    ExprPtr parse_filter(ExprPtr node, bool start_inline) {
        while (is_op("|") || start_inline) {
            if (!start_inline) advance();
            start_inline = false;
            auto e = make_expr(ExprKind::Filter, current().line);
            e->name = parse_dotted_name();
            e->args.push_back(std::move(node));
            if (is_op("(")) parse_call_args(*e);
            node = std::move(e);
        }
        return node;
    }

    ExprPtr parse_test(ExprPtr node) {
        const int line = current().line;
        advance();  // "is"
        const bool negated = skip_name("not");
        auto e = make_expr(ExprKind::Test, line);
        e->name = parse_dotted_name();
        e->args.push_back(std::move(node));
        const Token& t = current();
        if (is_op("(")) {
            parse_call_args(*e);
        } else if ((t.type == TT::Name || t.type == TT::String || t.type == TT::Integer || t.type == TT::Float ||
                    is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) fail("You cannot chain multiple tests with is", t.line);
            e->args.push_back(parse_postfix(parse_primary()));
        }
        if (!negated) return e;
        auto n = make_expr(ExprKind::Not, line);
        n->args.push_back(std::move(e));
        return n;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int loop_depth_ = 0;
    int expr_depth_ = 0;
    std::vector<std::string> block_stack_;
};

// Jinja2 compiles an unknown filter or test into a runtime error only inside an if-statement
// or an inline if (a "soft" frame); anywhere else the template fails to compile. The same walk
// notes which macros read `varargs` / `kwargs`.
class Checker {
public:
    void body(Body& stmts, bool soft) {
        for (const auto& s : stmts) stmt(*s, soft);
    }

private:
    void stmt(Stmt& s, bool soft) {
        switch (s.kind) {
            case StmtKind::If:
                for (const auto& c : s.conditions) expr(c.get(), true);
                for (auto& b : s.bodies) body(b, true);
                body(s.else_body, true);
                break;
            case StmtKind::For:
                expr(s.expr.get(), soft);
                expr(s.loop_filter.get(), false);
                body(s.body, false);
                body(s.else_body, false);
                break;
            case StmtKind::Macro: {
                for (const auto& d : s.defaults) expr(d.get(), false);
                const bool saved_varargs = reads_varargs_, saved_kwargs = reads_kwargs_;
                reads_varargs_ = reads_kwargs_ = false;
                body(s.body, false);
                s.catch_varargs = reads_varargs_;
                s.catch_kwargs = reads_kwargs_;
                reads_varargs_ = saved_varargs;
                reads_kwargs_ = saved_kwargs;
                break;
            }
            case StmtKind::SetBlock:
            case StmtKind::FilterBlock:
            case StmtKind::Scope:
                expr(s.expr.get(), false);
                for (const auto& a : s.assignments) expr(a.second.get(), soft);
                body(s.body, false);
                break;
            default: expr(s.expr.get(), soft);
        }
    }

    void expr(const Expr* e, bool soft) {
        if (!e) return;
        if (e->kind == ExprKind::Conditional) soft = true;
        if (e->kind == ExprKind::Name && e->name == "varargs") reads_varargs_ = true;
        if (e->kind == ExprKind::Name && e->name == "kwargs") reads_kwargs_ = true;
        if (!soft && e->kind == ExprKind::Filter && !find_filter(e->name))
            raise("TemplateAssertionError", "No filter named '" + e->name + "'.");
        if (!soft && e->kind == ExprKind::Test && !find_test(e->name))
            raise("TemplateAssertionError", "No test named '" + e->name + "'.");
        for (const auto& a : e->args) expr(a.get(), soft);
        for (const auto& kw : e->kwargs) expr(kw.second.get(), soft);
    }

    bool reads_varargs_ = false;
    bool reads_kwargs_ = false;
};

}  // namespace

std::shared_ptr<const Template> parse_template(std::string_view source) {
    auto t = std::make_shared<Template>();
    t->body = Parser(tokenize(source)).parse();
    Checker().body(t->body, false);
    return t;
}

}  // namespace k3::jinja
