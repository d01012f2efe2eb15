// The interpreter: renders a parsed template with Jinja2's scoping (a for-loop iteration,
// macro call, with/generation block and set-block each get their own scope; if does not),
// loop controls, macros and recursive loops, with guards on call depth and output size and
// budgets of work and memory.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "jinja/ast.h"
#include "jinja/budget.h"

namespace k3::jinja {

struct RenderOptions {
    std::tm now{};                           // what strftime_now() formats
    size_t max_output_bytes = size_t{256} << 20;
    int max_call_depth = 400;
    RenderBudget budget;
};

// What a render has spent of its budgets.
struct RenderUsage {
    uint64_t work = 0;
    uint64_t value_bytes = 0;
};

struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
    const Value* find(const std::string& name) const;
};
using ScopePtr = std::shared_ptr<Scope>;

class Renderer {
public:
    explicit Renderer(RenderOptions options) : options_(options) {}
    ~Renderer();
    Renderer(const Renderer&) = delete;
    Renderer& operator=(const Renderer&) = delete;

    // variables are the top-level names (a key absent is undefined).
    std::string render(const Template& tmpl, const DictData& variables);

    Value call(const Value& callee, CallArgs& args);
    Value apply_filter(const std::string& name, const Value& subject, CallArgs& args);
    bool apply_test(const std::string& name, const Value& subject, CallArgs& args);
    Value call_macro(const Stmt& macro, const ScopePtr& closure, CallArgs& args);
    // A recursive loop's loop(items): renders the loop body over items one level deeper.
    std::string run_loop(const Stmt& loop, const Value& iterable, const ScopePtr& scope, int depth);

    const RenderOptions& options() const { return options_; }
    const RenderUsage& usage() const { return usage_; }
    // Raises when a string of this many bytes would exceed the output limit.
    void check_size(size_t bytes) const;
    // Registers a namespace so that reference cycles through it are broken after rendering.
    void track(const std::shared_ptr<Object>& object);

private:
    enum class Flow { Normal, Break, Continue };
    Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out);
    Flow exec(const Stmt& stmt, const ScopePtr& scope, std::string& out);
    void exec_for(const Stmt& stmt, const Value& iterable, const ScopePtr& scope, std::string& out, int depth);
    void assign(const Target& target, const Value& value, Scope& scope, const ScopePtr& lookup);
    Value eval(const Expr& expr, const ScopePtr& scope);  // charges the budgets, then eval_node
    Value eval_node(const Expr& expr, const ScopePtr& scope);
    void charge_work();
    void charge_bytes(uint64_t bytes);
    Value eval_call(const Expr& expr, const ScopePtr& scope);
    void eval_arguments(const Expr& expr, size_t first, const ScopePtr& scope, CallArgs& args);
    ScopePtr new_scope(const ScopePtr& parent);
    void append(std::string& out, const std::string& text) const;
    void release();

    RenderOptions options_;
    int depth_ = 0;
    RenderUsage usage_;
    // Everything that may sit in a reference cycle, for release(); entries that expired are
    // dropped whenever a list has doubled, so a long loop does not keep its dead scopes.
    std::vector<std::weak_ptr<Scope>> scopes_;
    std::vector<std::weak_ptr<Object>> objects_;
    size_t scopes_compacted_ = 0, objects_compacted_ = 0;  // sizes after the last compaction
};

}  // namespace k3::jinja
