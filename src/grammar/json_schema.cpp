#include "grammar/json_schema.h"

#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "grammar/gbnf_parser.h"
#include "util/error.h"

namespace k3::grammar {

namespace {

using Json = nlohmann::ordered_json;

// The JSON value grammar every schema builds on. Whitespace is bounded (as llama.cpp's is) so
// that a model cannot fill its whole answer with it.
constexpr std::string_view kPrimitives[][2] = {
    {"ws", R"(| " " | "\n" [ \t]{0,20})"},
    {"char", R"([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))"},
    {"string", R"("\"" char* "\"" ws)"},
    {"integer", R"("-"? ("0" | [1-9] [0-9]{0,15}) ws)"},
    {"number", R"("-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws)"},
    {"boolean", R"(("true" | "false") ws)"},
    {"null", R"("null" ws)"},
    {"value", R"(object | array | string | number | boolean | null)"},
    {"object", R"("{" ws (string ":" ws value ("," ws string ":" ws value)*)? "}" ws)"},
    {"array", R"("[" ws (value ("," ws value)*)? "]" ws)"},
    {"date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))"},
    {"time", R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
    {"hex4", R"([0-9a-fA-F]{4})"},
};

const std::set<std::string_view> kAnnotations = {
    "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
    "readOnly", "writeOnly", "$defs", "definitions", "strict",
};

class Converter {
public:
    explicit Converter(const Json& root) : root_(root) {}

    std::string convert() {
        const std::string body = visit(root_, "");
        std::string out = "root ::= " + body + "\n";
        for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& path, const std::string& what) const {
        throw Error("json_schema: " + what + " at " + (path.empty() ? std::string("the root") : path));
    }

    // A primitive rule (and what it uses), added on first use.
    std::string primitive(std::string_view name) {
        for (const auto& [rule, body] : kPrimitives) {
            if (rule != name) continue;
            if (rules_.emplace(std::string(rule), std::string(body)).second) {
                // Add what its body refers to.
                for (const auto& [other, unused] : kPrimitives)
                    if (other != rule && body.find(other) != std::string_view::npos) primitive(other);
            }
            return std::string(name);
        }
        throw Error("json_schema: internal: no primitive " + std::string(name));
    }

    std::string new_rule(const std::string& path, std::string body) {
        std::string name = "s";
        for (char c : path) name += (std::isalnum(uint8_t(c)) ? c : '-');
        const std::string base = name;
        for (int n = 2; rules_.contains(name); ++n) name = base + "-" + std::to_string(n);
        rules_[name] = std::move(body);
        return name;
    }

    std::string visit(const Json& schema, const std::string& path) {
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) fail(path, "the schema 'false' matches nothing");
            return primitive("value");
        }
        if (!schema.is_object()) fail(path, "a schema must be an object or a boolean");
        for (const auto& [key, unused] : schema.items()) {
            static const std::set<std::string_view> kHandled = {
                "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
                "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "minLength", "maxLength", "format"};
            if (!kHandled.contains(key) && !kAnnotations.contains(key)) fail(path + "/" + key, "'" + key + "' is not supported");
        }
        if (auto ref = schema.find("$ref"); ref != schema.end()) return reference(*ref, path);
        if (auto value = schema.find("const"); value != schema.end()) return gbnf_literal(value->dump()) + " " + primitive("ws");
        if (auto values = schema.find("enum"); values != schema.end()) {
            if (!values->is_array() || values->empty()) fail(path + "/enum", "'enum' must be a non-empty array");
            std::string body;
            for (const Json& v : *values) body += (body.empty() ? "" : " | ") + gbnf_literal(v.dump());
            primitive("ws");
            return new_rule(path + "/enum", "(" + body + ") ws");
        }
        for (const char* key : {"anyOf", "oneOf", "allOf"}) {
            auto branches = schema.find(key);
            if (branches == schema.end()) continue;
            if (!branches->is_array() || branches->empty()) fail(path + "/" + key, std::string("'") + key + "' must be a non-empty array");
            if (std::string_view(key) == "allOf" && branches->size() != 1)
                fail(path + "/allOf", "'allOf' with more than one schema is not supported");
            std::string body;
            for (size_t i = 0; i < branches->size(); ++i)
                body += (i ? " | " : "") + visit((*branches)[i], path + "/" + key + "/" + std::to_string(i));
            return new_rule(path + "/" + key, body);
        }
        auto type = schema.find("type");
        if (type == schema.end()) {
            if (schema.contains("properties") || schema.contains("additionalProperties")) return typed("object", schema, path);
            if (schema.contains("items")) return typed("array", schema, path);
            return primitive("value");
        }
        if (type->is_string()) return typed(type->get<std::string>(), schema, path);
        if (!type->is_array() || type->empty()) fail(path + "/type", "'type' must be a string or a non-empty array of strings");
        std::string body;
        for (const Json& t : *type) {
            if (!t.is_string()) fail(path + "/type", "'type' must be a string or a non-empty array of strings");
            body += (body.empty() ? "" : " | ") + typed(t.get<std::string>(), schema, path);
        }
        return new_rule(path + "/type", body);
    }

    std::string reference(const Json& ref, const std::string& path) {
        if (!ref.is_string()) fail(path + "/$ref", "'$ref' must be a string");
        const std::string target = ref.get<std::string>();
        if (auto known = refs_.find(target); known != refs_.end()) return known->second;
        for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
            if (!target.starts_with(prefix)) continue;
            const std::string container = std::string(prefix).substr(2, std::string(prefix).size() - 3);
            const std::string name = target.substr(std::string(prefix).size());
            auto defs = root_.find(container);
            if (defs == root_.end() || !defs->is_object() || !defs->contains(name))
                fail(path + "/$ref", "'$ref' names '" + target + "', which the schema does not define");
            // Named before it is visited, so that a recursive definition refers to itself.
            const std::string rule = new_rule("/" + container + "/" + name, "");
            refs_[target] = rule;
            rules_[rule] = visit((*defs)[name], "/" + container + "/" + name);
            return rule;
        }
        fail(path + "/$ref", "only local references (#/$defs/NAME, #/definitions/NAME) are supported, not '" + target + "'");
    }

