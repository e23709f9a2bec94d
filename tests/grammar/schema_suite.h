// The JSON Schema suite (tests/grammar/data/json_schemas.jsonl, written by
// scripts/gen_grammar_schemas.py): one {"id": ..., "schema": ...} object per line.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_paths.h"

namespace sgl::grammar::test {

struct SuiteSchema {
  std::string id;
  std::string text;  // the schema as JSON text, as a request would carry it
};

inline std::string schema_suite_path() {
  return (sgl::test::test_data_dir("grammar") / "json_schemas.jsonl").string();
}

inline std::vector<SuiteSchema> load_schema_suite(const std::string& path = schema_suite_path()) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<SuiteSchema> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto row = nlohmann::ordered_json::parse(line);
    out.push_back({row.at("id").get<std::string>(), row.at("schema").dump()});
  }
  return out;
}

}  // namespace sgl::grammar::test
