#include "jinja/render.h"

#include "jinja/builtins.h"
#include "jinja/strings.h"

namespace k3::jinja {

const Value* Scope::find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
}

namespace {

class MacroObject : public Object {
public:
    MacroObject(const Stmt* macro, ScopePtr closure) : macro_(macro), closure_(std::move(closure)) {}
    std::string type_name() const override { return "Macro"; }
    std::string repr() const override { return "<Macro '" + macro_->name + "'>"; }
    bool is_callable() const override { return true; }
    Value call(Renderer& renderer, CallArgs& args) override { return renderer.call_macro(*macro_, closure_, args); }
    Value get_attr(const std::string& name) const override {
        if (name == "name") return Value(macro_->name);
        return Object::get_attr(name);
    }

private:
    const Stmt* macro_;
    ScopePtr closure_;
};

// Jinja2's LoopContext.
class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
public:
    LoopObject(std::vector<Value> items, int depth, const Stmt* loop, ScopePtr scope)
        : items_(std::move(items)), depth_(depth), loop_(loop), scope_(std::move(scope)) {}

    void set_index(size_t i) { index_ = i; }
    std::string type_name() const override { return "LoopContext"; }
    std::string repr() const override {
        return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_.size()) + ">";
    }
    bool is_callable() const override { return loop_->recursive; }

    Value get_attr(const std::string& name) const override {
        const auto n = static_cast<int64_t>(items_.size());
        const auto i = static_cast<int64_t>(index_);
        if (name == "index") return Value(i + 1);
        if (name == "index0") return Value(i);
        if (name == "revindex") return Value(n - i);
        if (name == "revindex0") return Value(n - i - 1);
        if (name == "first") return Value(i == 0);
        if (name == "last") return Value(i == n - 1);
        if (name == "length") return Value(n);
        if (name == "depth") return Value(int64_t{depth_});
        if (name == "depth0") return Value(int64_t{depth_ - 1});
        if (name == "previtem") return i > 0 ? items_[index_ - 1] : Value::undefined("there is no previous item");
        if (name == "nextitem") return i + 1 < n ? items_[index_ + 1] : Value::undefined("there is no next item");
        if (name == "cycle" || name == "changed") return Value::object(std::make_shared<LoopMethod>(shared_from_this(), name));
        return Value::undefined("'LoopContext object' has no attribute '" + name + "'");
    }

    Value call(Renderer& renderer, CallArgs& args) override {
        if (!loop_->recursive) return Object::call(renderer, args);
        if (args.positional.size() != 1 || !args.keyword.empty())
            type_error("loop() takes exactly one argument");
        return Value(renderer.run_loop(*loop_, args.positional[0], scope_, depth_ + 1));
    }

    void release() override { scope_.reset(); }

private:
    class LoopMethod : public Object {
    public:
        LoopMethod(std::shared_ptr<const LoopObject> loop, std::string name) : loop_(std::move(loop)), name_(std::move(name)) {}
        std::string type_name() const override { return "method"; }
        bool is_callable() const override { return true; }
        Value call(Renderer&, CallArgs& args) override {
            if (name_ == "cycle") {
                if (args.positional.empty()) type_error("no items for cycling given");
                return args.positional[loop_->index_ % args.positional.size()];
            }
            Value current = Value::list(args.positional, true);
            const bool changed = !loop_->has_last_changed_ || !equals(current, loop_->last_changed_);
            loop_->last_changed_ = current;
            loop_->has_last_changed_ = true;
            return Value(changed);
        }

    private:
        std::shared_ptr<const LoopObject> loop_;
        std::string name_;
    };

    std::vector<Value> items_;
    size_t index_ = 0;
    int depth_;
    const Stmt* loop_;
    ScopePtr scope_;
    mutable Value last_changed_;  // loop.changed()'s memory
    mutable bool has_last_changed_ = false;
};

// Raises the SecurityError / UndefinedError an undefined value carries when it is used.
const Value& defined_or_raise(const Value& v) {
    if (v.is_undefined()) v.raise_undefined();
    return v;
}

}  // namespace

Renderer::~Renderer() { release(); }