    std::optional<uint64_t> count(const Json& schema, const char* key, const std::string& path) {
        auto it = schema.find(key);
        if (it == schema.end()) return std::nullopt;
        if (!it->is_number_unsigned()) fail(path + "/" + key, std::string("'") + key + "' must be a non-negative integer");
        return it->get<uint64_t>();
    }

    static std::string repetition(const std::string& item, uint64_t min, std::optional<uint64_t> max) {
        return "(" + item + "){" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "}";
    }

    std::string typed(const std::string& type, const Json& schema, const std::string& path) {
        if (type == "string") return string_rule(schema, path);
        if (type == "integer" || type == "number" || type == "boolean" || type == "null") return primitive(type);
        if (type == "array") return array_rule(schema, path);
        if (type == "object") return object_rule(schema, path);
        fail(path + "/type", "unknown type '" + type + "'");
    }

    std::string string_rule(const Json& schema, const std::string& path) {
        if (auto format = schema.find("format"); format != schema.end()) {
            const std::string name = format->is_string() ? format->get<std::string>() : "";
            std::string body;
            if (name == "date" || name == "time") body = primitive(name);
            else if (name == "date-time") body = primitive("date") + " \"T\" " + primitive("time");
            else if (name == "uuid") {
                const std::string h = primitive("hex4");
                body = h + " " + h + " \"-\" " + h + " \"-\" " + h + " \"-\" " + h + " \"-\" " + h + " " + h + " " + h;
            } else {
                fail(path + "/format", "string format " + format->dump() + " is not supported (date, time, date-time, uuid)");
            }
            primitive("ws");
            return new_rule(path + "/format", "\"\\\"\" " + body + " \"\\\"\" ws");
        }
        const std::optional<uint64_t> min = count(schema, "minLength", path), max = count(schema, "maxLength", path);
        if (!min && !max) return primitive("string");
        if (max && *max < min.value_or(0)) fail(path, "'maxLength' is below 'minLength'");
        primitive("char");
        primitive("ws");
        return new_rule(path + "/string", "\"\\\"\" " + repetition("char", min.value_or(0), max) + " \"\\\"\" ws");
    }

