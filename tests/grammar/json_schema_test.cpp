// JSON schema -> grammar: hand-written JSON texts that validate (or not) against each schema.
#include <gtest/gtest.h>

#include <string>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "util/error.h"

namespace k3::grammar {
namespace {

using Json = nlohmann::ordered_json;

bool matches(const char* schema, const std::string& text) {
    Matcher matcher(json_schema_grammar(Json::parse(schema)));
    return matcher.accept(text) && matcher.can_end();
}

std::string schema_error(const char* schema) {
    try {
        json_schema_grammar(Json::parse(schema));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(JsonSchema, Primitives) {
    EXPECT_TRUE(matches(R"({"type": "integer"})", "-42"));
    EXPECT_FALSE(matches(R"({"type": "integer"})", "4.2"));
    EXPECT_FALSE(matches(R"({"type": "integer"})", "012"));
    EXPECT_TRUE(matches(R"({"type": "number"})", "4.25e-3"));
    EXPECT_TRUE(matches(R"({"type": "boolean"})", "false"));
    EXPECT_TRUE(matches(R"({"type": "null"})", "null"));
    EXPECT_TRUE(matches(R"({"type": "string"})", R"("a \"quoted\" \u00e9 word")"));
    EXPECT_FALSE(matches(R"({"type": "string"})", "\"raw\nnewline\""));
    EXPECT_TRUE(matches(R"({"type": ["string", "null"]})", "null"));
    EXPECT_FALSE(matches(R"({"type": ["string", "null"]})", "1"));
}

TEST(JsonSchema, ObjectsKeepDeclaredOrderAndRequire) {
    const char* schema = R"({"type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name"], "additionalProperties": false})";
    EXPECT_TRUE(matches(schema, R"({"name": "Ann"})"));
    EXPECT_TRUE(matches(schema, R"({"name":"Ann","age":3})"));
    EXPECT_TRUE(matches(schema, "{\n  \"name\": \"Ann\",\n  \"tags\": [\"a\", \"b\"]\n}"));
    EXPECT_TRUE(matches(schema, R"({"name": "Ann", "age": 3, "tags": []})"));
    EXPECT_FALSE(matches(schema, R"({"age": 3})"));                  // name is required
    EXPECT_FALSE(matches(schema, R"({"name": "Ann", "age": "3"})"));  // wrong type
    EXPECT_FALSE(matches(schema, R"({"name": "Ann", "x": 1})"));      // no additional properties
    EXPECT_FALSE(matches(schema, R"({"name": "Ann",})"));
    EXPECT_FALSE(matches(schema, R"({"name": "Ann", "tags": [1]})"));
}

TEST(JsonSchema, AllOptionalMembers) {
    const char* schema = R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})";
    EXPECT_TRUE(matches(schema, "{}"));
    EXPECT_TRUE(matches(schema, R"({"b": 2})"));
    EXPECT_TRUE(matches(schema, R"({"a": 1, "b": 2})"));
    EXPECT_FALSE(matches(schema, R"({, "b": 2})"));
    EXPECT_FALSE(matches(schema, R"({"b": 2, "a": 1})"));  // declared order only
}

TEST(JsonSchema, MapsAndFreeObjects) {
    EXPECT_TRUE(matches(R"({"type": "object", "additionalProperties": {"type": "integer"}})", R"({"x": 1, "y": 2})"));
    EXPECT_FALSE(matches(R"({"type": "object", "additionalProperties": {"type": "integer"}})", R"({"x": "1"})"));
    EXPECT_TRUE(matches(R"({"type": "object"})", R"({"x": [1, {"y": null}]})"));
    EXPECT_FALSE(matches(R"({"type": "object"})", "[]"));
}

TEST(JsonSchema, ArraysWithBounds) {
    const char* schema = R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})";
    EXPECT_FALSE(matches(schema, "[1]"));
    EXPECT_TRUE(matches(schema, "[1, 2]"));
    EXPECT_TRUE(matches(schema, "[1,2,3]"));
    EXPECT_FALSE(matches(schema, "[1,2,3,4]"));
    EXPECT_TRUE(matches(R"({"type": "array", "maxItems": 0})", "[]"));
    EXPECT_FALSE(matches(R"({"type": "array", "maxItems": 0})", "[1]"));
}

TEST(JsonSchema, EnumConstAndAlternatives) {
    EXPECT_TRUE(matches(R"({"enum": ["red", 3, null]})", R"("red")"));
    EXPECT_TRUE(matches(R"({"enum": ["red", 3, null]})", "3"));
    EXPECT_FALSE(matches(R"({"enum": ["red", 3, null]})", R"("blue")"));
    EXPECT_TRUE(matches(R"({"const": {"k": [1, "a\"b"]}})", R"({"k":[1,"a\"b"]})"));
    const char* any = R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}]})";
    EXPECT_TRUE(matches(any, "7"));
    EXPECT_TRUE(matches(any, R"({"x": true})"));
    EXPECT_FALSE(matches(any, R"("7")"));
}

