// JSON schema -> GBNF, for constrained decoding of JSON answers (OpenAI's response_format,
// llama-server's json_schema, tool-call arguments).
//
// Supported: type (one or a list), properties / required (properties in the order declared),
// additionalProperties (false, true or a schema; extra keys are generated only for an object
// with no declared properties, so a generated key never repeats a declared one), items /
// minItems / maxItems, enum, const, anyOf, oneOf (as anyOf: which branch matches is not made
// exclusive), a one-element allOf, $ref to #/$defs/... or #/definitions/..., string minLength /
// maxLength and format date, time, date-time and uuid; annotations (title, description,
// default, examples, ...) are ignored. Anything else is refused with a k3::Error naming the
// keyword and where in the schema it is, rather than generating output the schema rejects.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace k3::grammar {

// The grammar's root rule matches exactly the JSON texts (with bounded whitespace) that
// validate against `schema`.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// The same, parsed.
std::shared_ptr<const Grammar> json_schema_grammar(const nlohmann::ordered_json& schema);

}  // namespace k3::grammar