void Renderer::release() {
    for (auto& weak : scopes_)
        if (auto scope = weak.lock()) scope->vars.clear();
    for (auto& weak : objects_)
        if (auto object = weak.lock()) object->release();
    scopes_.clear();
    objects_.clear();
}

namespace {

// Appends `item`, first dropping expired entries once the list has doubled since the last time.
template <class T>
void remember(std::vector<std::weak_ptr<T>>& list, size_t& compacted, const std::shared_ptr<T>& item) {
    if (list.size() >= 2 * compacted + 64) {
        std::erase_if(list, [](const std::weak_ptr<T>& weak) { return weak.expired(); });
        compacted = list.size();
    }
    list.push_back(item);
}

}  // namespace

void Renderer::track(const std::shared_ptr<Object>& object) { remember(objects_, objects_compacted_, object); }

ScopePtr Renderer::new_scope(const ScopePtr& parent) {
    // Not make_shared: a weak_ptr in scopes_ would keep the whole block of a dead scope alive.
    auto scope = std::shared_ptr<Scope>(new Scope);
    scope->parent = parent;
    remember(scopes_, scopes_compacted_, scope);
    return scope;
}

void Renderer::check_size(size_t bytes) const {
    if (bytes > options_.max_output_bytes)
        raise("TemplateRuntimeError", "rendered output exceeds the limit of " +
                                          std::to_string(options_.max_output_bytes) + " bytes");
}

void Renderer::charge_work() {
    if (++usage_.work > options_.budget.max_work)
        throw BudgetExceeded("TemplateRuntimeError", "the template exceeded its work budget of " +
                                                         std::to_string(options_.budget.max_work) +
                                                         " steps (statements, expressions and loop iterations)");
}

void Renderer::charge_bytes(uint64_t bytes) {
    usage_.value_bytes += bytes;
    if (usage_.value_bytes > options_.budget.max_value_bytes)
        throw BudgetExceeded("TemplateRuntimeError", "the template exceeded its memory budget of " +
                                                         std::to_string(options_.budget.max_value_bytes) +
                                                         " bytes of values");
}

void Renderer::append(std::string& out, const std::string& text) const {
    check_size(out.size() + text.size());
    out += text;
}

std::string Renderer::render(const Template& tmpl, const DictData& variables) {
    struct ReleaseGuard {
        Renderer& r;
        ~ReleaseGuard() { r.release(); }
    } guard{*this};
    auto globals = new_scope(nullptr);
    for (auto& [key, value] : make_globals(options_.now).items) globals->vars[key.as_string()] = value;
    auto context = new_scope(globals);
    for (const auto& [key, value] : variables.items) context->vars[to_str(key)] = value;
    auto root = new_scope(context);
    std::string out;
    exec_body(tmpl.body, root, out);
    return out;
}

Renderer::Flow Renderer::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const auto& stmt : body) {
        const Flow flow = exec(*stmt, scope, out);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

Renderer::Flow Renderer::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
    charge_work();
    switch (s.kind) {
        case StmtKind::Text: append(out, s.text); break;
        case StmtKind::Print: append(out, to_str(eval(*s.expr, scope))); break;
        case StmtKind::If:
            for (size_t i = 0; i < s.conditions.size(); ++i)
                if (truthy(eval(*s.conditions[i], scope))) return exec_body(s.bodies[i], scope, out);
            return exec_body(s.else_body, scope, out);
        case StmtKind::For: exec_for(s, eval(*s.expr, scope), scope, out, 1); break;
        case StmtKind::Set: assign(s.target, eval(*s.expr, scope), *scope, scope); break;
        case StmtKind::SetBlock: {
            std::string text;
            exec_body(s.body, new_scope(scope), text);
            Value value(std::move(text));
            if (s.expr) {
                // The filter chain's innermost subject (null) stands for the block's text.
                std::vector<const Expr*> chain;
                for (const Expr* e = s.expr.get(); e; e = e->args[0].get()) chain.push_back(e);
                for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                    CallArgs args;
                    eval_arguments(**it, 1, scope, args);
                    value = apply_filter((*it)->name, value, args);
                }
            }
            assign(s.target, value, *scope, scope);
            break;
        }
        case StmtKind::Macro:
            scope->vars[s.name] = Value::object(std::make_shared<MacroObject>(&s, scope));
            break;
        case StmtKind::FilterBlock: {
            auto inner = new_scope(scope);
            std::string text;
            exec_body(s.body, inner, text);
            Value value(std::move(text));
            std::vector<const Expr*> chain;
            for (const Expr* e = s.expr.get(); e; e = e->args[0].get()) chain.push_back(e);
            for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                CallArgs args;
                eval_arguments(**it, 1, inner, args);
                value = apply_filter((*it)->name, value, args);
            }
            append(out, to_str(value));
            break;
        }
        case StmtKind::Scope: {
            auto inner = new_scope(scope);
            for (const auto& [target, value] : s.assignments) assign(target, eval(*value, scope), *inner, inner);
            std::string text;
            exec_body(s.body, inner, text);
            append(out, text);
            break;
        }
        case StmtKind::Break: return Flow::Break;
        case StmtKind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
}