TEST(JsonSchema, StringLengthsAndFormats) {
    EXPECT_FALSE(matches(R"({"type": "string", "minLength": 2, "maxLength": 3})", R"("a")"));
    EXPECT_TRUE(matches(R"({"type": "string", "minLength": 2, "maxLength": 3})", R"("ab")"));
    EXPECT_FALSE(matches(R"({"type": "string", "minLength": 2, "maxLength": 3})", R"("abcd")"));
    EXPECT_TRUE(matches(R"({"type": "string", "format": "date"})", R"("2026-12-01")"));
    EXPECT_FALSE(matches(R"({"type": "string", "format": "date"})", R"("2026-13-01")"));
    EXPECT_TRUE(matches(R"({"type": "string", "format": "date-time"})", R"("2026-12-01T09:56:23Z")"));
    EXPECT_TRUE(matches(R"({"type": "string", "format": "uuid"})", R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(matches(R"({"type": "string", "format": "uuid"})", R"("123e4567")"));
}

TEST(JsonSchema, LocalReferencesIncludingRecursion) {
    const char* schema = R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}}, "$ref": "#/$defs/node"})";
    EXPECT_TRUE(matches(schema, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
    EXPECT_FALSE(matches(schema, R"({"v": 1, "kids": [{"w": 2}]})"));
}

TEST(JsonSchema, UnsupportedKeywordsAreRefusedByName) {
    EXPECT_EQ(schema_error(R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}})"),
              "json_schema: 'minimum' is not supported at /properties/age/minimum");
    EXPECT_EQ(schema_error(R"({"type": "string", "pattern": "^a+$"})"), "json_schema: 'pattern' is not supported at /pattern");
    EXPECT_EQ(schema_error(R"({"type": "string", "format": "email"})"),
              "json_schema: string format \"email\" is not supported (date, time, date-time, uuid) at /format");
    EXPECT_EQ(schema_error(R"({"type": "decimal"})"), "json_schema: unknown type 'decimal' at /type");
    EXPECT_EQ(schema_error(R"({"$ref": "#/$defs/missing"})"),
              "json_schema: '$ref' names '#/$defs/missing', which the schema does not define at /$ref");
    EXPECT_EQ(schema_error(R"({"$ref": "https://example.com/s.json"})"),
              "json_schema: only local references (#/$defs/NAME, #/definitions/NAME) are supported, not "
              "'https://example.com/s.json' at /$ref");
    EXPECT_EQ(schema_error("false"), "json_schema: the schema 'false' matches nothing at the root");
    EXPECT_EQ(schema_error(R"({"type": "array", "minItems": 3, "maxItems": 1})"), "json_schema: 'maxItems' is below 'minItems' at the root");
}

}  // namespace
}  // namespace k3::grammar
