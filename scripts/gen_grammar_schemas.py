#!/usr/bin/env python3
"""Writes tests/grammar/data/json_schemas.jsonl: the JSON Schema suite of the grammar engine.

Deterministic (a fixed seed; the same file every run). Two parts, written by us:
  * hand-written schemas in the shapes structured-output and tool-calling requests use
    (the shapes of OpenAI / SGLang structured-output examples, function parameters, API
    payloads, recursive trees), each named;
  * generated schemas: random compositions of the keywords the compiler supports (nested
    objects, arrays of objects, enums, const, recursive $ref, formats, numeric ranges,
    minItems / maxItems, minLength / maxLength, pattern, anyOf / oneOf / allOf, prefixItems,
    additionalProperties), sized like real schemas.

Every schema is valid under Draft 2020-12 and uses only what our compiler supports, with the
same meaning as Python's `jsonschema` (so no OpenAPI `nullable`, no draft-4 boolean exclusive
bounds, `oneOf` only over disjoint branches). One schema per line:
  {"id": "<name>", "schema": <schema>}

  python3 scripts/gen_grammar_schemas.py [out.jsonl]
"""
import json
import os
import random
import sys

PATTERNS = [
    r"^[A-Z]{3}-\d{4}$",
    r"^[a-z0-9_]{3,16}$",
    r"^\+?[0-9]{7,12}$",
    r"^#[0-9a-fA-F]{6}$",
    r"^[A-Z][a-z]+( [A-Z][a-z]+){0,2}$",
    r"^v\d+\.\d+\.\d+$",
    r"^(GET|POST|PUT|DELETE)$",
    r"^[a-z]+(-[a-z]+)*$",
    r"^\d{5}(-\d{4})?$",
    r"^[A-Z]{2}\d{2}[A-Z0-9]{4,10}$",
    r"^(\([0-9]{3}\) )?[0-9]{3}-[0-9]{4}$",
    r"^[^@\s]+@[a-z]+\.(com|org|net)$",
]
FORMATS = ["date", "time", "date-time", "email", "uuid", "uri", "ipv4"]
WORDS = [
    "id", "name", "title", "description", "status", "type", "kind", "value", "count", "price",
    "email", "url", "created_at", "updated_at", "tags", "items", "owner", "score", "priority",
    "enabled", "config", "metadata", "address", "city", "country", "zip", "phone", "age",
    "quantity", "unit", "currency", "amount", "label", "category", "notes", "author", "version",
    "path", "method", "timeout", "retries", "language", "summary", "reason", "answer", "steps",
    "confidence", "entities", "children", "parent", "rating", "latitude", "longitude",
]
ENUM_WORDS = [
    ["low", "medium", "high"], ["open", "closed", "pending"], ["red", "green", "blue"],
    ["celsius", "fahrenheit"], ["asc", "desc"], ["positive", "negative", "neutral"],
    ["GET", "POST", "PUT", "PATCH", "DELETE"], ["draft", "published", "archived"],
    ["USD", "EUR", "GBP", "JPY"], ["small", "Medium", "LARGE", "x-large"],
    ["yes", "no"], ["日本", "Ελλάδα", "France"],
]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def string(self):
        r = self.r.random()
        if r < 0.35:
            return {"type": "string"}
        if r < 0.5:
            lo = self.r.randint(0, 5)
            return {"type": "string", "minLength": lo, "maxLength": lo + self.r.randint(0, 30)}
        if r < 0.6:
            return {"type": "string", "maxLength": self.r.choice([1, 8, 20, 64, 100])}
        if r < 0.72:
            return {"type": "string", "pattern": self.pick(PATTERNS)}
        if r < 0.87:
            return {"type": "string", "format": self.pick(FORMATS)}
        return {"type": "string", "enum": list(self.pick(ENUM_WORDS))}

    def integer(self):
        r = self.r.random()
        if r < 0.3:
            return {"type": "integer"}
        if r < 0.55:
            lo = self.r.choice([0, 1, -10, -1000, 18, 100])
            return {"type": "integer", "minimum": lo, "maximum": lo + self.r.choice([1, 9, 99, 5000])}
        if r < 0.7:
            return {"type": "integer", "minimum": self.r.choice([0, 1, 10])}
        if r < 0.8:
            return {"type": "integer", "maximum": self.r.choice([0, 100, -5])}
        return {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": self.r.choice([10, 256, 65536])}

    def number(self):
        r = self.r.random()
        if r < 0.4:
            return {"type": "number"}
        if r < 0.7:
            return {"type": "number", "minimum": 0, "maximum": self.r.choice([1, 5, 100])}
        if r < 0.85:
            return {"type": "number", "minimum": -90, "maximum": 90}
        return {"type": "number", "exclusiveMinimum": 0}

    def leaf(self):
        r = self.r.random()
        if r < 0.4:
            return self.string()
        if r < 0.6:
            return self.integer()
        if r < 0.72:
            return self.number()
        if r < 0.82:
            return {"type": "boolean"}
        if r < 0.86:
            return {"type": "null"}
        if r < 0.9:
            return {"const": self.pick(["v1", 3, True, None, "fixed"])}
        if r < 0.95:
            return {"enum": self.pick([[1, 2, 3], ["a", 1, None], [True, "maybe"], [0.5, 1.5]])}
        return {"type": self.pick([["string", "null"], ["integer", "null"], ["string", "integer"]])}

    def props(self, n):
        names = self.r.sample(WORDS, n)
        return names

    def obj(self, depth):
        n = self.r.randint(1, 6 if depth < 2 else 3)
        names = self.props(n)
        props = {k: self.value(depth + 1) for k in names}
        out = {"type": "object", "properties": props}
        req = [k for k in names if self.r.random() < 0.6]
        if req:
            out["required"] = req
        r = self.r.random()
        if r < 0.45:
            out["additionalProperties"] = False
        elif r < 0.55:
            out["additionalProperties"] = True
        elif r < 0.65:
            out["additionalProperties"] = self.leaf()
        return out

    def arr(self, depth):
        r = self.r.random()
        if r < 0.15:
            out = {"type": "array", "prefixItems": [self.value(depth + 1) for _ in range(self.r.randint(1, 3))]}
            if self.r.random() < 0.5:
                out["items"] = False
            elif self.r.random() < 0.5:
                out["items"] = self.leaf()
                out["maxItems"] = len(out["prefixItems"]) + 2
            return out
        out = {"type": "array", "items": self.value(depth + 1)}
        r = self.r.random()
        if r < 0.3:
            out["minItems"] = self.r.randint(0, 2)
            out["maxItems"] = out["minItems"] + self.r.randint(0, 4)
        elif r < 0.5:
            out["minItems"] = 1
        elif r < 0.6:
            out["maxItems"] = self.r.randint(1, 5)
        return out

    def union(self, depth):
        r = self.r.random()
        if r < 0.4:
            # anyOf over any branches.
            return {"anyOf": [self.value(depth + 1) for _ in range(self.r.randint(2, 3))]}
        if r < 0.75:
            # oneOf over disjoint branches: distinct JSON types (never integer with number), or
            # objects told apart by a required const tag.
            if self.r.random() < 0.5:
                kinds = self.r.sample(["string", "integer", "boolean", "null", "array"], self.r.randint(2, 3))
                branches = []
                for k in kinds:
                    if k == "string":
                        branches.append(self.string())
                    elif k == "integer":
                        branches.append(self.integer())
                    elif k == "array":
                        branches.append({"type": "array", "items": self.leaf(), "maxItems": 3})
                    else:
                        branches.append({"type": k})
                return {"oneOf": branches}
            tags = self.r.sample(["circle", "square", "user", "group", "text", "image"], 2)
            branches = []
            for t in tags:
                b = self.obj(depth + 1)
                b["properties"] = {"kind": {"const": t}, **b["properties"]}
                b["required"] = ["kind"] + [k for k in b.get("required", []) if k != "kind"]
                branches.append(b)
            return {"oneOf": branches}
        # allOf merging object parts.
        a, b = self.obj(depth + 1), self.obj(depth + 1)
        for part in (a, b):
            part.pop("additionalProperties", None)
        b["properties"] = {k: v for k, v in b["properties"].items() if k not in a["properties"]}
        b["required"] = [k for k in b.get("required", []) if k in b["properties"]]
        if not b["properties"]:
            b["properties"] = {"extra_flag": {"type": "boolean"}}
        if not b["required"]:
            del b["required"]
        return {"allOf": [a, b]}

    def value(self, depth):
        if depth >= 3:
            return self.leaf()
        r = self.r.random()
        if r < 0.5:
            return self.leaf()
        if r < 0.7:
            return self.obj(depth)
        if r < 0.87:
            return self.arr(depth)
        return self.union(depth)

    def recursive(self):
        name = self.pick(["node", "item", "entry", "comment"])
        body = self.obj(2)
        body["properties"]["children"] = {
            "type": "array", "items": {"$ref": f"#/$defs/{name}"}, "maxItems": self.r.randint(1, 3)}
        body["additionalProperties"] = False
        return {"$defs": {name: body}, "$ref": f"#/$defs/{name}"}


def hand_written():
    addr = {"type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "zip": {"type": "string", "pattern": r"^\d{5}$"}, "country": {"type": "string", "minLength": 2, "maxLength": 2}},
        "required": ["street", "city"], "additionalProperties": False}
    s = {}
    s["person"] = {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"}, "address": addr},
        "required": ["name", "age"]}
    s["weather_tool"] = {"type": "object", "properties": {
        "location": {"type": "string", "description": "City and state"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["location", "unit"], "additionalProperties": False}
    s["search_tool"] = {"type": "object", "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 200},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 50},
        "site": {"type": "string", "format": "uri"}}, "required": ["query"]}
    s["calendar_event"] = {"type": "object", "properties": {
        "title": {"type": "string"}, "start": {"type": "string", "format": "date-time"},
        "end": {"type": "string", "format": "date-time"},
        "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 5},
        "recurrence": {"enum": ["none", "daily", "weekly", "monthly"]}},
        "required": ["title", "start"], "additionalProperties": False}
    s["send_email"] = {"type": "object", "properties": {
        "to": {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1, "maxItems": 3},
        "subject": {"type": "string", "maxLength": 80}, "body": {"type": "string"},
        "priority": {"enum": ["low", "normal", "high"]}}, "required": ["to", "subject", "body"]}
    s["sql_query"] = {"type": "object", "properties": {
        "table": {"type": "string", "pattern": r"^[a-z_][a-z0-9_]*$"},
        "columns": {"type": "array", "items": {"type": "string", "pattern": r"^[a-z_]+$"}, "minItems": 1},
        "where": {"type": "object", "additionalProperties": {"type": ["string", "integer", "boolean"]}},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000}}, "required": ["table", "columns"]}
    s["product"] = {"type": "object", "properties": {
        "productId": {"type": "integer", "minimum": 1}, "productName": {"type": "string"},
        "price": {"type": "number", "exclusiveMinimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "dimensions": {"type": "object", "properties": {"length": {"type": "number"}, "width": {"type": "number"},
                       "height": {"type": "number"}}, "required": ["length", "width", "height"]}},
        "required": ["productId", "productName", "price"]}
    s["order"] = {"type": "object", "properties": {
        "order_id": {"type": "string", "format": "uuid"},
        "customer": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
                     "required": ["name"]},
        "lines": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string", "pattern": r"^[A-Z]{3}-\d{4}$"}, "qty": {"type": "integer", "minimum": 1, "maximum": 99},
            "unit_price": {"type": "number", "minimum": 0, "maximum": 10000}}, "required": ["sku", "qty"]},
            "minItems": 1, "maxItems": 4},
        "status": {"enum": ["new", "paid", "shipped", "cancelled"]}, "placed": {"type": "string", "format": "date"}},
        "required": ["order_id", "lines", "status"], "additionalProperties": False}
    s["invoice"] = {"type": "object", "properties": {
        "number": {"type": "string", "pattern": r"^INV-\d{6}$"}, "issued": {"type": "string", "format": "date"},
        "currency": {"enum": ["USD", "EUR", "GBP"]}, "total": {"type": "number", "minimum": 0, "maximum": 1000000},
        "paid": {"type": "boolean"}, "billing": addr}, "required": ["number", "issued", "total"]}
    s["recipe"] = {"type": "object", "properties": {
        "name": {"type": "string"}, "servings": {"type": "integer", "minimum": 1, "maximum": 12},
        "ingredients": {"type": "array", "items": {"type": "object", "properties": {
            "item": {"type": "string"}, "amount": {"type": "number", "minimum": 0, "maximum": 1000},
            "unit": {"enum": ["g", "kg", "ml", "l", "cup", "tbsp", "tsp", "piece"]}}, "required": ["item", "amount"]}, "maxItems": 6},
        "steps": {"type": "array", "items": {"type": "string", "maxLength": 120}, "minItems": 1, "maxItems": 5}},
        "required": ["name", "ingredients", "steps"]}
    s["movie_review"] = {"type": "object", "properties": {
        "title": {"type": "string"}, "year": {"type": "integer", "minimum": 1888, "maximum": 2030},
        "rating": {"type": "number", "minimum": 0, "maximum": 10}, "sentiment": {"enum": ["positive", "negative", "mixed"]},
        "review": {"type": "string", "maxLength": 300}}, "required": ["title", "rating", "sentiment"], "additionalProperties": False}
    s["classification"] = {"type": "object", "properties": {
        "label": {"enum": ["spam", "ham"]}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["label", "confidence"], "additionalProperties": False}
    s["entities"] = {"type": "object", "properties": {"entities": {"type": "array", "items": {
        "type": "object", "properties": {"text": {"type": "string"}, "type": {"enum": ["PERSON", "ORG", "LOC", "DATE"]},
                                         "start": {"type": "integer", "minimum": 0}, "end": {"type": "integer", "minimum": 0}},
        "required": ["text", "type"], "additionalProperties": False}, "maxItems": 5}}, "required": ["entities"]}
    s["math_reasoning"] = {"type": "object", "properties": {
        "steps": {"type": "array", "items": {"type": "object", "properties": {
            "explanation": {"type": "string"}, "output": {"type": "string"}}, "required": ["explanation", "output"],
            "additionalProperties": False}, "maxItems": 3},
        "final_answer": {"type": "string"}}, "required": ["steps", "final_answer"], "additionalProperties": False}
    s["todo_list"] = {"type": "array", "items": {"type": "object", "properties": {
        "task": {"type": "string", "maxLength": 60}, "done": {"type": "boolean"}, "due": {"type": "string", "format": "date"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["task", "done"]}, "maxItems": 5}
    s["api_response"] = {"type": "object", "properties": {
        "ok": {"type": "boolean"}, "data": {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": {"type": "string"}}]},
        "error": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {
            "code": {"type": "integer", "minimum": 400, "maximum": 599}, "message": {"type": "string"}}, "required": ["code", "message"]}]}},
        "required": ["ok", "error"]}
    s["server_config"] = {"type": "object", "properties": {
        "host": {"type": "string", "format": "ipv4"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "tls": {"type": "boolean"}, "log_level": {"enum": ["debug", "info", "warning", "error"]},
        "workers": {"type": "integer", "minimum": 1, "maximum": 64},
        "routes": {"type": "array", "items": {"type": "object", "properties": {
            "path": {"type": "string", "pattern": r"^/[a-z0-9/_-]*$"}, "method": {"enum": ["GET", "POST"]}},
            "required": ["path", "method"]}, "maxItems": 4}},
        "required": ["host", "port"], "additionalProperties": False}
    s["github_issue"] = {"type": "object", "properties": {
        "title": {"type": "string", "minLength": 5, "maxLength": 100}, "body": {"type": "string"},
        "labels": {"type": "array", "items": {"enum": ["bug", "enhancement", "question", "docs"]}, "maxItems": 3},
        "assignee": {"type": ["string", "null"]}, "milestone": {"type": ["integer", "null"]}}, "required": ["title", "labels"]}
    s["log_entry"] = {"type": "object", "properties": {
        "ts": {"type": "string", "format": "date-time"}, "level": {"enum": ["DEBUG", "INFO", "WARN", "ERROR"]},
        "message": {"type": "string"}, "request_id": {"type": "string", "format": "uuid"},
        "latency_ms": {"type": "number", "minimum": 0, "maximum": 60000}}, "required": ["ts", "level", "message"]}
    s["geo_point"] = {"type": "object", "properties": {
        "lat": {"type": "number", "minimum": -90, "maximum": 90}, "lon": {"type": "number", "minimum": -180, "maximum": 180}},
        "required": ["lat", "lon"], "additionalProperties": False}
    s["geojson_line"] = {"type": "object", "properties": {
        "type": {"const": "LineString"}, "coordinates": {"type": "array", "items": {
            "type": "array", "prefixItems": [{"type": "number", "minimum": -180, "maximum": 180},
                                              {"type": "number", "minimum": -90, "maximum": 90}], "items": False, "minItems": 2},
            "minItems": 2, "maxItems": 4}}, "required": ["type", "coordinates"], "additionalProperties": False}
    s["deployment"] = {"type": "object", "properties": {
        "apiVersion": {"const": "apps/v1"}, "kind": {"const": "Deployment"},
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "pattern": r"^[a-z]+(-[a-z]+)*$"},
                     "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 20}}}, "required": ["name"]},
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 0, "maximum": 20},
                 "containers": {"type": "array", "items": {"type": "object", "properties": {
                     "name": {"type": "string"}, "image": {"type": "string"},
                     "ports": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 65535}, "maxItems": 3}},
                     "required": ["name", "image"]}, "minItems": 1, "maxItems": 2}}, "required": ["containers"]}},
        "required": ["apiVersion", "kind", "metadata", "spec"]}
    s["package_json"] = {"type": "object", "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9-]+$"}, "version": {"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
        "private": {"type": "boolean"}, "dependencies": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 12}},
        "scripts": {"type": "object", "additionalProperties": {"type": "string"}}}, "required": ["name", "version"]}
    s["tree"] = {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["value"], "additionalProperties": False}}, "$ref": "#/$defs/node"}
    s["linked_list"] = {"definitions": {"list": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {
        "head": {"type": "integer"}, "tail": {"$ref": "#/definitions/list"}}, "required": ["head", "tail"]}]}},
        "$ref": "#/definitions/list"}
    s["expression"] = {"$defs": {"expr": {"oneOf": [{"type": "integer"}, {"type": "object", "properties": {
        "op": {"enum": ["+", "-", "*", "/"]}, "args": {"type": "array", "items": {"$ref": "#/$defs/expr"}, "minItems": 2, "maxItems": 2}},
        "required": ["op", "args"], "additionalProperties": False}]}}, "$ref": "#/$defs/expr"}
    s["file_system"] = {"$defs": {"entry": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "file"}, "name": {"type": "string"}, "size": {"type": "integer", "minimum": 0}},
         "required": ["kind", "name"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "dir"}, "name": {"type": "string"},
                                          "entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}, "maxItems": 3}},
         "required": ["kind", "name", "entries"], "additionalProperties": False}]}}, "$ref": "#/$defs/entry"}
    s["comment_thread"] = {"type": "object", "properties": {
        "author": {"type": "string"}, "text": {"type": "string", "maxLength": 140}, "replies": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}},
        "required": ["author", "text"], "additionalProperties": False}
    s["menu"] = {"$defs": {"menu": {"type": "object", "properties": {"label": {"type": "string"},
        "action": {"type": "string", "pattern": r"^[a-z]+(\.[a-z]+)*$"}, "submenu": {"type": "array", "items": {"$ref": "#/$defs/menu"}, "maxItems": 3}},
        "required": ["label"], "additionalProperties": False}}, "type": "array", "items": {"$ref": "#/$defs/menu"}, "maxItems": 3}
    s["shape_union"] = {"type": "object", "properties": {"shape": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0, "maximum": 100}}, "required": ["kind", "r"]},
        {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "number", "minimum": 0, "maximum": 100},
                                          "h": {"type": "number", "minimum": 0, "maximum": 100}}, "required": ["kind", "w", "h"]}]}},
        "required": ["shape"]}
    s["allof_base"] = {"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
                       "allOf": [{"$ref": "#/$defs/base"}, {"type": "object", "properties": {"label": {"type": "string", "maxLength": 8}}}]}
    s["allof_bounds"] = {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 50}, {"minimum": 10}]}
    s["tuple_point3"] = {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}, {"type": "number"}], "items": False, "minItems": 3}
    s["tuple_with_rest"] = {"type": "array", "prefixItems": [{"type": "string", "format": "date"}, {"type": "integer"}],
                            "items": {"type": "boolean"}, "maxItems": 5}
    s["free_object"] = {"type": "object"}
    s["free_any"] = {}
    s["true_schema"] = True
    s["additional_typed"] = {"type": "object", "properties": {"id": {"type": "integer"}},
                             "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}, "required": ["id"]}
    s["matrix"] = {"type": "object", "properties": {"matrix": {"type": "array", "items": {"type": "array",
        "items": {"type": "number", "minimum": -1, "maximum": 1}, "minItems": 2, "maxItems": 2}, "minItems": 2, "maxItems": 2}},
        "required": ["matrix"]}
    s["unicode_enum"] = {"type": "object", "properties": {"city": {"enum": ["東京", "Zürich", "São Paulo", "Москва"]},
                         "emoji": {"type": "string", "pattern": "^[😀-🙏]{1,3}$"}}, "required": ["city"]}
    s["escapes_enum"] = {"type": "string", "enum": ["a\"quote", "back\\slash", "tab\there", "é€😀"]}
    s["const_object"] = {"const": {"version": 2, "tags": ["x", "y"]}}
    s["big_integers"] = {"type": "integer", "minimum": -100000000000, "maximum": 99999999999}
    s["function_call"] = {"type": "object", "properties": {
        "name": {"enum": ["get_weather", "get_time", "search"]},
        "arguments": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}},
        "required": ["name", "arguments"], "additionalProperties": False}
    s["parallel_calls"] = {"type": "array", "items": {"oneOf": [
        {"type": "object", "properties": {"name": {"const": "get_weather"}, "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}},
         "required": ["name", "parameters"], "additionalProperties": False},
        {"type": "object", "properties": {"name": {"const": "get_time"}, "parameters": {"type": "object",
            "properties": {"tz": {"type": "string", "pattern": r"^[A-Z][a-z]+/[A-Z][a-z_]+$"}}, "required": ["tz"], "additionalProperties": False}},
         "required": ["name", "parameters"], "additionalProperties": False}]}, "minItems": 1, "maxItems": 3}
    s["user_profile"] = {"type": "object", "properties": {
        "username": {"type": "string", "pattern": r"^[a-z0-9_]{3,16}$"}, "display_name": {"type": "string", "maxLength": 40},
        "birthday": {"type": "string", "format": "date"}, "website": {"type": "string", "format": "uri"},
        "interests": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 5},
        "settings": {"type": "object", "properties": {"theme": {"enum": ["light", "dark"]}, "notifications": {"type": "boolean"}},
                     "additionalProperties": False}}, "required": ["username"]}
    s["payment"] = {"type": "object", "properties": {
        "amount": {"type": "integer", "minimum": 1, "maximum": 1000000}, "currency": {"enum": ["usd", "eur"]},
        "method": {"oneOf": [
            {"type": "object", "properties": {"type": {"const": "card"}, "last4": {"type": "string", "pattern": r"^\d{4}$"}}, "required": ["type", "last4"]},
            {"type": "object", "properties": {"type": {"const": "iban"}, "iban": {"type": "string", "pattern": r"^[A-Z]{2}\d{2}[A-Z0-9]{4,10}$"}}, "required": ["type", "iban"]}]},
        "captured_at": {"type": ["string", "null"], "format": "date-time"}}, "required": ["amount", "currency", "method"]}
    s["survey"] = {"type": "object", "properties": {"answers": {"type": "array", "items": {"type": "object", "properties": {
        "question": {"type": "integer", "minimum": 1, "maximum": 20}, "choice": {"enum": ["A", "B", "C", "D"]},
        "comment": {"type": "string", "maxLength": 50}}, "required": ["question", "choice"], "additionalProperties": False},
        "minItems": 2, "maxItems": 4}, "nps": {"type": "integer", "minimum": 0, "maximum": 10}}, "required": ["answers", "nps"]}
    s["time_slot"] = {"type": "object", "properties": {"day": {"enum": ["Mon", "Tue", "Wed", "Thu", "Fri"]},
        "start": {"type": "string", "format": "time"}, "minutes": {"type": "integer", "minimum": 15, "maximum": 240}},
        "required": ["day", "start"], "additionalProperties": False}
    s["nested_deep"] = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {
        "c": {"type": "object", "properties": {"d": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3}}}}}}}}},
        "required": ["a"]}
    s["string_or_list"] = {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}]}
    s["scalar_types"] = {"type": ["number", "string", "boolean", "null"]}
    for name, t in [("string", "string"), ("integer", "integer"), ("number", "number"), ("boolean", "boolean"), ("null", "null")]:
        s["scalar_" + name] = {"type": t}
    return s


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests/grammar/data/json_schemas.jsonl")
    rows = [(name, schema) for name, schema in hand_written().items()]
    g = Gen(20261129)
    kinds = ["object"] * 5 + ["array"] * 2 + ["union", "recursive"]
    i = 0
    while len(rows) < 320:
        kind = g.pick(kinds)
        if kind == "object":
            schema = g.obj(0)
        elif kind == "array":
            schema = g.arr(0)
        elif kind == "union":
            schema = g.union(0)
        else:
            schema = g.recursive()
        rows.append((f"gen_{i:03d}_{kind}", schema))
        i += 1
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        for name, schema in rows:
            f.write(json.dumps({"id": name, "schema": schema}, ensure_ascii=False) + "\n")
    print(f"{len(rows)} schemas -> {out_path}")


if __name__ == "__main__":
    main()