void Renderer::exec_for(const Stmt& s, const Value& iterable, const ScopePtr& scope, std::string& out, int depth) {
    std::vector<Value> items = iterate(iterable);
    if (s.loop_filter) {
        std::vector<Value> kept;
        for (auto& item : items) {
            charge_work();
            auto test_scope = new_scope(scope);
            assign(s.target, item, *test_scope, test_scope);
            if (truthy(eval(*s.loop_filter, test_scope))) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        exec_body(s.else_body, new_scope(scope), out);
        return;
    }
    auto loop = std::make_shared<LoopObject>(items, depth, &s, scope);
    track(loop);
    const Value loop_value = Value::object(loop);
    for (size_t i = 0; i < items.size(); ++i) {
        charge_work();
        loop->set_index(i);
        auto iteration = new_scope(scope);
        assign(s.target, items[i], *iteration, iteration);
        iteration->vars["loop"] = loop_value;
        if (exec_body(s.body, iteration, out) == Flow::Break) break;
    }
}

std::string Renderer::run_loop(const Stmt& loop, const Value& iterable, const ScopePtr& scope, int depth) {
    if (++depth_ > options_.max_call_depth) {
        --depth_;
        raise("RecursionError", "maximum recursion depth exceeded (" + std::to_string(options_.max_call_depth) + " nested calls)");
    }
    std::string out;
    exec_for(loop, iterable, scope, out, depth);
    --depth_;
    return out;
}

void Renderer::assign(const Target& target, const Value& value, Scope& scope, const ScopePtr& lookup) {
    switch (target.kind) {
        case Target::Kind::Name: scope.vars[target.name] = value; return;
        case Target::Kind::Tuple: {
            const std::vector<Value> items = iterate(value);
            const size_t want = target.items.size();
            if (items.size() < want)
                raise("ValueError", "not enough values to unpack (expected " + std::to_string(want) + ", got " +
                                        std::to_string(items.size()) + ")");
            if (items.size() > want)
                raise("ValueError", "too many values to unpack (expected " + std::to_string(want) + ")");
            for (size_t i = 0; i < want; ++i) assign(target.items[i], items[i], scope, lookup);
            return;
        }
        case Target::Kind::Attribute: {
            const Value* ns = lookup->find(target.name);
            if (!ns || !ns->is_object() || !ns->as_object().set_attr(target.attribute, value))
                raise("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
            return;
        }
    }
}

Value Renderer::call(const Value& callee, CallArgs& args) {
    defined_or_raise(callee);
    if (!callee.is_object() || !callee.as_object().is_callable())
        type_error(std::string("'") + type_name(callee) + "' object is not callable");
    return callee.as_object().call(*this, args);
}

Value Renderer::apply_filter(const std::string& name, const Value& subject, CallArgs& args) {
    const FilterFn filter = find_filter(name);
    if (!filter) raise("TemplateRuntimeError", "No filter named '" + name + "' found.");
    return filter(*this, subject, args);
}

bool Renderer::apply_test(const std::string& name, const Value& subject, CallArgs& args) {
    const TestFn test = find_test(name);
    if (!test) raise("TemplateRuntimeError", "No test named '" + name + "' found.");
    return test(*this, subject, args);
}

Value Renderer::call_macro(const Stmt& macro, const ScopePtr& closure, CallArgs& args) {
    if (++depth_ > options_.max_call_depth) {
        --depth_;
        raise("RecursionError", "maximum recursion depth exceeded (" + std::to_string(options_.max_call_depth) + " nested calls)");
    }
    struct DepthGuard {
        int& depth;
        ~DepthGuard() { --depth; }
    } guard{depth_};
    auto scope = new_scope(closure);
    const size_t n_params = macro.params.size();
    if (args.positional.size() > n_params && !macro.catch_varargs)
        type_error("macro '" + macro.name + "' takes not more than " + std::to_string(n_params) + " argument(s)");
    std::vector<bool> given(n_params, false);
    for (size_t i = 0; i < n_params && i < args.positional.size(); ++i) {
        scope->vars[macro.params[i]] = args.positional[i];
        given[i] = true;
    }
    DictData extra_kwargs;
    for (auto& [key, value] : args.keyword) {
        size_t i = 0;
        while (i < n_params && macro.params[i] != key) ++i;
        if (i == n_params) {
            if (!macro.catch_kwargs) type_error("macro '" + macro.name + "' takes no keyword argument '" + key + "'");
            extra_kwargs.set(Value(key), value);
            continue;
        }
        if (given[i]) type_error("macro '" + macro.name + "' got multiple values for argument '" + key + "'");
        scope->vars[key] = value;
        given[i] = true;
    }
    for (size_t i = 0; i < n_params; ++i) {
        if (given[i]) continue;
        scope->vars[macro.params[i]] = macro.defaults[i]
                                           ? eval(*macro.defaults[i], scope)
                                           : Value::undefined("parameter '" + macro.params[i] + "' was not provided");
    }
    if (macro.catch_varargs) {
        std::vector<Value> rest;
        for (size_t i = n_params; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
        scope->vars["varargs"] = Value::list(std::move(rest), true);
    }
    if (macro.catch_kwargs) scope->vars["kwargs"] = Value::dict(std::move(extra_kwargs));
    std::string out;
    exec_body(macro.body, scope, out);
    return Value(std::move(out));
}

void Renderer::eval_arguments(const Expr& expr, size_t first, const ScopePtr& scope, CallArgs& args) {
    for (size_t i = first; i < expr.args.size(); ++i) args.positional.push_back(eval(*expr.args[i], scope));
    for (const auto& [key, value] : expr.kwargs) args.keyword.emplace_back(key, eval(*value, scope));
}

Value Renderer::eval_call(const Expr& expr, const ScopePtr& scope) {
    const Value callee = eval(*expr.args[0], scope);
    CallArgs args;
    eval_arguments(expr, 1, scope, args);
    return call(callee, args);
}

// The bytes a value holds itself (its string, or its slots); what it shares is counted where made.
uint64_t own_bytes(const Value& v) {
    if (v.is_string()) return v.as_string().size();
    if (v.is_list()) return v.as_list().items.size() * sizeof(Value);
    if (v.is_dict()) return v.as_dict().items.size() * 2 * sizeof(Value);
    return 0;
}

Value Renderer::eval(const Expr& e, const ScopePtr& scope) {
    charge_work();
    Value value = eval_node(e, scope);
    // Names, attributes, items, literals and the logical operators pass on existing values.
    switch (e.kind) {
        case ExprKind::List:
        case ExprKind::Tuple:
        case ExprKind::Dict:
        case ExprKind::Slice:
        case ExprKind::Call:
        case ExprKind::Filter:
        case ExprKind::Binary: charge_bytes(own_bytes(value)); break;
        default: break;
    }
    return value;
}

Value Renderer::eval_node(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
        case ExprKind::Literal: return e.literal;
        case ExprKind::Name: {
            const Value* v = scope->find(e.name);
            return v ? *v : Value::undefined(std::string("'") + e.name + "' is undefined");
        }
        case ExprKind::List:
        case ExprKind::Tuple: {
            std::vector<Value> items;
            items.reserve(e.args.size());
            for (const auto& a : e.args) items.push_back(eval(*a, scope));
            return Value::list(std::move(items), e.kind == ExprKind::Tuple);
        }
        case ExprKind::Dict: {
            DictData dict;
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                Value key = eval(*e.args[i], scope);
                if (key.is_list() && !key.as_list().is_tuple) type_error("unhashable type: 'list'");
                if (key.is_dict()) type_error("unhashable type: 'dict'");
                dict.set(std::move(key), eval(*e.args[i + 1], scope));
            }
            return Value::dict(std::move(dict));
        }
        case ExprKind::Attribute: return get_attribute(defined_or_raise(eval(*e.args[0], scope)), e.name);
        case ExprKind::Item: {
            const Value object = eval(*e.args[0], scope);
            defined_or_raise(object);
            return get_item(object, eval(*e.args[1], scope));
        }
        case ExprKind::Slice: {
            const Value object = eval(*e.args[0], scope);
            defined_or_raise(object);
            std::optional<int64_t> bounds[3];
            for (int i = 0; i < 3; ++i) {
                if (!e.args[i + 1]) continue;
                const Value b = eval(*e.args[i + 1], scope);
                if (b.is_none()) continue;
                if (!b.is_integral())
                    type_error("slice indices must be integers or None or have an __index__ method");
                bounds[i] = b.as_int();
            }
            if (bounds[2] && *bounds[2] == 0) raise("ValueError", "slice step cannot be zero");
            if (object.is_string()) {
                const std::u32string text = utf8_decode(object.as_string());
                std::u32string picked;
                for (int64_t i : slice_indices(static_cast<int64_t>(text.size()), bounds[0], bounds[1], bounds[2])) picked.push_back(text[i]);
                return Value(utf8_encode(picked), object.is_markup());
            }
            if (object.is_list() && !object.is_view()) {
                const auto& items = object.as_list().items;
                std::vector<Value> picked;
                for (int64_t i : slice_indices(static_cast<int64_t>(items.size()), bounds[0], bounds[1], bounds[2])) picked.push_back(items[i]);
                return Value::list(std::move(picked), object.as_list().is_tuple);
            }
            // Jinja2 compiles a slice to a plain Python subscript (no sandbox getitem fallback).
            if (object.is_dict()) type_error("unhashable type: 'slice'");
            type_error(std::string("'") + type_name(object) + "' object is not subscriptable");
        }
        case ExprKind::Call: return eval_call(e, scope);
        case ExprKind::Filter: {
            const Value subject = eval(*e.args[0], scope);
            CallArgs args;
            eval_arguments(e, 1, scope, args);
            return apply_filter(e.name, subject, args);
        }
        case ExprKind::Test: {
            const Value subject = eval(*e.args[0], scope);
            CallArgs args;
            eval_arguments(e, 1, scope, args);
            return Value(apply_test(e.name, subject, args));
        }
        case ExprKind::Negate: return unary_operator('-', eval(*e.args[0], scope));
        case ExprKind::Plus: return unary_operator('+', eval(*e.args[0], scope));
        case ExprKind::Not: return Value(!truthy(eval(*e.args[0], scope)));
        case ExprKind::Binary: {
            const Value left = eval(*e.args[0], scope);
            const Value right = eval(*e.args[1], scope);
            return binary_operator(e.name, left, right, *this);
        }
        case ExprKind::Compare: {
            Value left = eval(*e.args[0], scope);
            for (size_t i = 0; i < e.ops.size(); ++i) {
                Value right = eval(*e.args[i + 1], scope);
                if (!compare_operator(e.ops[i], left, right)) return Value(false);
                left = std::move(right);
            }
            return Value(true);
        }
        case ExprKind::And: {
            Value left = eval(*e.args[0], scope);
            return truthy(left) ? eval(*e.args[1], scope) : left;
        }
        case ExprKind::Or: {
            Value left = eval(*e.args[0], scope);
            return truthy(left) ? left : eval(*e.args[1], scope);
        }
        case ExprKind::Conditional:
            if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
            if (e.args[2]) return eval(*e.args[2], scope);
            return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                    " evaluated to false and no else section was defined.");
    }
    return Value();
}

}  // namespace k3::jinja