    std::string array_rule(const Json& schema, const std::string& path) {
        const std::optional<uint64_t> min = count(schema, "minItems", path), max = count(schema, "maxItems", path);
        if (max && *max < min.value_or(0)) fail(path, "'maxItems' is below 'minItems'");
        auto items = schema.find("items");
        const std::string item = items == schema.end() ? primitive("value") : visit(*items, path + "/items");
        primitive("ws");
        const uint64_t lo = min.value_or(0);
        if (max && *max == 0) return new_rule(path + "/array", "\"[\" ws \"]\" ws");
        // first item, then (n - 1) more each after a comma
        const std::string rest = repetition("\",\" ws " + item, lo > 0 ? lo - 1 : 0, max ? std::optional(*max - 1) : std::nullopt);
        const std::string items_body = item + " " + rest;
        return new_rule(path + "/array", "\"[\" ws " + (lo == 0 ? "(" + items_body + ")?" : items_body) + " \"]\" ws");
    }

    std::string object_rule(const Json& schema, const std::string& path) {
        std::vector<std::pair<std::string, std::string>> members;  // (key, value rule)
        std::vector<bool> required;
        std::set<std::string> required_names;
        if (auto list = schema.find("required"); list != schema.end()) {
            if (!list->is_array()) fail(path + "/required", "'required' must be an array of strings");
            for (const Json& name : *list) {
                if (!name.is_string()) fail(path + "/required", "'required' must be an array of strings");
                required_names.insert(name.get<std::string>());
            }
        }
        primitive("ws");
        std::set<std::string> declared;
        if (auto properties = schema.find("properties"); properties != schema.end()) {
            if (!properties->is_object()) fail(path + "/properties", "'properties' must be an object");
            for (const auto& [key, sub] : properties->items()) {
                members.emplace_back(key, visit(sub, path + "/properties/" + key));
                required.push_back(required_names.contains(key));
                declared.insert(key);
            }
        }
        for (const std::string& name : required_names)  // required but not described: any value
            if (!declared.contains(name)) {
                members.emplace_back(name, primitive("value"));
                required.push_back(true);
            }
        if (members.empty()) {
            auto extra = schema.find("additionalProperties");
            if (extra == schema.end() || (extra->is_boolean() && extra->get<bool>())) return primitive("object");
            if (extra->is_boolean()) return new_rule(path + "/object", "\"{\" ws \"}\" ws");
            const std::string value = visit(*extra, path + "/additionalProperties");
            const std::string pair = primitive("string") + " \":\" ws " + value;
            return new_rule(path + "/object", "\"{\" ws (" + pair + " (\",\" ws " + pair + ")*)? \"}\" ws");
        }
        // Members in declared order, each optional one skippable. after(i): members i.. once one
        // was written (each needs a comma); first(i): members i.. before any was written.
        const size_t n = members.size();
        std::vector<std::string> after(n + 1), first(n + 1);
        auto pair = [&](size_t i) { return gbnf_literal(Json(members[i].first).dump()) + " ws \":\" ws " + members[i].second; };
        for (size_t i = n; i-- > 0;) {
            const std::string next_after = after[i + 1].empty() ? "" : " " + after[i + 1];
            const std::string with_comma = "\",\" ws " + pair(i) + next_after;
            after[i] = new_rule(path + "/after-" + std::to_string(i), required[i] ? with_comma : with_comma + " | " + (after[i + 1].empty() ? "\"\"" : after[i + 1]));
            const std::string here = pair(i) + next_after;
            first[i] = new_rule(path + "/first-" + std::to_string(i),
                                required[i] ? here : here + " | " + (first[i + 1].empty() ? "\"\"" : first[i + 1]));
        }
        return new_rule(path + "/object", "\"{\" ws " + first[0] + " \"}\" ws");
    }

    const Json& root_;
    std::map<std::string, std::string> rules_;
    std::map<std::string, std::string> refs_;
};

}  // namespace

std::string json_schema_to_gbnf(const Json& schema) {
    return Converter(schema).convert();
}

std::shared_ptr<const Grammar> json_schema_grammar(const Json& schema) {
    return parse_gbnf(json_schema_to_gbnf(schema));
}

}  // namespace k3::grammar
